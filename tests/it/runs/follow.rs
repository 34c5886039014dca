//! `logs -f` and `launch --follow`: the log streamed while squeue is asked every 2 s, the end
//! and exit code taken from the final state or scontrol, and Ctrl-C.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::fake::{
    CONTROLLER_DOWN, Fake, INVALID_JOB_ID, NOW, launch, line_at, says, squeue_time,
    write_final_state,
};
use crate::harness::{Ran, Run};

#[test]
fn follow_exits_with_the_jobs_code_from_scontrol() {
    let fake = Fake::new();
    let log = fake.seed("resnet", "101", 1, None);
    // The job's log appears on the second look, and the job fails on the third.
    let appears = format!(
        "printf 'hello\\nworld\\n' > {}; {}",
        log.display(),
        fake.line("101", "RUNNING")
    );
    fake.shim_in_turn(
        "squeue",
        &[
            &fake.line("101", "PENDING"),
            &appears,
            &fake.line("101", "FAILED"),
        ],
    );
    fake.shim("scontrol", &says("JobId=101 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 RunTime=00:00:07 NodeList=node[1-2]"));
    let start = Instant::now();
    fake.run(["logs", "-f", "resnet"])
        .expect_status(3)
        .expect_stdout("hello\nworld\n")
        .expect_stderr_contains("job 101 (resnet) is PENDING (Resources)")
        .expect_stderr_contains("job 101 (resnet) is RUNNING on node[1-2]")
        .expect_stderr_contains("job 101 (resnet) FAILED, exit code 3")
        .run();
    assert_eq!(fake.calls("squeue").len(), 3);
    assert!(
        start.elapsed() >= Duration::from_secs(4),
        "squeue at most every 2 s"
    );
    // The end is remembered: status needs no Slurm now.
    fake.shim("squeue", "exit 0");
    fake.run(["status", "--json", "101"])
        .expect_json("/0/state", "FAILED")
        .expect_json("/0/exit_code", 3)
        .run();
}

#[test]
fn follow_prefers_the_final_state_and_reads_the_whole_log() {
    let fake = Fake::new();
    let log = fake.seed("resnet", "101", 1, Some("start\n"));
    // The job is already over in Slurm's eyes while the nodes still flush the log.
    let writer = format!(
        "(sleep 0.5; echo late >> {log}; sleep 0.5; echo later >> {log}) &",
        log = log.display()
    );
    fake.shim(
        "squeue",
        &format!("{writer}\n{}", fake.line("101", "COMPLETED")),
    );
    fake.final_state("resnet", "101", 0, "completed");
    fake.run(["logs", "-f", "resnet"])
        .expect_status(0)
        .expect_stdout("start\nlate\nlater\n")
        .run();
    assert!(
        fake.calls("scontrol").is_empty(),
        "the final state has the exit code"
    );
}

#[test]
fn follow_keeps_going_while_squeue_fails() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("x\n"));
    fake.shim_in_turn(
        "squeue",
        &[
            &fake.line("101", "RUNNING"),
            CONTROLLER_DOWN,
            &fake.line("101", "COMPLETED"),
        ],
    );
    fake.shim(
        "scontrol",
        &says("JobId=101 JobState=COMPLETED ExitCode=0:0"),
    );
    fake.run(["logs", "-f", "resnet"])
        .expect_status(0)
        .expect_stdout("x\n")
        .expect_stderr_contains("Unable to contact slurm controller")
        .expect_stderr_contains("unknown until squeue answers")
        .expect_stderr_contains("squeue answers again")
        .expect_stderr_contains("COMPLETED, exit code 0")
        .run();
    assert_eq!(fake.calls("squeue").len(), 3);
}

#[test]
fn follow_reports_a_deleted_log_and_goes_on() {
    let fake = Fake::new();
    let log = fake.seed("resnet", "101", 1, Some("before\n"));
    let running = fake.line("101", "RUNNING");
    let deleted = format!("rm -f {}; {running}", log.display());
    fake.shim_in_turn(
        "squeue",
        &[&running, &deleted, &fake.line("101", "CANCELLED")],
    );
    fake.shim(
        "scontrol",
        &says("JobId=101 JobState=CANCELLED ExitCode=0:15"),
    );
    fake.run(["logs", "-f", "resnet"])
        .expect_status(143)
        .expect_stdout("before\n")
        .expect_stderr_count("was deleted", 1)
        .expect_stderr_contains("CANCELLED, exit code 143")
        .run();
}

#[test]
fn follow_of_a_job_slurm_forgot_uses_the_final_state() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("all done\n"));
    fake.final_state("resnet", "101", 5, "failed");
    fake.shim("squeue", INVALID_JOB_ID);
    fake.run(["logs", "-f", "resnet"])
        .expect_status(5)
        .expect_stdout("all done\n")
        .run();
}

#[test]
fn follow_of_a_run_with_a_recorded_end_asks_slurm_nothing() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("done long ago\n"));
    fake.shim("squeue", &fake.line("101", "FAILED"));
    fake.shim("scontrol", &says("JobId=101 JobState=FAILED ExitCode=6:0"));
    fake.run(["status", "101"]).expect_status(0).run();
    // The job id is handed to another job; the record keeps what it learned.
    fake.shim("squeue", &fake.line("101", "RUNNING"));
    let scontrol_calls = fake.calls("scontrol").len();
    let start = Instant::now();
    fake.run(["logs", "-f", "101"])
        .expect_status(6)
        .expect_stdout("done long ago\n")
        .run();
    // No follow loop: that would ask squeue (at once, then every 2 s) or scontrol.
    assert_eq!(fake.calls("squeue").len(), 1, "only the status call");
    assert_eq!(
        fake.calls("scontrol").len(),
        scontrol_calls,
        "logs -f asks scontrol nothing"
    );
    // Only a hang is a failure here; how fast it is is for benchmarks, not a shared machine.
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}

