//! An elastic cluster on the scale partition grows to 16 worker jobs for work that needs 17
//! nodes at once, gives them back once idle, and leaves nothing after `down`.

use std::time::Duration;

use crate::clusters::lab_cluster::{exec_detached, rs, status_of, up_nodes, wait_queue};
use crate::elastic::e2e_elastic::{down, running, wait_workers};

/// 17 tasks of 1 CPU on nodes of 1 CPU, each holding its CPU until Ray counts 17 nodes alive:
/// the head (one node) submits 16 worker jobs at once (`--max-pending-workers 16`), every task
/// runs on a node of its own, and the worker jobs are given back once idle.
#[test]
fn an_elastic_cluster_grows_to_16_worker_jobs_for_work_that_needs_17_nodes() {
    let Some((lab, _turn, _alone)) = super::lab_scale(17) else {
        return;
    };
    let dir = lab.workdir("elastic16");
    let name = format!("el16x{}", std::process::id());
    let cluster = up_nodes(
        lab,
        &dir,
        &name,
        "1",
        &[
            "-p",
            &lab.scale_partition,
            "--max-nodes",
            "17",
            "--max-pending-workers",
            "16",
            "--worker-idle-timeout",
            "20",
            "--ready-timeout",
            "300",
        ],
    );
    let work = "import ray, socket, time
ray.init()
@ray.remote(num_cpus=1)
def host():
    while sum(n['Alive'] for n in ray.nodes()) < 17:
        time.sleep(1)
    return socket.gethostname()
print('hosts', len(set(ray.get([host.remote() for _ in range(17)]))))";
    let id = exec_detached(&dir, &name, &["--", "python", "-c", work]);
    let grown = wait_workers(
        &name,
        Duration::from_secs(900),
        "16 worker jobs running",
        |j| running(j) >= 16,
    );
    assert_eq!(grown.len(), 16, "no more than asked: {grown:?}");
    wait_queue(&dir, &name, Duration::from_secs(900), |s| {
        status_of(s, id) == "SUCCEEDED"
    });
    let (code, stdout, stderr) = rs(&dir, &["logs", &name, &id.to_string()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("hosts 17"), "{stdout}");
    wait_workers(
        &name,
        Duration::from_secs(240),
        "every worker job given back once idle",
        <[_]>::is_empty,
    );
    down(&dir, &name, &cluster);
}
