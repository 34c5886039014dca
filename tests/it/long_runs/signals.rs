//! `cancel RUN --signal SIG`: the signal reaches the batch step (the bootstrap passes it on to
//! the command) and the run goes on; a TERM is announced in a request file first.

use crate::runs::fake::{Fake, fails, says};

/// Run `train` (job 401) running, with its run directory, and an `scancel` that succeeds;
/// returns the run directory.
fn train_running(fake: &Fake) -> std::path::PathBuf {
    fake.seed("train", "401", 1, None);
    let run_dir = fake.logs.join("train_401.d");
    std::fs::create_dir_all(&run_dir).unwrap();
    fake.shim("squeue", &fake.line("401", "RUNNING"));
    fake.shim("scancel", "exit 0");
    run_dir
}

/// `cancel RUN --signal USR1`: the batch step alone gets it (the bootstrap passes it on), the
/// run is not cancelled, and a TERM is named first so that the bootstrap does not stop the run.
#[test]
fn cancel_with_a_signal_reaches_the_command_and_stops_nothing() {
    let fake = Fake::new();
    let run_dir = train_running(&fake);
    // scontrol says nothing of the attempt (no `Restarts`).
    fake.shim(
        "scontrol",
        &says("JobId=401 JobName=train JobState=RUNNING BatchFlag=1"),
    );
    fake.run(["cancel", "train", "--signal", "USR1"])
        .expect_status(0)
        .expect_stderr_contains("the run goes on")
        .run();
    fake.run(["cancel", "train", "--signal", "term"])
        .expect_status(0)
        .expect_stderr_contains("the run goes on")
        // For job 401 (scontrol did not say which attempt).
        .expect_file(run_dir.join("signal-request"), "TERM 401\n")
        .run();
    assert_eq!(
        fake.calls("scancel"),
        ["--batch --signal=USR1 401", "--batch --signal=TERM 401"]
    );
    // A pending job has no command to signal.
    fake.shim("squeue", &fake.line("401", "PENDING"));
    fake.run(["cancel", "train", "--signal", "USR1"])
        .expect_status(2)
        .expect_stderr_contains("cannot be signalled")
        .run();
    assert_eq!(fake.calls("scancel").len(), 2);
    fake.run(["cancel", "train", "--signal", "NOPE"])
        .expect_status(2)
        .run();
}

/// A regression test: a request left behind (by a failed `scancel --batch`, or for an earlier
/// attempt) made a later real SIGTERM reach the command alone. The request names the job and
/// the attempt (Slurm's `Restarts`), and is taken back when no signal was sent.
#[test]
fn a_signal_request_names_its_attempt_and_is_taken_back_when_scancel_fails() {
    let fake = Fake::new();
    let request = train_running(&fake).join("signal-request");
    fake.shim(
        "scontrol",
        &says("JobId=401 JobName=train JobState=RUNNING Requeue=1 Restarts=2 BatchFlag=1"),
    );
    fake.run(["cancel", "train", "--signal", "TERM"])
        .expect_status(0)
        .expect_file(&request, "TERM 401.2\n")
        .run();

    std::fs::remove_file(&request).unwrap();
    fake.shim(
        "scancel",
        &fails("scancel: error: Access/permission denied"),
    );
    fake.run(["cancel", "train", "--signal", "TERM"])
        .expect_status(1)
        .expect_stderr_contains("cannot signal job 401")
        // No signal was sent: no request stays.
        .expect_no_file(&request)
        .run();
}
