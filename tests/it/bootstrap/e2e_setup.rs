//! End-to-end tests of `--setup` apart from the start-up: a Ray run's setup runs on every node
//! before its command, a setup longer than `--ready-timeout` does not fail the run (the ready
//! clock starts when the last setup ends), `--setup-timeout` fails a run whose setup takes too
//! long with its own message, and every node says when its setup ended.

use std::time::Duration;

use crate::harness::{assert_clean, expand_nodes, lab, launch};

/// The seconds `node`'s own line says its setup took (`setup done on NODE after S s`), checked
/// against what the setup did: it slept `slept` seconds, so it took that long at least, and not
/// so much longer that the line could be another node's (the nodes' setups here differ by
/// more than the slack). The slack is loose: the lab's 2 cores run other tests beside these.
fn setup_took(log: &str, node: &str, slept: f64) -> f64 {
    let prefix = format!("setup done on {node} after ");
    let seconds: f64 = log
        .lines()
        .find_map(|l| l.split_once(&prefix).map(|(_, rest)| rest))
        .and_then(|rest| rest.strip_suffix(" s"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no `{prefix}S s` line of {node}'s own:\n{log}"));
    assert!(
        (slept..slept + 20.0).contains(&seconds),
        "{node}'s setup slept {slept} s but took {seconds} s by its line:\n{log}"
    );
    seconds
}

#[test]
fn a_setup_longer_than_the_ready_timeout_does_not_fail_a_per_node_run() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let job = launch(
        lab,
        "setuplong",
        &[
            "--per-node",
            "-n",
            "2",
            "--ready-timeout",
            "2",
            "--setup",
            "sleep 6",
            "--command",
            "echo ran-after-setup",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert_eq!(log.matches("ran-after-setup").count(), 2, "{log}");
    for node in expand_nodes(&info["NodeList"]) {
        setup_took(&log, &node, 6.0);
    }
    assert_clean(&job);
}

/// A Ray run's setup runs on every node, and every node's has ended before the command starts
/// (each leaves a mark in the shared workdir when done; the command counts them); a setup that
/// takes longer than `--ready-timeout` does not fail the run, as Ray's start is counted from
/// the last setup's end. One run for both: a Ray start of 2 nodes is seconds of the lab's 2
/// cores.
#[test]
fn ray_jobs_set_up_every_node_first_and_a_setup_longer_than_the_ready_timeout_does_not_fail_them() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // The worker's setup ends last: Ray's start counts from there.
    let setup = "if [ \"$RAYSLURM_NODE_RANK\" = 1 ]; then sleep 40; else sleep 5; fi; \
                 touch setup-done-$(hostname)";
    let job = launch(
        lab,
        "raysetuplong",
        &[
            "-n",
            "2",
            "--ready-timeout",
            "30",
            "--setup",
            setup,
            "--command",
            "echo ray-ran-after-setup nodes-set-up $(ls setup-done-* | wc -l)",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains("ray-ran-after-setup nodes-set-up 2"), "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    setup_took(&log, &nodes[0], 5.0);
    setup_took(&log, &nodes[1], 40.0);
    assert_clean(&job);
}

#[test]
fn the_setup_timeout_fails_a_per_node_run_with_its_own_message() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let setup = "if [ \"$RAYSLURM_NODE_RANK\" = 1 ]; then sleep 300; fi";
    let job = launch(
        lab,
        "setuptimeout",
        &[
            "--per-node",
            "-n",
            "2",
            "--setup-timeout",
            "5",
            "--setup",
            setup,
            "--command",
            "echo should-not-run",
        ],
    );
    let started = job.wait_started();
    let (info, log) = job.expect_startup_failure(Duration::from_secs(300));
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "the run waited past its setup timeout: {:?}",
        started.elapsed()
    );
    let nodes = expand_nodes(&info["NodeList"]);
    assert!(
        log.contains(&format!(
            "the setup did not end within --setup-timeout 5 s on: {} ",
            nodes[1]
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!("setup done on {} after", nodes[0])),
        "{log}"
    );
    assert!(!log.contains("should-not-run"), "{log}");
    assert_clean(&job);
}

#[test]
fn the_setup_timeout_fails_a_ray_run_whose_head_is_still_setting_up() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let job = launch(
        lab,
        "raysetuptimeout",
        &[
            "-n",
            "2",
            "--setup-timeout",
            "5",
            "--setup",
            "sleep 300",
            "--command",
            "echo should-not-run",
        ],
    );
    let started = job.wait_started();
    let (_info, log) = job.expect_startup_failure(Duration::from_secs(300));
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "the run waited past its setup timeout: {:?}",
        started.elapsed()
    );
    assert!(
        log.contains("the setup did not end within --setup-timeout 5 s on: "),
        "{log}"
    );
    assert!(!log.contains("should-not-run"), "{log}");
    assert_clean(&job);
}
