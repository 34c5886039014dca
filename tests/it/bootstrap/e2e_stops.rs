//! End-to-end tests of how a run stops at its time limit on the real test cluster: cleanly,
//! with the stop grace given to the command to finish.

use std::time::Duration;

use crate::harness::{assert_clean, lab, launch};

#[test]
fn the_time_limit_stops_the_run_cleanly() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // A 2-minute limit with the warning asked for 50 s early: Slurm sends it 40 to 70 s in (it
    // looks every 30 s and sends it up to 30 s early), after Ray started (about 10 s, 30 on a
    // loaded machine); the command gets SIGTERM (the default --signal). One node: Slurm's
    // warning goes to the batch step alone, on the head; what the warning does to worker nodes
    // (Ray's drain, their teardown) is `the_time_limit_warning_drains_the_worker_nodes_in_ray_
    // with_the_deadline`'s, on 2 nodes.
    let cmd = "trap 'echo got-sigterm; exit 143' TERM; echo command-started; sleep 300 & wait";
    let job = launch(
        lab,
        "timelimit",
        &[
            "-n",
            "1",
            "--time",
            "2",
            "--stop-grace",
            "50",
            "--command",
            cmd,
        ],
    );
    let info = job.wait(Duration::from_secs(200));
    let log = job.log_text();
    assert!(
        log.contains("command-started") && log.contains("got-sigterm"),
        "{log}"
    );
    assert_ne!(
        info["JobState"], "TIMEOUT",
        "stopped before the limit: {log}"
    );
    assert_eq!(job.state()["ending"], "time-limit");
    assert_eq!(job.state()["exit_code"], 143);
    assert_clean(&job);
}

/// Regression: the script asked Slurm for SIGTERM `--stop-grace` seconds before the limit, but
/// the bootstrap killed the command 10 s after passing it on, whatever the grace.
#[test]
fn the_command_gets_the_stop_grace_to_finish() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // 20 s to "checkpoint" after SIGTERM: within the 60 s grace (less the teardown margin),
    // twice the 10 s the bootstrap gave before. The test gives the warning once the command
    // runs (a 10-minute limit: Slurm's own never comes).
    let cmd = "trap 'echo got-sigterm; sleep 20; echo checkpoint-saved; exit 0' TERM; \
               echo command-started; sleep 300 & wait";
    let job = launch(
        lab,
        "stopgrace",
        &[
            "--no-ray",
            "--time",
            "10",
            "--stop-grace",
            "60",
            "--command",
            cmd,
        ],
    );
    job.wait_for_log("command-started", Duration::from_secs(120));
    job.warn_time_limit();
    job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert!(
        log.contains("got-sigterm") && log.contains("checkpoint-saved"),
        "the command finished its 20 s of clean-up: {log}"
    );
    assert!(!log.contains("killing it"), "{log}");
    // Warned, it exited 0, but it did not finish: the time limit stopped it.
    assert_eq!(job.state()["ending"], "time-limit");
    assert_eq!(job.state()["exit_code"], 143);
    assert_clean(&job);
}
