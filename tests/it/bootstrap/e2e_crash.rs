//! End-to-end tests that kill a node (its whole namespace, as a crash does) while the command
//! runs or while Ray starts. A job beside it on that node would fail too, so they run their
//! 2-node jobs in the crash partition, which no other test uses (`lab_crash`): one after
//! another, beside every other test.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{
    Job, Lab, NODE_TMP, assert_clean, expand_nodes, lab_crash, launch, leftover_temp_dirs,
    scontrol_job,
};

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
pub(crate) struct DeadNode {
    name: String,
    revived: bool,
}

impl DeadNode {
    pub(crate) fn kill(name: &str) -> Self {
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
/// within 30 s with the node named by its silence; returns the dead node and the log. While Ray
/// starts (`early`), the worker's step may not have been launched on the node yet: Slurm then
/// refuses it, and the run names the step for that node ending before every node joined.
fn kill_a_worker_and_expect_the_end(job: &Job, case: &str, early: bool) -> (DeadNode, String) {
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
    let silent = log.contains(&format!("no heartbeat from {dead_name} for"));
    let never_launched = log.contains("before every node joined")
        && log.contains(&format!("--nodelist={dead_name} "));
    assert!(silent || (early && never_launched), "{case}: {log}");
    (dead, log)
}

/// Revives the dead node, waits for the job to leave Slurm, and checks nothing is left on any
/// node. The dead node's /tmp is as the crash left it (its Ray temp root among it): a crashed
/// machine's files are not the run's to clean, so that one directory is removed here.
pub(crate) fn revive_and_check(job: &Job, mut dead: DeadNode) {
    dead.revive();
    let dead = dead.name.clone();
    job.wait(Duration::from_secs(120));
    let on_dead = NODE_TMP.path().join(&dead);
    for root in leftover_temp_dirs(&job.id)
        .into_iter()
        .filter(|p| p.starts_with(&on_dead))
    {
        let _ = std::fs::remove_dir_all(root);
    }
    assert_clean(job);
}

/// A 2-node run in the crash partition: the head and the worker that will die.
fn launch_in_crash(lab: &Lab, name: &str, flags: &[&str], command: &str) -> Job {
    let mut args = vec!["-p", &lab.crash_partition, "-n", "2"];
    args.extend(flags);
    args.extend(["--command", command]);
    launch(lab, name, &args)
}

#[test]
fn a_node_that_dies_while_the_command_runs_fails_the_run_within_30_s() {
    let Some((lab, _turn)) = lab_crash() else {
        return;
    };
    let job = launch_in_crash(lab, "nodedies", &[], "echo command-started; sleep 120");
    job.wait_for_log("command-started", Duration::from_secs(300));
    let (dead, log) = kill_a_worker_and_expect_the_end(&job, "nodedies", false);
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
    let Some((lab, _turn)) = lab_crash() else {
        return;
    };
    // Every node has joined before one dies: with --min-nodes the command may start before
    // the worker joins, so it waits until Ray counts both nodes alive and says so; per node,
    // each rank says it started (`[RANK NODE] command-started`).
    let joined = "python -c 'import ray, time\nray.init()\n\
                  while sum(n[\"Alive\"] for n in ray.nodes()) < 2: time.sleep(0.2)\n\
                  print(\"every-node-joined\", flush=True)'; sleep 120";
    let cases: [(&str, &[&str], &str, &str); 2] = [
        (
            "mindies",
            &["--min-nodes", "1"],
            joined,
            "\nevery-node-joined",
        ),
        (
            "pernodedies",
            &["--per-node"],
            "echo command-started; sleep 120",
            "] command-started",
        ),
    ];
    for (name, flags, command, every_node) in cases {
        let job = launch_in_crash(lab, name, flags, command);
        let needed = if flags.contains(&"--per-node") { 2 } else { 1 };
        let started = job.wait_started();
        while job.log_text().matches(every_node).count() < needed {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{name}: not every node joined within 120 s\n{}",
                job.log_text()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        let (dead, log) = kill_a_worker_and_expect_the_end(&job, name, false);
        assert_eq!(job.state()["ending"], "node-failed", "{name}: {log}");
        revive_and_check(&job, dead);
    }
}

#[test]
fn a_node_that_dies_while_ray_starts_fails_the_run_within_30_s() {
    let Some((lab, _turn)) = lab_crash() else {
        return;
    };
    let job = launch_in_crash(lab, "nodediesearly", &[], "echo should-not-run");
    job.wait_for_log("starting Ray head", Duration::from_secs(300));
    let (dead, log) = kill_a_worker_and_expect_the_end(&job, "nodediesearly", true);
    assert_eq!(job.state()["ending"], "startup-failed", "{log}");
    assert!(!log.contains("\nshould-not-run"), "{log}");
    revive_and_check(&job, dead);
}
