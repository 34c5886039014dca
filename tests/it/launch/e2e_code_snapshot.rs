//! End-to-end tests of `--snapshot` on the real test cluster: every node works in its own copy
//! of the workdir (work that would collide in one shared directory succeeds on each), a queued
//! run does not see an edit made after its launch, a requeued attempt runs from the same
//! snapshot, and no copy is left on a node; a queued `exec` job on a cluster runs its code as
//! it was when it was submitted.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::clusters::lab_cluster::{exec_detached, rs, status_of, up_nodes, wait_queue};
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
    let Some((lab, _turn)) = lab() else {
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
    let Some((lab, _turn)) = lab() else {
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
    let Some((lab, _turn)) = lab() else {
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

/// A command that waits for the file `go` (on the shared filesystem), then prints `what`.
fn after(go: &Path, what: &str) -> String {
    format!(
        "while [ ! -e '{}' ]; do sleep 0.2; done; echo \"{what}\"",
        go.display()
    )
}

#[test]
fn an_exec_job_runs_the_code_as_it_was_at_submission() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("execsnap");
    let name = format!("execsnap{}", std::process::id());
    let cluster = up_nodes(lab, &dir, &name, "1", &[]);
    let jobs = cluster.log.with_extension("d").join("jobs");
    let proj = dir.join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(proj.join("code.txt"), "v1\n").unwrap();
    let flag = exec_detached(
        &dir,
        &name,
        &[
            "--snapshot",
            "--workdir",
            "proj",
            "--command",
            &after(&dir.join("go1"), "flag code=$(cat code.txt) pwd=$PWD"),
        ],
    );
    std::fs::write(proj.join("code.txt"), "v2\n").unwrap();
    std::fs::write(
        dir.join("task.yaml"),
        format!(
            "workdir: proj\nrun: |\n  {}\n",
            after(&dir.join("go2"), "task code=$(cat code.txt)")
        ),
    )
    .unwrap();
    let task = exec_detached(&dir, &name, &["task.yaml"]);
    std::fs::write(proj.join("code.txt"), "v3\n").unwrap();
    std::fs::write(dir.join("go1"), "").unwrap();
    std::fs::write(dir.join("go2"), "").unwrap();
    wait_queue(&dir, &name, Duration::from_secs(120), |s| {
        [flag, task]
            .iter()
            .all(|id| status_of(s, *id) == "SUCCEEDED")
    });
    let log = |id: u64| std::fs::read_to_string(jobs.join(format!("{id}.log"))).unwrap();
    let copy = jobs.join(format!("{flag}.snapshot"));
    assert!(
        log(flag).contains(&format!("flag code=v1 pwd={}", copy.display())),
        "{}",
        log(flag)
    );
    assert!(log(task).contains("task code=v2"), "{}", log(task));
    let (code, stdout, stderr) = rs(&dir, &["queue", &name, "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(&format!("{}", copy.display())), "{stdout}");
    let (code, _, stderr) = rs(&dir, &["down", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(60));
    assert_clean(&cluster);
}
