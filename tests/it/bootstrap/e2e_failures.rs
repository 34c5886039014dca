//! End-to-end tests of failures the bootstrap must notice and clean up after, on the real test
//! cluster: a killed bootstrap, a launch from a node-local directory, a worker node failing
//! mid-run, workers that are not ready in time. Nodes that die are in `e2e_crash.rs`; Ray's
//! share of memory is checked by `e2e_bootstrap.rs`'s two runs on one node.

use std::time::{Duration, Instant};

use crate::harness::{Job, assert_clean, launch, leftover_temp_dirs, leftovers, processes_with};
use crate::harness::{lab, rayslurm, temp_root_prefix, text};

#[test]
fn a_killed_bootstrap_leaves_nothing_and_says_so() {
    let Some((lab, _turn)) = lab() else {
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
    let Some((lab, _turn)) = lab() else {
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
    let Some((lab, _turn)) = lab() else {
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
    let Some((lab, _turn)) = lab() else {
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

/// The raylet of a worker node of the job (not the head's), seen from this host.
fn worker_raylet(job_id: &str, head_ip: &str) -> Option<u32> {
    let root = temp_root_prefix(job_id);
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .find_map(|e| {
            let pid: u32 = e.file_name().to_string_lossy().parse().ok()?;
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline);
            let ours = cmdline.contains(&root);
            let on_head = cmdline.contains(&format!("--node_ip_address={head_ip}\0"));
            (comm.trim() == "raylet" && ours && !on_head).then_some(pid)
        })
}

#[test]
fn a_node_failing_mid_run_fails_the_job_fast() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let job = launch(
        lab,
        "nodefail",
        &["-n", "2", "--command", "echo command-started; sleep 300"],
    );
    job.wait_for_log("command-started", Duration::from_secs(600));
    let log = job.log_text();
    let head_ip = log
        .split("starting Ray head at ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .expect("head address in the log")
        .to_owned();
    let raylet = worker_raylet(&job.id, &head_ip).expect("the worker's raylet runs");
    let kill = || {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(raylet as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    };
    let (info, log) = job.kill_and_expect_end(kill, Duration::from_secs(30));
    assert_eq!(info["JobState"], "FAILED", "log:\n{log}");
    assert!(
        log.contains("stopped unexpectedly"),
        "the worker names the failure: {log}"
    );
    assert!(
        log.contains("a worker node failed"),
        "the head names the cause: {log}"
    );
    assert_eq!(job.state()["ending"], "node-failed");
    // Every node keeps Ray's logs; the raylet's own log is among them.
    for node in crate::harness::expand_nodes(&info["NodeList"]) {
        let raylet_log = job
            .ray_logs()
            .join("attempt-0")
            .join(&node)
            .join("raylet.out");
        assert!(
            raylet_log.is_file(),
            "{} kept\nlog:\n{log}",
            raylet_log.display()
        );
    }
    assert!(log.contains("Ray's logs of node"), "{log}");
    assert_clean(&job);
}

#[test]
fn a_ready_timeout_fails_the_job_and_stops_starting_workers() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // Ray needs several seconds to start here: 2 s is never enough. One worker, still in
    // `ray start` when the head gives up, is what must be stopped (a second would only be
    // more of the same).
    let job = launch(
        lab,
        "readytimeout",
        &[
            "-n",
            "2",
            "--ready-timeout",
            "2",
            "--command",
            "echo should-not-run",
        ],
    );
    let (_, log) = job.expect_startup_failure(Duration::from_secs(60));
    assert!(log.contains("not ready after --ready-timeout 2 s"), "{log}");
    assert_clean(&job);
}

/// A node whose Ray is older than the oldest rayslurm runs (2.52, the first with token
/// authentication) is refused before `ray start`, naming both versions. The old Ray is the
/// layout pip leaves (`bin/ray` naming its Python, the package's `ray-VERSION.dist-info`),
/// whose metadata is all the check reads: it is refused before anything of it runs.
#[test]
fn a_node_with_a_ray_older_than_the_oldest_supported_is_refused_naming_both_versions() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let venv = lab.workdir("oldray").join("venv");
    let bin = venv.join("bin");
    std::fs::create_dir_all(venv.join("lib/python3.11/site-packages/ray-2.49.2.dist-info"))
        .unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let python = lab.venv.join("bin/python3");
    std::os::unix::fs::symlink(&python, bin.join("python3")).unwrap();
    std::fs::write(
        bin.join("ray"),
        format!(
            "#!{}/python3\nimport sys\nprint('should-not-run'); sys.exit(1)\n",
            bin.display()
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(bin.join("ray")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(bin.join("ray"), perms).unwrap();
    let load_env = format!("export PATH={}:$PATH", bin.display());
    let job = crate::harness::launch_with_env(
        lab,
        "oldray",
        &load_env,
        &["-n", "2", "--command", "echo should-not-run"],
    );
    let (_, log) = job.expect_startup_failure(Duration::from_secs(120));
    assert!(
        log.contains("Ray 2.49.2 on node") && log.contains("is older than Ray 2.52.0"),
        "{log}"
    );
    assert_clean(&job);
}
