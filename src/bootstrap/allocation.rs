//! What Slurm gave this job, read from the environment of the batch script or job step.

use std::collections::HashMap;

use anyhow::{Context, Result};

use crate::slurm::env as slurm_env;
use crate::slurm::hostlist;

/// The allocation as seen from one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Allocation {
    pub(crate) job_id: String,
    /// This node's Slurm name.
    pub(crate) node: String,
    /// Every node of the job, in Slurm's order.
    pub(crate) nodes: Vec<String>,
    /// CPUs allocated on this node, if Slurm says.
    pub(crate) cpus_on_node: Option<u32>,
    /// GPUs this node really has for the job (see [`gpus_on_node`]).
    pub(crate) gpus_on_node: u32,
    /// Bytes of memory the job has on this node, where Slurm tracks memory (see
    /// [`memory_on_node`]).
    pub(crate) memory_on_node: Option<u64>,
    /// How many times Slurm has requeued the job before this attempt (0 on the first: Slurm
    /// leaves `SLURM_RESTART_COUNT` unset then).
    pub(crate) restart_count: u32,
}

impl Allocation {
    pub(crate) fn from_env(env: &HashMap<String, String>, requested_gpus: u32) -> Result<Self> {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        let job_id = get(slurm_env::SLURM_JOB_ID)
            .context("SLURM_JOB_ID is not set: `rayslurm bootstrap` runs inside a Slurm job (started by the script `rayslurm launch` writes)")?;
        let node = get(slurm_env::SLURMD_NODENAME)
            .or_else(|| {
                nix::unistd::gethostname()
                    .ok()
                    .map(|h| h.to_string_lossy().into_owned())
            })
            .context("cannot tell this node's name (SLURMD_NODENAME)")?;
        let list = get(slurm_env::SLURM_JOB_NODELIST).unwrap_or_else(|| node.clone());
        let nodes = hostlist::expand(&list)
            .with_context(|| format!("cannot read SLURM_JOB_NODELIST `{list}`"))?;
        let cpus_on_node = get(slurm_env::SLURM_CPUS_ON_NODE).and_then(|c| leading_number(&c));
        Ok(Self {
            job_id,
            node,
            nodes,
            cpus_on_node,
            gpus_on_node: gpus_on_node(env, requested_gpus),
            memory_on_node: memory_on_node(env, cpus_on_node),
            restart_count: get(slurm_env::SLURM_RESTART_COUNT)
                .and_then(|c| c.trim().parse().ok())
                .unwrap_or(0),
        })
    }

    /// Every node but this one, in order.
    pub(crate) fn others(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| **n != self.node)
            .cloned()
            .collect()
    }
}

/// The job's memory on this node in bytes: `SLURM_MEM_PER_NODE` (MB), else
/// `SLURM_MEM_PER_CPU` (MB) times the node's CPUs. `None` where the site does not track memory
/// (neither is set, or 0).
pub(crate) fn memory_on_node(env: &HashMap<String, String>, cpus: Option<u32>) -> Option<u64> {
    let megabytes = |k: &str| {
        env.get(k)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|mb| *mb > 0)
    };
    let mb = megabytes(slurm_env::SLURM_MEM_PER_NODE)
        .or_else(|| Some(megabytes(slurm_env::SLURM_MEM_PER_CPU)? * u64::from(cpus?)))?;
    Some(mb << 20)
}

/// `"4(x2)"` → 4, `"gpu:a100:2"` → 2, `"3"` → 3.
fn leading_number(text: &str) -> Option<u32> {
    let last = text.rsplit(':').next()?;
    let digits: String = last.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The GPUs this node has for the job, in order of trust: the devices actually visible
/// (`CUDA_VISIBLE_DEVICES`), Slurm's count for the node, Slurm's per-node or per-task request,
/// then what was asked at launch. Ray is always told a number, so it never takes GPUs the job
/// was not given. A whole node (`--exclusive`) comes with all its GPUs, of every type, in the
/// batch step, while a step sees those asked for: where GPUs were asked for, the count is at
/// most that, so that every node of the run says the same.
pub(crate) fn gpus_on_node(env: &HashMap<String, String>, requested: u32) -> u32 {
    let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let given = match get(slurm_env::CUDA_VISIBLE_DEVICES) {
        Some("NoDevFiles" | "-1") => return 0,
        Some(devices) => devices.split(',').filter(|d| !d.trim().is_empty()).count() as u32,
        None => match [
            slurm_env::SLURM_GPUS_ON_NODE,
            slurm_env::SLURM_GPUS_PER_NODE,
            slurm_env::SLURM_GPUS_PER_TASK,
        ]
        .iter()
        .find_map(|k| get(k).and_then(leading_number))
        {
            Some(n) => n,
            None => return requested,
        },
    };
    if requested > 0 {
        given.min(requested)
    } else {
        given
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_comes_from_the_allocation() {
        let env = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect()
        };
        let per_node = env(&[("SLURM_MEM_PER_NODE", "1500"), ("SLURM_MEM_PER_CPU", "9")]);
        assert_eq!(memory_on_node(&per_node, Some(2)), Some(1500 << 20));
        let per_cpu = env(&[("SLURM_MEM_PER_CPU", "1000")]);
        assert_eq!(memory_on_node(&per_cpu, Some(2)), Some(2000 << 20));
        assert_eq!(memory_on_node(&per_cpu, None), None);
        assert_eq!(memory_on_node(&env(&[]), Some(2)), None);
        assert_eq!(
            memory_on_node(&env(&[("SLURM_MEM_PER_NODE", "0")]), Some(2)),
            None
        );
    }

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn reads_the_allocation() {
        let a = Allocation::from_env(
            &env(&[
                ("SLURM_JOB_ID", "42"),
                ("SLURMD_NODENAME", "node1"),
                ("SLURM_JOB_NODELIST", "node[1-3]"),
                ("SLURM_CPUS_ON_NODE", "2"),
            ]),
            0,
        )
        .unwrap();
        assert_eq!(a.nodes, ["node1", "node2", "node3"]);
        assert_eq!(a.others(), ["node2", "node3"]);
        assert_eq!(a.cpus_on_node, Some(2));
    }

    #[test]
    fn outside_slurm_is_an_error() {
        assert!(Allocation::from_env(&env(&[]), 0).is_err());
    }

    #[test]
    fn gpu_count_prefers_what_is_visible() {
        assert_eq!(gpus_on_node(&env(&[]), 0), 0);
        assert_eq!(gpus_on_node(&env(&[]), 2), 2);
        assert_eq!(gpus_on_node(&env(&[("SLURM_GPUS_ON_NODE", "4")]), 0), 4);
        // A whole node's 8 GPUs, 2 asked for: 2, as on the nodes whose step sees 2.
        assert_eq!(
            gpus_on_node(&env(&[("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7")]), 2),
            2
        );
        assert_eq!(
            gpus_on_node(&env(&[("SLURM_GPUS_PER_NODE", "gpu:a100:3")]), 0),
            3
        );
        // SLURM_GPUS_PER_TASK is empty unless --gpus-per-task was used.
        assert_eq!(gpus_on_node(&env(&[("SLURM_GPUS_PER_TASK", "")]), 1), 1);
        assert_eq!(
            gpus_on_node(
                &env(&[("CUDA_VISIBLE_DEVICES", "0,1"), ("SLURM_GPUS_ON_NODE", "4")]),
                4
            ),
            2
        );
        assert_eq!(
            gpus_on_node(&env(&[("CUDA_VISIBLE_DEVICES", "NoDevFiles")]), 2),
            0
        );
    }
}
