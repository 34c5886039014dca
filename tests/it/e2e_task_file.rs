//! End-to-end tests of task files (`launch TASK.yaml`, docs/task-files.md) on the real test
//! cluster: the seeds' keys, with `setup` and `run` replaced by local commands (no internet and
//! no torch on the test nodes). A SkyPilot-style task runs setup then run on every node with
//! its envs, secrets, workdir and the `SKYPILOT_*` variables; `ray_job: true` runs `run` on the
//! head of a Ray cluster instead.

use std::time::Duration;

use crate::e2e_clusters::{rs, up};
use crate::harness::{Job, assert_clean, expand_nodes, lab, launch_in};

/// The rank-prefixed lines of the log that start with `what`.
fn rank_lines(job: &Job, what: &str) -> Vec<String> {
    job.log_text()
        .lines()
        .filter(|l| l.starts_with('[') && l.contains(&format!("] {what}")))
        .map(str::to_owned)
        .collect()
}

/// Seed 001's shape (`name`, `resources`, `num_nodes`, `setup`, `run` on every node), plus
/// `envs`, `secrets` and `workdir`.
const PER_NODE_TASK: &str = r#"name: minGPT-ddp-local
resources:
  cpus: 1
num_nodes: 2
workdir: code
envs:
  LOGLEVEL: INFO
  STEPS: 3
secrets:
  TOKEN: not-so-secret
setup: |
  echo "$SKYPILOT_NODE_RANK" > /tmp/rstest-task-setup-$SLURM_JOB_ID
run: |
  test -f /tmp/rstest-task-setup-$SLURM_JOB_ID && rm -f /tmp/rstest-task-setup-$SLURM_JOB_ID
  marker=$?
  MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)
  echo "task rank=$SKYPILOT_NODE_RANK nodes=$SKYPILOT_NUM_NODES master=$MASTER_ADDR log=$LOGLEVEL steps=$STEPS token=$TOKEN here=$(cat here.txt) marker=$marker"
"#;

#[test]
fn e2e_task_file_runs_setup_and_run_on_every_node() {
    let Some((lab, _turn)) = lab("e2e_task_file_runs_setup_and_run_on_every_node") else {
        return;
    };
    let dir = lab.workdir("taskfile");
    std::fs::create_dir_all(dir.join("code")).unwrap();
    std::fs::write(dir.join("code/here.txt"), "in-workdir").unwrap();
    std::fs::write(dir.join("task.yaml"), PER_NODE_TASK).unwrap();
    // `--per-node` again on the command line only keeps the harness from adding a Ray option.
    let job = launch_in(lab, &dir, "taskfile", &["task.yaml", "--per-node"]);
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    assert_eq!(nodes.len(), 2, "{log}");
    let master = lab.ip_of(&nodes[0]);
    let lines = rank_lines(&job, "task ");
    assert_eq!(lines.len(), 2, "{log}");
    for (k, node) in nodes.iter().enumerate() {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("[{k} {node}] ")))
            .unwrap_or_else(|| panic!("rank {k} on {node}:\n{log}"));
        for part in [
            format!("rank={k} "),
            "nodes=2 ".to_owned(),
            format!("master={master} "),
            "log=INFO steps=3 token=not-so-secret".to_owned(),
            "here=in-workdir".to_owned(),
            "marker=0".to_owned(),
        ] {
            assert!(line.contains(&part), "{part} in {line}");
        }
    }
    assert_clean(&job);
}

/// `ray_job: true`: `run` on the head of a Ray cluster of `num_nodes` nodes, with `envs`.
const RAY_TASK: &str = r#"num_nodes: 2
envs:
  GREETING: hello-ray
run: |
  python -c 'import os, ray; ray.init(); print("raytask", os.environ["GREETING"], len([n for n in ray.nodes() if n["Alive"]]), int(ray.cluster_resources()["CPU"]))'
rayslurm:
  ray_job: true
  object_store_memory: 100000000
"#;

#[test]
fn e2e_task_file_ray_job_runs_on_the_head_of_a_ray_cluster() {
    let Some((lab, _turn)) = lab("e2e_task_file_ray_job_runs_on_the_head_of_a_ray_cluster") else {
        return;
    };
    let dir = lab.workdir("taskray");
    std::fs::write(dir.join("ray_task.yaml"), RAY_TASK).unwrap();
    let job = launch_in(lab, &dir, "taskray", &["ray_task.yaml"]);
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let line = log
        .lines()
        .find(|l| l.contains("raytask "))
        .unwrap_or_else(|| panic!("{log}"));
    // Both nodes joined, each with its 2 CPUs; one command, not one a node.
    assert!(line.ends_with("raytask hello-ray 2 4"), "{line}");
    assert_eq!(log.matches("raytask hello-ray").count(), 1, "{log}");
    assert_clean(&job);
}

/// Seed 003's `job.yaml` shape onto a persistent cluster: `num_nodes: 2` with a GPU each (Ray is
/// told each node has one, as the lab has none), `envs` and `setup`.
const CLUSTER_JOB: &str = r#"num_nodes: 2
resources:
  accelerators: H100:1
envs:
  PHASE: train
setup: |
  echo "setup on $SKYPILOT_NODE_RANK"
run: |
  echo "job rank=$SKYPILOT_NODE_RANK nodes=$SKYPILOT_NUM_NODES phase=$PHASE cuda=$CUDA_VISIBLE_DEVICES"
"#;

#[test]
fn e2e_task_file_exec_runs_a_multi_node_job_on_a_cluster() {
    let Some((lab, _turn)) = lab("e2e_task_file_exec_runs_a_multi_node_job_on_a_cluster") else {
        return;
    };
    let dir = lab.workdir("taskexec");
    let name = format!("taskexec{}", std::process::id());
    let cluster = up(lab, &dir, &name, &["--ray-args=--num-gpus=1"]);
    std::fs::write(dir.join("job.yaml"), CLUSTER_JOB).unwrap();
    let (code, stdout, stderr) = rs(&dir, &["exec", &name, "job.yaml"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for r in 0..2 {
        let mine: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("[{r} ")))
            .collect();
        assert!(
            mine.iter().any(|l| l.ends_with(&format!("setup on {r}"))),
            "{stdout}"
        );
        assert!(
            mine.iter()
                .any(|l| l.contains(&format!("job rank={r} nodes=2 phase=train cuda=0"))),
            "{stdout}"
        );
    }
    let (code, _, stderr) = rs(&dir, &["down", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(60));
    assert_clean(&cluster);
}
