//! The scale tests themselves (see the folder's doc): each on the `scale` partition alone.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::{lab_scale, launch_scale, ray_nodes, wait_for_log_while_it_runs};
use crate::bootstrap::e2e_crash::{DeadNode, revive_and_check};
use crate::harness::{RemovedFromNodes, assert_clean, expand_nodes, processes_with};

/// The command of the 32-node Ray run: Ray's nodes as its driver sees them, then one task
/// pinned to each (`NodeAffinitySchedulingStrategy`, not soft), each saying where it ran.
const TASK_ON_EACH_NODE: &str = r#"
import socket, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init()
nodes = [n for n in ray.nodes() if n["Alive"]]
print("nodes-alive", len(nodes), flush=True)

@ray.remote(num_cpus=1)
def where():
    return ray.get_runtime_context().get_node_id(), socket.gethostname()

refs = [where.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
        for n in nodes]
got = ray.get(refs, timeout=600)
for (ran_on, _), n in zip(got, nodes):
    assert ran_on == n["NodeID"], (ran_on, n["NodeID"])
print("tasks-ran-on", " ".join(sorted(h for _, h in got)), flush=True)
"#;

#[test]
fn a_ray_run_on_32_nodes_sees_them_all_and_runs_a_task_on_each() {
    let n = ray_nodes();
    let Some((lab, _turn, _alone)) = lab_scale(n) else {
        return;
    };
    let dir = lab.workdir("scale32");
    std::fs::write(dir.join("each_node.py"), TASK_ON_EACH_NODE).unwrap();
    let job = launch_scale(
        lab,
        &dir,
        "scale32",
        n,
        &["--command", "python each_node.py"],
    );
    let started = job.wait_started();
    let info = job.wait(Duration::from_secs(1200));
    let log = job.log_text();
    eprintln!(
        "{n}-node Ray run: {:.0} s from Slurm's start to its end",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains(&format!("\nnodes-alive {n}\n")), "{log}");
    let nodes: BTreeSet<String> = expand_nodes(&info["NodeList"]).into_iter().collect();
    assert_eq!(nodes.len(), n, "{info:?}");
    let ran_on: Vec<String> = log
        .lines()
        .find_map(|l| l.strip_prefix("tasks-ran-on "))
        .unwrap_or_else(|| panic!("no tasks-ran-on line:\n{log}"))
        .split(' ')
        .map(str::to_owned)
        .collect();
    assert_eq!(ran_on.len(), n, "one task per node: {ran_on:?}");
    assert_eq!(
        ran_on.into_iter().collect::<BTreeSet<_>>(),
        nodes,
        "a task on every node of the job"
    );
    assert_eq!(job.state()["ending"], "completed", "{log}");
    assert_clean(&job);
}

#[test]
fn a_per_node_run_of_64_ranks_with_a_setup_on_each_ends_at_once_when_one_fails() {
    let Some((lab, _turn, _alone)) = lab_scale(64) else {
        return;
    };
    // Each node's setup leaves a file on the node's own /tmp; each rank says it saw it. The
    // file is removed from every node when the test ends, whatever happened.
    let marker = format!("rstest-scale-setup-{}", std::process::id());
    let _removed = RemovedFromNodes(marker.clone().into());
    let setup = format!("sleep 1; echo done > /tmp/{marker}");
    let cmd = format!(
        "if [ -e /tmp/{marker} ]; then echo setup-seen; fi; \
         if [ \"$RANK\" = 37 ]; then sleep 10; echo rank-37-fails; exit 5; fi; sleep 4646.5"
    );
    let job = launch_scale(
        lab,
        &lab.workdir("scale64"),
        "scale64",
        64,
        &["--per-node", "--setup", &setup, "--command", &cmd],
    );
    let started = job.wait_started();
    wait_for_log_while_it_runs(&job, "rank-37-fails", Duration::from_secs(600));
    let failed_at = Instant::now();
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    let took = failed_at.elapsed();
    eprintln!(
        "64-rank run: rank 37 failed {:.1} s after Slurm's start, the run ended {took:.1?} later",
        (failed_at - started).as_secs_f64()
    );
    assert!(
        took < Duration::from_secs(30),
        "the run ended {took:?} after rank 37 failed\n{log}"
    );
    assert_eq!(info["JobState"], "FAILED", "{log}");
    assert_eq!(
        info["ExitCode"], "5:0",
        "the failing rank's own code: {log}"
    );
    let nodes = expand_nodes(&info["NodeList"]);
    assert_eq!(nodes.len(), 64, "{info:?}");
    assert!(
        log.contains(&format!(
            "rank 37 on {} exited with code 5, the first to fail",
            nodes[37]
        )),
        "{log}"
    );
    assert_eq!(
        log.matches("] setup-seen").count(),
        64,
        "every rank ran after its node's setup:\n{log}"
    );
    assert_eq!(job.state()["exit_code"], 5);
    assert_eq!(
        processes_with(&["sleep 4646.5"]),
        Vec::<u32>::new(),
        "the other ranks are gone"
    );
    assert_clean(&job);
}

#[test]
fn a_node_killed_in_a_32_node_ray_run_is_found_and_reported() {
    let n = ray_nodes();
    let Some((lab, _turn, _alone)) = lab_scale(n) else {
        return;
    };
    let job = launch_scale(
        lab,
        &lab.workdir("scalekill"),
        "scalekill",
        n,
        &["--command", "echo command-started; sleep 600"],
    );
    wait_for_log_while_it_runs(&job, "\ncommand-started", Duration::from_secs(600));
    let nodes = expand_nodes(&crate::harness::scontrol_job(&job.id)["NodeList"]);
    assert_eq!(nodes.len(), n, "{nodes:?}");
    // A worker past the middle of the list (the head is the first).
    let victim = nodes[n * 2 / 3].clone();
    let killed_at = Instant::now();
    let dead = DeadNode::kill(&victim);
    let state = job.log.with_extension("state.json");
    while !state.exists() {
        assert!(
            killed_at.elapsed() < Duration::from_secs(90),
            "no final state 90 s after {victim} died\nlog:\n{}",
            job.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let took = killed_at.elapsed();
    let log = job.log_text();
    eprintln!("{n}-node Ray run: {victim} found dead {took:.1?} after the kill");
    let state = job.state();
    assert_eq!(state["ending"], "node-failed", "{log}");
    let message = state["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("no heartbeat from {victim} for")),
        "{message}\n{log}"
    );
    assert!(
        took < Duration::from_secs(60),
        "the run ended {took:?} after {victim} died\n{log}"
    );
    revive_and_check(&job, dead);
}
