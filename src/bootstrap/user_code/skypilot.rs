//! SkyPilot's own task variables, so that a SkyPilot task's `setup` and `run` find what SkyPilot
//! gives them (docs/task-files.md, "SkyPilot's variables"): the task's ID, the cluster's
//! description and the user in both, and in `setup` the `SKYPILOT_SETUP_*` names of the node's
//! rank, the nodes' IPs and the node's GPUs. The rank names themselves (`SKYPILOT_NODE_RANK`,
//! ...) are in the rank environment ([`super::env`]).

use std::path::Path;

use crate::bootstrap::allocation::Allocation;
use crate::handoff::job_env;

/// The task's variables, read from the job's environment (`var`): `SKYPILOT_TASK_ID`
/// (`rayslurm-RUN_JOBID`: the same for every attempt of a requeued run, as SkyPilot keeps a
/// managed job's), `SKYPILOT_CLUSTER_INFO` (the run as a cluster: its name, `Slurm` as the
/// cloud, the Slurm cluster as the region and the partition as the zone) and `SKYPILOT_USER`.
pub(crate) fn task_env(
    alloc: &Allocation,
    run_dir: Option<&Path>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    // The run's directory is `NAME_MMDD-HHMMSS.d`; a step's own SLURM_JOB_NAME is the step's.
    let run = run_dir
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().trim_end_matches(".d").to_owned());
    let name = run
        .as_deref()
        .and_then(|r| r.rsplit_once('_'))
        .map(|(name, _)| name.to_owned())
        .or_else(|| var("SLURM_JOB_NAME"))
        .unwrap_or_else(|| "rayslurm".to_owned());
    let run = run.unwrap_or_else(|| name.clone());
    let info = serde_json::json!({
        "cluster_name": name,
        "cloud": "Slurm",
        "region": var("SLURM_CLUSTER_NAME").unwrap_or_default(),
        "zone": var("SLURM_JOB_PARTITION").unwrap_or_default(),
    });
    let user = var("USER")
        .filter(|u| !u.is_empty())
        .or_else(|| {
            nix::unistd::User::from_uid(nix::unistd::getuid())
                .ok()
                .flatten()
                .map(|u| u.name)
        })
        .unwrap_or_default();
    vec![
        (
            job_env::SKYPILOT_TASK_ID.to_owned(),
            format!("rayslurm-{run}_{}", alloc.job_id),
        ),
        (job_env::SKYPILOT_CLUSTER_INFO.to_owned(), info.to_string()),
        (job_env::SKYPILOT_USER.to_owned(), user),
    ]
}

/// What SkyPilot's `setup` sees beside the rank environment: the node's rank, the nodes' IPs
/// and the node's GPUs under their `SKYPILOT_SETUP_*` names (each only where its run name is
/// set: a Ray run's setup does not know the other nodes' IPs yet).
pub(crate) fn with_setup_names(env: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = env.to_vec();
    for (run_name, setup_name) in job_env::SKYPILOT_SETUP_NAMES {
        if let Some((_, v)) = env.iter().find(|(k, _)| k == run_name) {
            out.push(((*setup_name).to_owned(), v.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc() -> Allocation {
        Allocation {
            job_id: "42".into(),
            node: "n1".into(),
            nodes: vec!["n1".into(), "n2".into()],
            cpus_on_node: Some(2),
            gpus_on_node: 4,
            memory_on_node: None,
            restart_count: 1,
        }
    }

    #[test]
    fn the_task_id_and_cluster_info_are_skypilots() {
        let var = |k: &str| {
            Some(
                match k {
                    "SLURM_JOB_NAME" => "rayslurm-ranks",
                    "SLURM_CLUSTER_NAME" => "lab",
                    "SLURM_JOB_PARTITION" => "gpu",
                    "USER" => "alice",
                    _ => return None,
                }
                .to_owned(),
            )
        };
        let env = task_env(&alloc(), Some(Path::new("/s/train_1127-034500.d")), &var);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get("SKYPILOT_TASK_ID"), "rayslurm-train_1127-034500_42");
        let info: serde_json::Value = serde_json::from_str(&get("SKYPILOT_CLUSTER_INFO")).unwrap();
        assert_eq!(
            info,
            serde_json::json!({"cluster_name": "train", "cloud": "Slurm", "region": "lab", "zone": "gpu"})
        );
        assert_eq!(get("SKYPILOT_USER"), "alice");
        // Without a run directory, the job's name stands for the run.
        let env = task_env(&alloc(), None, &var);
        assert_eq!(env[0].1, "rayslurm-rayslurm-ranks_42");
    }

    #[test]
    fn setup_sees_the_setup_names_of_what_it_has() {
        let env: Vec<(String, String)> = [
            ("SKYPILOT_NODE_RANK", "1"),
            ("SKYPILOT_NUM_GPUS_PER_NODE", "4"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let out = with_setup_names(&env);
        let get = |k: &str| out.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("SKYPILOT_SETUP_NODE_RANK"), Some("1"));
        assert_eq!(get("SKYPILOT_SETUP_NUM_GPUS_PER_NODE"), Some("4"));
        // No IPs were known: none are made up.
        assert_eq!(get("SKYPILOT_SETUP_NODE_IPS"), None);
        assert_eq!(get("SKYPILOT_NODE_RANK"), Some("1"));
    }
}
