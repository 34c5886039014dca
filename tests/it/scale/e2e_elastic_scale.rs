//! An elastic cluster on the scale partition grows to 16 worker jobs for work that needs 17
//! nodes at once, gives them back once idle, and leaves nothing after `down`.

use std::time::Duration;

use crate::clusters::lab_cluster::{exec_detached, rs, status_of, up_nodes, wait_queue};
use crate::elastic::e2e_elastic::{down, running, wait_workers};

/// A placement group of 17 bundles of 2 CPUs, one a node (`STRICT_SPREAD`), on nodes of 2 CPUs
/// (the scale nodes'): the head (one node) submits 16 worker jobs at once
/// (`--max-pending-workers 16`), a task runs in each bundle, on 17 hosts, and the worker jobs
/// are given back once idle.
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
    let work = "import ray, socket
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy as In
ray.init()
group = placement_group([{'CPU': 2}] * 17, strategy='STRICT_SPREAD')
ray.get(group.ready())
@ray.remote(num_cpus=2)
def host():
    return socket.gethostname()
hosts = [host.options(scheduling_strategy=In(group, placement_group_bundle_index=i)).remote() for i in range(17)]
print('hosts', len(set(ray.get(hosts))))";
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
    // Each given back once: when idle, not again when the cluster ends.
    let log = cluster.log_text();
    for (id, _) in &grown {
        let said = log
            .matches(&format!("giving back worker job {id} ("))
            .count();
        assert_eq!(said, 1, "worker job {id}: {log}");
    }
}
