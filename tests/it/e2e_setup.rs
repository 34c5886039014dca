//! End-to-end tests of `--setup` apart from the start-up: a Ray run's setup runs on every node
//! before its command, a setup longer than `--ready-timeout` does not fail the run (the ready
//! clock starts when the last setup ends), `--setup-timeout` fails a run whose setup takes too
//! long with its own message, and every node says when its setup ended.

use std::time::Duration;

use crate::harness::{assert_clean, expand_nodes, lab, launch};

#[test]
fn a_setup_longer_than_the_ready_timeout_does_not_fail_a_per_node_run() {
    let Some((lab, _turn)) =
        lab("a_setup_longer_than_the_ready_timeout_does_not_fail_a_per_node_run")
    else {
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
        assert!(
            log.contains(&format!("setup done on {node} after 6.")),
            "{node}'s own line: {log}"
        );
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
    let Some((lab, _turn)) = lab(
        "ray_jobs_set_up_every_node_first_and_a_setup_longer_than_the_ready_timeout_does_not_fail_them",
    ) else {
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
    assert!(
        log.contains(&format!("setup done on {} after 5.", nodes[0])),
        "{log}"
    );
    assert!(
        log.contains(&format!("setup done on {} after 40.", nodes[1])),
        "{log}"
    );
    assert_clean(&job);
}

#[test]
fn the_setup_timeout_fails_a_per_node_run_with_its_own_message() {
    let Some((lab, _turn)) = lab("the_setup_timeout_fails_a_per_node_run_with_its_own_message")
    else {
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
    let Some((lab, _turn)) =
        lab("the_setup_timeout_fails_a_ray_run_whose_head_is_still_setting_up")
    else {
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
