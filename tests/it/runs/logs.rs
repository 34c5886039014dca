//! `logs` without `-f`: a run's log printed from its file, asking Slurm only why there is none.

use serde_json::Value;

use super::fake::{Fake, says};

#[test]
fn logs_prints_the_latest_run_and_its_tail() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("old run\n"));
    fake.seed("resnet", "102", 2, Some("1\n2\n3\n4\n"));
    fake.run(["logs", "resnet"])
        .expect_stdout("1\n2\n3\n4\n")
        .run();
    fake.run(["logs", "resnet", "--tail", "2"])
        .expect_stdout("3\n4\n")
        .run();
    fake.run(["logs", "101"]).expect_stdout("old run\n").run();
    assert!(
        fake.calls("squeue").is_empty(),
        "printing a log asks Slurm nothing"
    );
}

#[test]
fn logs_of_a_pending_job_says_it_has_not_started() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.shim("squeue", &fake.line("101", "PENDING"));
    fake.run(["logs", "resnet"])
        .expect_status(1)
        .expect_stderr_contains("is PENDING (Resources): it has not started")
        .expect_stderr_contains("hint: `rayslurm logs -f 101`")
        .run();
}

/// `launch` makes the log, empty and the user's alone, before it submits the job: an empty log
/// of a job that has not started is no log yet; once the job runs, it is its log.
#[test]
fn an_empty_log_of_a_pending_job_is_no_log_yet() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some(""));
    fake.shim("squeue", &fake.line("101", "PENDING"));
    fake.run(["logs", "resnet"])
        .expect_status(1)
        .expect_stderr_contains("is PENDING (Resources): it has not started")
        .run();
    fake.shim("squeue", &fake.line("101", "RUNNING"));
    fake.run(["logs", "resnet"]).expect_stdout("").run();
}

/// Regression: a job cancelled while pending showed exit code 0 (Slurm's `ExitCode=0:0`), and
/// `logs` asked whether its log had been moved or deleted.
#[test]
fn a_job_cancelled_before_it_ran_has_no_exit_code_and_no_log() {
    let fake = Fake::new();
    fake.seed("early", "101", 1, None);
    let submitted = super::fake::squeue_time(fake.submitted("101"));
    fake.shim(
        "squeue",
        &format!("echo \"101|CANCELLED|None|0:00|2|{submitted}|\""),
    );
    fake.shim(
        "scontrol",
        &says("JobId=101 JobState=CANCELLED ExitCode=0:0 RunTime=00:00:00"),
    );
    fake.run(["status", "--json", "101"])
        .expect_json("/0/state", "CANCELLED")
        .expect_json("/0/exit_code", Value::Null)
        .expect_json("/0/message", "ended before it started")
        .run();
    let ran = fake.run(["status", "101"]).run();
    let row = ran.stdout.lines().nth(1).unwrap();
    assert!(row.contains("CANCELLED") && row.contains("  -  "), "{ran}");
    fake.run(["logs", "101"])
        .expect_status(1)
        .expect_stderr_contains(
            "job 101 (early) ended before it started (CANCELLED), so it wrote no log",
        )
        .expect_stderr_lacks("moved or deleted")
        .run();
}
