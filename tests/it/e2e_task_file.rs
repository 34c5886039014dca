//! End-to-end tests of task files (`launch TASK.yaml`, docs/task-files.md) on the real test
//! cluster: the seeds' keys, with `setup` and `run` replaced by local commands (no internet and
//! no torch on the test nodes). A SkyPilot-style task runs setup then run on every node with
//! its envs, secrets, workdir and the `SKYPILOT_*` variables; `ray_job: true` runs `run` on the
//! head of a Ray cluster instead.

use std::time::Duration;

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
