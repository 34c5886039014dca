//! End-to-end tests of failures the bootstrap must notice and clean up after, on the real test
//! cluster: a killed bootstrap, a launch from a node-local directory. Nodes that die are in
//! `e2e_crash.rs`; Ray's share of memory is checked by `e2e_bootstrap`'s two runs on one node.

use std::time::{Duration, Instant};

use crate::harness::{Job, assert_clean, launch, leftover_temp_dirs, leftovers, processes_with};
use crate::harness::{lab, rayslurm, text};

#[test]
fn a_killed_bootstrap_leaves_nothing_and_says_so() {
    let Some((lab, _turn)) = lab("a_killed_bootstrap_leaves_nothing_and_says_so") else {
        return;
    };
    // A command easy to find: the watchdog must stop it too.
    let job = launch(
        lab,
        "killedboot",
        &["-n", "2", "--command", "echo command-started; sleep 4321.5"],
    );
    kill_the_head_and_expect_nothing_left(&job, true, 1, "sleep 4321.5");
}

#[test]
fn a_killed_bootstrap_of_a_per_node_run_leaves_no_rank() {
    let Some((lab, _turn)) = lab("a_killed_bootstrap_of_a_per_node_run_leaves_no_rank") else {
        return;
    };
    // Every rank must stop, the head's and the others', though no one is left to report them.
    let job = launch(
        lab,
        "killedranks",
        &[
            "--per-node",
            "-n",
            "2",
            "--command",
            "echo command-started; sleep 4321.25",
        ],
    );
    kill_the_head_and_expect_nothing_left(&job, false, 2, "sleep 4321.25");
}

/// SIGKILLs the head's bootstrap once the command runs, then expects no command, no Ray, no
/// temp dir and no watchdog on any node within 15 s, and a final state that says so. `ray`:
/// the run has Ray; `commands`: how many copies of the command run (one a rank), each with
/// `sleep` in its command line (a sleep of its own to each test: the two run side by side).
fn kill_the_head_and_expect_nothing_left(job: &Job, ray: bool, commands: usize, sleep: &str) {
    job.wait_for_log("command-started", Duration::from_secs(300));
    let started = Instant::now();
    while processes_with(&[sleep]).len() < commands {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{}",
            job.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let state = job.log.with_extension("state.json");
    let state = state.to_string_lossy();
    let head: Vec<u32> = processes_with(&["bootstrap", &state])
        .into_iter()
        .filter(|pid| {
            processes_with(&["--watchdog", &state])
                .binary_search(pid)
                .is_err()
        })
        .collect();
    assert_eq!(head.len(), 1, "the head's bootstrap: {head:?}");
    assert_eq!(
        processes_with(&["--watchdog", &state]).len(),
        1,
        "its watchdog"
    );
    if ray {
        assert!(
            !leftovers(&job.id).is_empty(),
            "Ray runs (the check can see it)"
        );
    }
    let killed_at = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(head[0] as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    loop {
        let left = (
            leftovers(&job.id),
            leftover_temp_dirs(&job.id),
            processes_with(&[sleep]),
            processes_with(&["--watchdog", &state]),
        );
        if left.0.is_empty() && left.1.is_empty() && left.2.is_empty() && left.3.is_empty() {
            break;
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(15),
            "15 s after the bootstrap was killed, still there: {left:?}\nlog:\n{}",
            job.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let final_state = job.state();
    assert_eq!(final_state["ending"], "killed", "{final_state}");
    let row = job.status_row();
    assert_eq!(row["state"], "FAILED", "{row}");
    job.wait(Duration::from_secs(60));
    assert!(
        job.log_text()
            .contains("its watchdog stopped the command and Ray")
    );
    assert_clean(job);
}

#[test]
fn a_launch_from_a_node_local_directory_is_warned_and_fails_fast() {
    let Some((lab, _turn)) = lab("a_launch_from_a_node_local_directory_is_warned_and_fails_fast")
    else {
        return;
    };
    // The login node's /tmp: the nodes each have their own.
    let local = tempfile::tempdir_in("/tmp").unwrap();
    let logs = lab.workdir("nodelocal");
    let tmp_before = crate::harness::node_tmp_entries();
    let out = rayslurm([
        "launch",
        "--json",
        "--exp-name",
        "nodelocal",
        "--load-env",
        &lab.load_env(),
        "--object-store-memory",
        "100000000",
        "--time",
        "10",
        "--log-dir",
        &logs.display().to_string(),
        "--command",
        "echo should-not-run",
    ])
    .cwd(local.path())
    .output();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("inside the node-local `/tmp`"),
        "launch warns: {stderr}"
    );
    let job = Job::launched(&out.stdout, logs, tmp_before);
    let (_, log) = job.expect_startup_failure(Duration::from_secs(120));
    assert!(
        log.contains(&format!(
            "the job was submitted from `{}`",
            local.path().display()
        )),
        "{log}"
    );
    assert_clean(&job);
}

#[test]
fn a_job_sent_elsewhere_with_chdir_runs_there() {
    let Some((lab, _turn)) = lab("a_job_sent_elsewhere_with_chdir_runs_there") else {
        return;
    };
    // Not the submit directory, on purpose: only a submit directory the node cannot see is an
    // error (regression: every --chdir run failed as if launched from a node-local directory).
    let elsewhere = lab.workdir("chdirtarget");
    let chdir = format!("--chdir={}", elsewhere.display());
    let job = launch(
        lab,
        "chdir",
        &[
            "--no-ray",
            "--sbatch-arg",
            &chdir,
            "--command",
            "echo \"cwd=$PWD\"",
        ],
    );
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(
        log.contains(&format!("cwd={}", elsewhere.display())),
        "{log}"
    );
    assert_clean(&job);
}
