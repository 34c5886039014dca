//! End-to-end tests of failures the bootstrap must notice and clean up after, on the real test
//! cluster: a node that dies (its whole namespace killed, as a crash does) while the command
//! runs or while Ray starts. These kill nodes, so each has the cluster to itself.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::e2e_bootstrap::{Job, NODE_TMP, assert_clean, launch, leftover_temp_dirs, leftovers};
use crate::harness::{Lab, expand_nodes, lab, lab_alone, rayslurm, scontrol_job, text};

/// `cluster.sh kill-node` / `revive-node` for a node named `nodeK`.
fn cluster(verb: &str, node: &str) {
    let k = node.trim_start_matches("node");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/cluster.sh");
    let out = Command::new("bash")
        .args([script, verb, k])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cluster.sh {verb} {k}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A node this test killed: revived when dropped, so that a failing assertion between the kill
/// and the revive never leaves the cluster short of a node for every test after it.
struct DeadNode {
    name: String,
    revived: bool,
}

impl DeadNode {
    fn kill(name: &str) -> Self {
        cluster("kill-node", name);
        Self {
            name: name.to_owned(),
            revived: false,
        }
    }

    fn revive(&mut self) {
        cluster("revive-node", &self.name);
        self.revived = true;
    }
}

impl Drop for DeadNode {
    fn drop(&mut self) {
        if !self.revived {
            let k = self.name.trim_start_matches("node");
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/cluster.sh");
            let _ = Command::new("bash")
                .args([script, "revive-node", k])
                .output();
        }
    }
}

/// The job's last node: a worker (the head is the first).
fn a_worker_of(job: &Job) -> String {
    let nodes = expand_nodes(&scontrol_job(&job.id)["NodeList"]);
    assert!(nodes.len() >= 2, "{nodes:?}");
    nodes.last().unwrap().clone()
}

/// Waits until the bootstrap has written its final state (its own end, which must come long
/// before Slurm declares the dead node down); returns how long that took from `since`.
fn bootstrap_end(job: &Job, since: Instant) -> Duration {
    let state = job.log.with_extension("state.json");
    while !state.exists() {
        assert!(
            since.elapsed() < Duration::from_secs(90),
            "no final state 90 s after the node died\nlog:\n{}",
            job.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    since.elapsed()
}

/// Kills one of the job's worker nodes as a crash does, and expects the bootstrap's own end
/// within 30 s with the node named by its silence; returns the dead node and the log.
fn kill_a_worker_and_expect_the_end(job: &Job, case: &str) -> (DeadNode, String) {
    let worker = a_worker_of(job);
    let killed_at = Instant::now();
    let dead = DeadNode::kill(&worker);
    let dead_name = dead.name.clone();
    let took = bootstrap_end(job, killed_at);
    let log = job.log_text();
    assert!(
        took < Duration::from_secs(30),
        "{case}: the run ended {took:?} after {dead_name} died\n{log}"
    );
    assert!(
        log.contains(&format!("no heartbeat from {dead_name} for")),
        "{case}: {log}"
    );
    (dead, log)
}

/// Revives the dead node, waits for the job to leave Slurm, and checks nothing is left on any
/// node. The dead node's /tmp is as the crash left it (its Ray temp root among it): a crashed
/// machine's files are not the run's to clean, so that one directory is removed here.
fn revive_and_check(job: &Job, mut dead: DeadNode) {
    dead.revive();
    let dead = dead.name.clone();
    job.wait(Duration::from_secs(120));
    let prefix = format!("rs0-{}.", job.id);
    for e in std::fs::read_dir(format!("{NODE_TMP}/{dead}"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
    {
        let _ = std::fs::remove_dir_all(e.path());
    }
    assert_clean(job);
}

fn launch_three(lab: &Lab, name: &str, command: &str) -> Job {
    launch(lab, name, &["-n", "3", "--command", command])
}

#[test]
fn a_node_that_dies_while_the_command_runs_fails_the_run_within_30_s() {
    let Some((lab, _turn)) =
        lab_alone("a_node_that_dies_while_the_command_runs_fails_the_run_within_30_s")
    else {
        return;
    };
    let job = launch_three(lab, "nodedies", "echo command-started; sleep 120");
    job.wait_for_log("command-started", Duration::from_secs(300));
    let (dead, log) = kill_a_worker_and_expect_the_end(&job, "nodedies");
    let state = job.state();
    assert_eq!(state["ending"], "node-failed", "{log}");
    let message = state["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("no heartbeat from {} for", dead.name)),
        "{message}"
    );
    // Slurm keeps the job COMPLETING until it declares the node down; status already knows.
    let row = job.status_row();
    assert_eq!(row["state"], "NODE_FAIL", "{row}");
    revive_and_check(&job, dead);
}

/// A node lost mid-run ends the run within 30 s, named by its silence: with `--min-nodes` (the
/// command may have started without every node), and in a per-node run (no Ray at all).
#[test]
fn a_node_that_dies_fails_a_min_nodes_run_and_a_per_node_run_within_30_s() {
    let Some((lab, _turn)) =
        lab_alone("a_node_that_dies_fails_a_min_nodes_run_and_a_per_node_run_within_30_s")
    else {
        return;
    };
    let cases: [(&str, &[&str]); 2] = [
        ("mindies", &["-n", "3", "--min-nodes", "2"]),
        ("pernodedies", &["-n", "3", "--per-node"]),
    ];
    for (name, flags) in cases {
        let mut args = flags.to_vec();
        args.extend(["--command", "echo command-started; sleep 120"]);
        let job = launch(lab, name, &args);
        job.wait_for_log("command-started", Duration::from_secs(300));
        // Every node has joined (or, per node, started its rank) before one dies.
        std::thread::sleep(Duration::from_secs(3));
        let (dead, log) = kill_a_worker_and_expect_the_end(&job, name);
        assert_eq!(job.state()["ending"], "node-failed", "{name}: {log}");
        revive_and_check(&job, dead);
    }
}

#[test]
fn a_node_that_dies_while_ray_starts_fails_the_run_within_30_s() {
    let Some((lab, _turn)) =
        lab_alone("a_node_that_dies_while_ray_starts_fails_the_run_within_30_s")
    else {
        return;
    };
    let job = launch_three(lab, "nodediesearly", "echo should-not-run");
    job.wait_for_log("starting Ray head", Duration::from_secs(300));
    let (dead, log) = kill_a_worker_and_expect_the_end(&job, "nodediesearly");
    assert_eq!(job.state()["ending"], "startup-failed", "{log}");
    assert!(!log.contains("\nshould-not-run"), "{log}");
    revive_and_check(&job, dead);
}

/// PIDs of the processes whose command line holds every one of `parts`.
fn processes_with(parts: &[&str]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            !zombie && parts.iter().all(|p| cmdline.contains(p))
        })
        .collect()
}

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
    kill_the_head_and_expect_nothing_left(&job, true, 1);
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
            "echo command-started; sleep 4321.5",
        ],
    );
    kill_the_head_and_expect_nothing_left(&job, false, 2);
}

