//! Job ids Slurm has given to newer jobs (a rebuilt cluster starts again at 1; real clusters
//! wrap around): a run is matched to squeue's and sacct's lines by its submit time (with some
//! slack for the controller's clock) or its script, and a newer job is never taken for it.

use serde_json::Value;

use super::fake::{Fake, line_at, says, squeue_time};
use super::status::{NO_FINAL_STATE, status_twice};

#[test]
fn status_of_a_run_whose_job_id_was_reused_is_not_the_new_jobs() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("bert", "102", 2, None);
    fake.final_state("bert", "102", 4, "failed");
    let squeue = [
        line_at("101", "RUNNING", &fake.reused("101", 3)),
        line_at("102", "COMPLETED", &fake.reused("102", 3)),
    ];
    fake.shim("squeue", &squeue.join("\n"));
    fake.run(["status", "--json"])
        .expect_status(0)
        .expect_json("/0/job_id", "102")
        // The run's own final state, not the new job's COMPLETED.
        .expect_json("/0/state", "FAILED")
        .expect_json("/0/exit_code", 4)
        .expect_json("/0/source", "final-state")
        .expect_json("/1/job_id", "101")
        .expect_json("/1/state", "ENDED")
        .expect_json("/1/nodelist", Value::Null)
        .expect_stdout_lacks("RUNNING")
        .run();
    // scontrol and sacct would describe the new job too.
    assert!(fake.calls("scontrol").is_empty());
    assert!(fake.calls("sacct").is_empty());
}

#[test]
fn status_ignores_what_sacct_says_of_a_newer_job_with_the_id() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("resnet", "102", 2, None);
    // slurmctld has forgotten both ids; accounting knows the newest job that had each.
    fake.shim("squeue", "exit 0");
    let own = squeue_time(fake.submitted("102"));
    fake.shim(
        "sacct",
        &format!(
            "echo '101|COMPLETED|0:0|9|{}'\necho '102|FAILED|3:0|7|{own}'",
            fake.reused("101", 3)
        ),
    );
    fake.run(["status", "--json"])
        .expect_status(0)
        // sacct's line for the run's own job.
        .expect_json("/0/state", "FAILED")
        .expect_json("/0/exit_code", 3)
        .expect_json("/1/state", "ENDED")
        .expect_json("/1/exit_code", Value::Null)
        .run();
}

/// Checks `status --json`'s row of a reused job id without a final state.
fn check_ended_row(stdout: &str, from: &str) {
    let rows: Vec<Value> = serde_json::from_str(stdout).unwrap();
    let row = &rows[0];
    assert_eq!(row["state"], "ENDED", "{from}: {row}");
    assert_eq!(row["exit_code"], Value::Null, "{from}: {row}");
    assert_eq!(row["nodelist"], Value::Null, "{from}: {row}");
    assert_eq!(row["message"], NO_FINAL_STATE, "{from}: {row}");
}

/// Checks `status`'s table of a reused job id without a final state.
fn check_ended_table(table: &str, from: &str) {
    assert!(
        table.contains(&format!("\njob 101: {NO_FINAL_STATE}")),
        "{from}: {table}"
    );
    assert!(!table.contains("RUNNING"), "{from}: {table}");
}

/// Regression: a run whose job id Slurm had given to a newer job, and whose bootstrap wrote no
/// final state, was shown `ENDED` without saying that nothing told how it ended.
#[test]
fn status_of_a_reused_job_id_without_a_final_state_says_it_ended_without_one() {
    let fake = Fake::new();
    // It ran long ago: its log is there.
    fake.seed("resnet", "101", 1, Some("ran\n"));
    fake.shim("squeue", &line_at("101", "RUNNING", &fake.reused("101", 3)));
    let [rows, table] = status_twice(&fake, &["status", "--json"], &["status"]);
    check_ended_row(&rows, "asking Slurm");
    check_ended_table(&table, "from the record");
    // And the table when it is the one that asks Slurm.
    std::fs::remove_dir_all(fake.state.join("runs")).unwrap();
    fake.seed("resnet", "101", 1, Some("ran\n"));
    let [table, rows] = status_twice(&fake, &["status"], &["status", "--json"]);
    check_ended_table(&table, "asking Slurm");
    check_ended_row(&rows, "from the record");
    // scontrol and sacct would describe the new job.
    assert!(fake.calls("scontrol").is_empty());
    assert!(fake.calls("sacct").is_empty());
}

