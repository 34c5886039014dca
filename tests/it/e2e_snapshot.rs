//! End-to-end tests of `--snapshot` on the real test cluster: every node works in its own copy
//! of the workdir (work that would collide in one shared directory succeeds on each), a queued
//! run does not see an edit made after its launch, a requeued attempt runs from the same
//! snapshot, and no copy is left on a node.

use std::process::Command;
use std::time::Duration;

use crate::harness::{assert_clean, expand_nodes, lab, launch_in};

/// The lines of the log that hold `what`.
fn lines_with(log: &str, what: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains(what))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_node_sets_up_in_its_own_copy_of_the_workdir() {
    let Some((lab, _turn)) = lab("every_node_sets_up_in_its_own_copy_of_the_workdir") else {
        return;
    };
    let dir = lab.workdir("snapnodes");
    std::fs::write(dir.join("code.txt"), "v1\n").unwrap();
    // `mkdir x` fails on the second node if both work in one shared directory.
    let job = launch_in(
        lab,
        &dir,
        "snapnodes",
        &[
            "--per-node",
            "-n",
            "2",
            "--tasks-per-node",
            "2",
            "--snapshot",
            "--setup",
            "mkdir x && touch x/f",
            "--command",
            "test -f x/f && echo \"in-copy code=$(cat code.txt) pwd=$PWD\"",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let lines = lines_with(&log, "in-copy code=v1 pwd=/tmp/rs");
    assert_eq!(lines.len(), 4, "every rank, in its node's copy: {log}");
    for node in expand_nodes(&info["NodeList"]) {
        assert!(
            log.contains(&format!("workdir on {node}: /tmp/rs")),
            "{log}"
        );
    }
    assert!(!dir.join("x").exists(), "setup ran in the shared workdir");
    assert_clean(&job);
}

#[test]
fn a_ray_run_and_its_setup_work_in_the_copy() {
    let Some((lab, _turn)) = lab("a_ray_run_and_its_setup_work_in_the_copy") else {
        return;
    };
    let dir = lab.workdir("snapray");
    std::fs::write(dir.join("code.txt"), "v1\n").unwrap();
    let job = launch_in(
        lab,
        &dir,
        "snapray",
        &[
            "-n",
            "2",
            // Whole nodes are not what this tests: it need not wait for two free ones.
            "--no-exclusive",
            "--cpus-per-task",
            "1",
            "--snapshot",
            "--setup",
            "mkdir venv && echo ok > venv/ready",
            "--command",
            "echo \"ray-in-copy code=$(cat code.txt) venv=$(cat venv/ready) pwd=$PWD\"",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(
        log.contains("ray-in-copy code=v1 venv=ok pwd=/tmp/rs"),
        "{log}"
    );
    assert!(
        !dir.join("venv").exists(),
        "setup ran in the shared workdir"
    );
    assert_clean(&job);
}

#[test]
fn an_edit_after_the_launch_reaches_neither_the_queued_run_nor_its_requeued_attempt() {
    let Some((lab, _turn)) =
        lab("an_edit_after_the_launch_reaches_neither_the_queued_run_nor_its_requeued_attempt")
    else {
        return;
    };
    let dir = lab.workdir("snapqueued");
    std::fs::write(dir.join("code.txt"), "v1\n").unwrap();
    // Held in the queue until the edit below is made: it comes before the run starts.
    let cmd = "echo \"attempt $RAYSLURM_RESTART_COUNT code=$(cat code.txt)\"; sleep 120";
    let job = launch_in(
        lab,
        &dir,
        "snapqueued",
        &[
            "--no-ray",
            "--requeue",
            "--snapshot",
            "--sbatch-arg=--hold",
            "--command",
            cmd,
        ],
    );
    std::fs::write(dir.join("code.txt"), "v2\n").unwrap();
    let released = Command::new("scontrol")
        .args(["release", &job.id])
        .output()
        .unwrap();
    assert!(released.status.success(), "{released:?}");
    job.wait_for_log("attempt 0 code=", Duration::from_secs(300));
    std::fs::write(dir.join("code.txt"), "v3\n").unwrap();
    // What preemption with PreemptMode=REQUEUE does.
    let out = Command::new("scontrol")
        .args(["requeue", &job.id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    job.wait_for_log("attempt 1 code=", Duration::from_secs(300));
    job.scancel();
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert!(log.contains("attempt 0 code=v1"), "{log}");
    assert!(log.contains("attempt 1 code=v1"), "{info:?}\n{log}");
    assert_clean(&job);
}
