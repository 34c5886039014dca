//! `cancel`: scancel sent only for the run's own live job, the stop confirmed by squeue, and
//! the end kept in the run's record.

use super::fake::{CONTROLLER_DOWN, Fake, INVALID_JOB_ID, fails, says};

#[test]
fn cancel_confirms_the_job_stopped_and_status_remembers() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("resnet", "102", 2, None);
    fake.scancel_stops(
        "sleep 0.3",
        &fake.line("102", "RUNNING"),
        &fake.line("102", "CANCELLED"),
    );
    fake.shim(
        "scontrol",
        &says("JobId=102 JobState=CANCELLED ExitCode=0:15 RunTime=00:00:07"),
    );
    fake.run(["cancel", "resnet"])
        .expect_status(0)
        // The latest run of the experiment.
        .expect_stdout("102\n")
        .expect_stderr_contains("cancelled job 102 (resnet): it is CANCELLED")
        .run();
    assert_eq!(fake.calls("scancel"), ["102"]);
    // Slurm forgets the job; the record still knows.
    fake.shim("squeue", "exit 0");
    fake.run(["status", "--json", "102"])
        .expect_json("/0/state", "CANCELLED")
        .expect_json("/0/exit_code", 143)
        .run();
    // Cancelling again is nothing to do.
    fake.run(["cancel", "102"])
        .expect_status(0)
        .expect_stderr_contains("already ended (CANCELLED)")
        .run();
    assert_eq!(fake.calls("scancel").len(), 1);
}

#[test]
fn cancel_of_a_job_that_already_ended() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.final_state("resnet", "101", 0, "completed");
    fake.shim(
        "scancel",
        &fails("scancel: error: Kill job error on job id 101: Invalid job id specified"),
    );
    fake.shim("squeue", INVALID_JOB_ID);
    fake.run(["cancel", "resnet"])
        .expect_status(0)
        .expect_stdout("")
        .expect_stderr_contains("job 101 (resnet) already ended (COMPLETED)")
        .run();
}

#[test]
fn scancel_refusing_is_a_failure() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.shim(
        "scancel",
        &fails("scancel: error: Kill job error on job id 101: Access/permission denied"),
    );
    fake.shim("squeue", &fake.line("101", "RUNNING"));
    fake.run(["cancel", "resnet"])
        .expect_status(1)
        .expect_stderr_contains("error: cannot cancel job 101")
        .expect_stderr_contains("Access/permission denied")
        .run();
}

#[test]
fn cancel_sends_no_scancel_while_squeue_cannot_say_whose_the_job_id_is() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.shim("squeue", CONTROLLER_DOWN);
    fake.shim("scancel", "exit 0");
    fake.run(["cancel", "resnet"])
        .expect_status(1)
        .expect_stderr_contains(
            "error: cannot tell whether job 101 is still this run's job, so it was not cancelled",
        )
        .expect_stderr_contains("Unable to contact slurm controller")
        .expect_stderr_contains("hint: try again once squeue answers")
        .expect_stderr_count("trying again in", 3)
        .run();
    assert!(fake.calls("scancel").is_empty());
}

/// Regression: for an array job, squeue has no line under the job's own id, and `cancel`
/// reported the job ended (`ENDED`) right after `scancel` without seeing it stop.
#[test]
fn cancel_of_an_array_job_waits_until_slurm_shows_it_stopped() {
    let fake = Fake::new();
    fake.seed("sweep", "101", 1, None);
    let cancelled = fake.shims.join("cancelled");
    // Slurm shows the elements RUNNING for a while after scancel, as it does when the
    // command takes a moment to stop: for the first two looks after it (counted, not timed: a
    // loaded machine made a timed fake give too few looks).
    let elements = |state: &str| {
        format!(
            "{}; {}",
            fake.line("101", state).replace("\"101|", "\"101_1|"),
            fake.line("101", state).replace("\"101|", "\"101_2|")
        )
    };
    fake.shim(
        "squeue",
        &format!(
            "if [ -e {c} ]; then n=$(cat {c}.looks 2>/dev/null || echo 0); echo $((n + 1)) > {c}.looks; fi; if [ \"${{n:-0}}\" -ge 2 ]; then {}; else {}; fi",
            elements("CANCELLED"),
            elements("RUNNING"),
            c = cancelled.display()
        ),
    );
    fake.shim("scancel", &format!("touch {}", cancelled.display()));
    fake.shim(
        "scontrol",
        &says("JobId=101 ArrayJobId=101 ArrayTaskId=1 JobState=CANCELLED ExitCode=0:15 RunTime=00:00:07"),
    );
    fake.run(["cancel", "sweep"])
        .expect_status(0)
        .expect_stdout("101\n")
        .expect_stderr_contains("cancelled job 101 (sweep): it is CANCELLED")
        .run();
    assert_eq!(fake.calls("scancel"), ["101"]);
    assert!(
        fake.calls("squeue").len() >= 3,
        "it watched the job until it stopped: {:?}",
        fake.calls("squeue")
    );
}