/// Starts following (`run`) job 101, which squeue shows RUNNING and then COMPLETING for good,
/// as a dead node keeps it for minutes; once squeue has been asked a second time, writes the
/// final state at the path `state_file` finds, with exit code 5. Returns the follower's checked
/// output and how long it took after the final state was written.
fn follow_while_completing(
    fake: &Fake,
    run: Run,
    submitted: &str,
    state_file: &dyn Fn(&Fake) -> PathBuf,
) -> (Ran, Duration) {
    fake.shim_in_turn(
        "squeue",
        &[
            &line_at("101", "RUNNING", submitted),
            &line_at("101", "COMPLETING", submitted),
        ],
    );
    let running = run.spawn();
    let deadline = Instant::now() + Duration::from_secs(30);
    while fake.calls("squeue").len() < 2 {
        assert!(Instant::now() < deadline, "never asked squeue twice");
        std::thread::sleep(Duration::from_millis(50));
    }
    write_final_state(&state_file(fake), "101", 5, "node-failed");
    let written = Instant::now();
    let ran = running.wait_within(Duration::from_secs(30));
    (ran, written.elapsed())
}

/// A node that dies keeps the job COMPLETING until Slurm declares the node down
/// (`SlurmdTimeout`, 300 s by default), though the bootstrap has ended and written its final
/// state. `logs -f` and `launch --follow` end with the final state's ending and exit code then,
/// not when Slurm lets the job go.
#[test]
fn follow_ends_with_the_final_state_while_slurm_still_shows_completing() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("training\n"));
    let submitted = squeue_time(fake.submitted("101"));
    let follow = fake
        .run(["logs", "-f", "resnet"])
        .expect_status(5)
        .expect_stdout("training\n")
        .expect_stderr_contains("job 101 (resnet) is COMPLETING")
        // The final state's ending and code.
        .expect_stderr_contains("job 101 (resnet) NODE_FAIL, exit code 5");
    let (_, after) = follow_while_completing(&fake, follow, &submitted, &|f| {
        f.logs.join("resnet_101.state.json")
    });
    assert!(after < Duration::from_secs(30), "{after:?}");
    assert!(
        fake.calls("scontrol").is_empty(),
        "the final state has the code"
    );

    // `launch --follow`: the final state goes where the launch put its script.
    let fake = Fake::new();
    fake.shim("sbatch", "echo 101");
    let mut args = launch("resnet", "python train.py");
    args.push("--follow");
    let follow = fake
        .run(args)
        .expect_status(5)
        // The job id, then no log (none was written).
        .expect_stdout("101\n")
        .expect_stderr_contains("job 101 (resnet) NODE_FAIL, exit code 5");
    let (_, after) = follow_while_completing(&fake, follow, NOW, &|f| {
        let call = f.calls("sbatch").pop().expect("sbatch was called");
        let script = call.split_whitespace().last().unwrap().to_owned();
        PathBuf::from(script.strip_suffix(".sh").unwrap().to_owned() + ".state.json")
    });
    assert!(after < Duration::from_secs(30), "{after:?}");
}

/// Starts `run`, waits until it has asked squeue, sends it SIGINT and checks how it ends.
fn interrupt(fake: &Fake, run: Run) -> Ran {
    let running = run.spawn();
    let deadline = Instant::now() + Duration::from_secs(30);
    while fake.calls("squeue").is_empty() {
        assert!(Instant::now() < deadline, "never asked squeue");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    running.signal(Signal::SIGINT);
    running.wait_within(Duration::from_secs(30))
}

#[test]
fn ctrl_c_stops_following_without_cancelling() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("x\n"));
    fake.shim("squeue", &fake.line("101", "RUNNING"));
    fake.shim("scancel", "exit 0");
    let follow = fake
        .run(["logs", "-f", "resnet"])
        .expect_status(130)
        .expect_stderr_contains("Cancel it with `rayslurm cancel 101`");
    interrupt(&fake, follow);
    assert!(fake.calls("scancel").is_empty());
}

#[test]
fn ctrl_c_with_cancel_on_interrupt_cancels() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("x\n"));
    fake.scancel_stops(
        "",
        &line_at("101", "RUNNING", NOW),
        &line_at("101", "CANCELLED", NOW),
    );
    fake.shim(
        "scontrol",
        &says("JobId=101 JobState=CANCELLED ExitCode=0:15"),
    );
    // `--cancel-on-interrupt` belongs to `launch --follow`: launch with a fake sbatch.
    fake.shim("sbatch", "echo 101");
    let mut args = launch("resnet", "sleep 100");
    args.extend(["--follow", "--cancel-on-interrupt"]);
    let follow = fake
        .run(args)
        .expect_status(130)
        .expect_stderr_contains("cancelled job 101 (resnet): CANCELLED");
    interrupt(&fake, follow);
    assert_eq!(fake.calls("scancel"), ["101"]);
}
