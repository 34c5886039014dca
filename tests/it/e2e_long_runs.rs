//! End-to-end tests of long runs on the real test cluster: the time limit's warning, a
//! checkpoint in `RAYSLURM_RUN_DIR`, requeue and resume (by rayslurm at the time limit, by Slurm
//! on `scontrol requeue`), runs that must never be requeued, `cancel --signal`, and chains
//! (`--after`). The program is `examples/resumable_counter.py`.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::e2e_bootstrap::{Job, assert_clean, copy_example, launch_in, node_tmp_entries};
use crate::harness::{lab, rayslurm, scontrol_job, text, wait_within};

const COUNTER: &str = "resumable_counter.py";

fn status_row(job: &Job) -> serde_json::Value {
    let out = rayslurm(["status", "--json", &job.id]).output();
    let rows: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out).1));
    rows[0].clone()
}

/// The step an attempt's first line says it started at (`attempt N: starting at step S`).
fn started_at_step(log: &str, attempt: u32) -> Option<u32> {
    let prefix = format!("attempt {attempt}: starting at step ");
    log.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|s| s.parse().ok())
}

fn counter(steps: u32) -> String {
    format!("python {COUNTER} {steps}")
}

#[test]
fn the_time_limit_warns_the_command_which_checkpoints_and_the_requeued_run_resumes() {
    let Some((lab, _turn)) = lab(
        "the_time_limit_warns_the_command_which_checkpoints_and_the_requeued_run_resumes",
    ) else {
        return;
    };
    let dir = lab.workdir("timelimit");
    copy_example(&dir, COUNTER);
    // 3 minutes with the warning 60 s before: it comes 60 to 120 s in (Slurm may send it up to
    // a minute early), so 125 one-second steps never fit in the first attempt.
    let mut follow = rayslurm([
        "launch",
        "--exp-name",
        "timelimit",
        "--load-env",
        &lab.load_env(),
        "--object-store-memory",
        "100000000",
        "--time",
        "3",
        "--stop-grace",
        "60",
        "--requeue",
        "--follow",
        "--json",
        "--command",
        &counter(125),
    ])
    .cwd(&dir)
    .command();
    let tmp_before = node_tmp_entries();
    let child = follow
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_within(child, Duration::from_secs(900));
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "--follow's exit\n{stdout}\n{stderr}");
    // --follow showed both attempts, the first one's checkpoint and the second's end.
    assert!(stdout.contains("attempt 1: starting at step 0"), "{stdout}");
    assert!(stdout.contains("stopping: checkpoint at step"), "{stdout}");
    assert!(stdout.contains("======== attempt 2 of job"), "{stdout}");
    let resumed = started_at_step(&stdout, 2).unwrap_or_else(|| panic!("{stdout}"));
    assert!(resumed > 0, "attempt 2 resumed from the checkpoint: {stdout}");
    assert!(stdout.contains("done at step 125"), "{stdout}");
    assert!(stdout.contains("the time limit is near"), "{stdout}");
    // The first line is launch's JSON; the log follows.
    let first = stdout.lines().next().unwrap_or_default();
    let job = Job::launched(first.as_bytes(), dir.clone(), tmp_before);
    let row = status_row(&job);
    assert_eq!(row["attempts"], 2, "{row}");
    assert_eq!(row["exit_code"], 0, "{row}");
    assert_eq!(row["state"], "COMPLETED", "{row}");
    let state_file = row["state_file"].as_str().unwrap();
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state_file).unwrap()).unwrap();
    assert_eq!(state["attempts"][0]["ending"], "time-limit", "{state}");
    assert_eq!(state["attempts"][0]["requeued"], true, "{state}");
    assert_eq!(state["attempts"][1]["ending"], "completed", "{state}");
    assert_eq!(scontrol_job(&job.id)["Restarts"], "1");
    assert_clean(&job);
}