#[test]
fn cancel_of_a_run_whose_job_id_was_reused_leaves_the_new_job_alone() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("bert", "102", 2, None);
    fake.final_state("bert", "102", 0, "completed");
    let squeue = [
        line_at("101", "RUNNING", &fake.reused("101", 3)),
        line_at("102", "PENDING", &fake.reused("102", 40)),
    ];
    fake.shim("squeue", &squeue.join("\n"));
    fake.shim("scancel", "exit 0");
    fake.run(["cancel", "resnet"])
        .expect_status(0)
        // Nothing was cancelled.
        .expect_stdout("")
        .expect_stderr_contains("job 101 (resnet) already ended (ENDED); nothing to cancel")
        .expect_stderr_contains("Slurm has given job id 101 to a newer job, which was left alone")
        .run();
    assert!(
        fake.calls("scancel").is_empty(),
        "{:?}",
        fake.calls("scancel")
    );
    fake.run(["cancel", "bert"])
        .expect_status(0)
        // The run's final state says how it ended.
        .expect_stderr_contains("job 102 (bert) already ended (COMPLETED)")
        .run();
    assert!(
        fake.calls("scancel").is_empty(),
        "{:?}",
        fake.calls("scancel")
    );
}

#[test]
fn a_submit_time_within_the_slack_is_the_runs_job() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    // The controller's clock is half a minute behind the login node's.
    let submitted = squeue_time(fake.submitted("101") - chrono::TimeDelta::seconds(30));
    fake.scancel_stops(
        "",
        &line_at("101", "RUNNING", &submitted),
        &line_at("101", "CANCELLED", &submitted),
    );
    fake.shim(
        "scontrol",
        &says("JobId=101 JobState=CANCELLED ExitCode=0:15 RunTime=00:00:07"),
    );
    fake.run(["status", "--json"])
        .expect_status(0)
        .expect_json("/0/state", "RUNNING")
        .expect_json("/0/nodelist", "node[1-2]")
        .run();
    fake.run(["cancel", "resnet"])
        .expect_status(0)
        .expect_stdout("101\n")
        .expect_stderr_contains("cancelled job 101 (resnet): it is CANCELLED")
        .run();
    assert_eq!(fake.calls("scancel"), ["101"]);
}

/// Slurm gives a requeued job a new submit time but keeps its script (seen with `scontrol
/// requeue` on the lab cluster): it is still the run's job.
#[test]
fn a_requeued_job_is_still_the_runs_job() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    let script = fake.logs.join("resnet_101.sh");
    let requeued = fake.reused("101", 1);
    let pending_with =
        |script: &str| format!("echo \"101|PENDING|BeginTime|0:00|2|{requeued}||{script}\"");
    fake.shim("squeue", &pending_with(&script.display().to_string()));
    fake.run(["status", "--json"])
        .expect_status(0)
        .expect_json("/0/state", "PENDING")
        .run();
    // Another script with that submit time is another job.
    fake.shim("squeue", &pending_with("/elsewhere/other.sh"));
    fake.run(["status", "--json"])
        .expect_status(0)
        .expect_json("/0/state", "ENDED")
        .run();
}

#[test]
fn follow_of_a_run_whose_job_id_was_reused_does_not_follow_the_new_job() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("ours\n"));
    let other = fake.reused("101", 3);
    fake.shim_in_turn(
        "squeue",
        &[
            &line_at("101", "RUNNING", &other),
            &line_at("101", "COMPLETED", &other),
        ],
    );
    // No accounting of the run's own job.
    fake.shim("sacct", "exit 0");
    fake.run(["logs", "-f", "resnet"])
        .expect_status(1)
        .expect_stdout("ours\n")
        .expect_stderr_contains("job 101 (resnet) ENDED, exit code unknown")
        .expect_stderr_lacks("RUNNING")
        .run();
    assert_eq!(fake.calls("squeue").len(), 1);
}