/// SIGKILLs the head's bootstrap once the command runs, then expects no command, no Ray, no
/// temp dir and no watchdog on any node within 15 s, and a final state that says so. `ray`:
/// the run has Ray; `commands`: how many copies of the command run (one a rank).
fn kill_the_head_and_expect_nothing_left(job: &Job, ray: bool, commands: usize) {
    job.wait_for_log("command-started", Duration::from_secs(300));
    let started = Instant::now();
    while processes_with(&["sleep 4321.5"]).len() < commands {
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
            processes_with(&["sleep 4321.5"]),
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
fn ray_is_told_the_allocations_memory_not_the_machines() {
    let Some((lab, _turn)) = lab("ray_is_told_the_allocations_memory_not_the_machines") else {
        return;
    };
    let cmd = "python -c 'import ray; ray.init(); r = ray.cluster_resources(); \
               print(\"ray-memory\", int(r[\"memory\"]), int(r[\"object_store_memory\"]))'";
    let job = launch(
        lab,
        "memory",
        &["--mem", "1500M", "--no-exclusive", "--command", cmd],
    );
    job.wait(Duration::from_secs(300));
    let log = job.log_text();
    let line = log
        .lines()
        .find(|l| l.starts_with("ray-memory "))
        .unwrap_or_else(|| panic!("no ray-memory line:\n{log}"));
    let numbers: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect();
    // 1500 MiB allocated, less the 100 MB object store the tests ask for.
    let expected = (1500u64 << 20) - 100_000_000;
    assert!(
        numbers[0].abs_diff(expected) < expected / 100,
        "Ray's memory {} is the allocation's {expected}\n{log}",
        numbers[0]
    );
    assert!(
        log.contains("Ray gets 1404 MB of memory and a 95 MB object store"),
        "{log}"
    );
    assert_clean(&job);
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
    let tmp_before = crate::e2e_bootstrap::node_tmp_entries();
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
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "FAILED", "{log}");
    assert_eq!(job.state()["ending"], "startup-failed", "{log}");
    assert!(
        log.contains(&format!(
            "the job was submitted from `{}`",
            local.path().display()
        )),
        "{log}"
    );
    assert!(!log.contains("\nshould-not-run"), "{log}");
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
