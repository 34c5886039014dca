//! Runs at scale on the lab's `scale` partition (`cluster.sh up 8 2 --scale 64`: 64 small nodes
//! beside the usual lab): a Ray run on 32 nodes with a task on each, a `--per-node` run of 64
//! ranks with a setup on each and one rank failing, a node killed in a 32-node Ray run, an
//! elastic cluster grown to 16 worker jobs at once, a cluster with 1,000 jobs in its queue;
//! and, with no cluster, bad input at scale (`bad_input`) and `status` of 1,000 runs.
//!
//! Each holds the partition alone (a 32-node Ray start is minutes of CPU on the lab's 2 cores),
//! one after another: a step of their own (`bash tests/step.sh scale`, run by .ci/run), not
//! tests/run.sh's, which skips them on purpose (`RAYSLURM_TEST_SCALE=0`). No timing is asserted
//! but the loose bounds of a failure's report; docs/scale.md has the figures.

mod bad_input;
mod e2e_elastic_scale;
mod e2e_queue_1000;
mod e2e_scale;
mod status_1000;

use std::sync::{Mutex, MutexGuard, PoisonError};

use std::path::Path;
use std::time::Duration;

use crate::harness::{Job, Lab, Turn, lab, launch_in, skip, this_test};

/// How many nodes the Ray tests take (32 unless this says otherwise): fewer to see that they
/// pass where Ray can start on the lab's 2 cores (docs/scale.md: at 32 every worker's raylet
/// gives up on its dashboard agent while all start at once).
const RAY_NODES: &str = "RAYSLURM_TEST_SCALE_RAY_NODES";

/// Ray's own wait for a node to register (`RAY_raylet_start_wait_time_s`, 30 s), when this
/// names one: unset by default, since a larger one only delays the failure seen at 32 nodes (a
/// raylet that died stays unregistered however long `ray start` waits; docs/scale.md).
const RAY_START_WAIT: &str = "RAYSLURM_TEST_SCALE_RAY_START_WAIT_S";

/// The node count of the Ray tests: [`RAY_NODES`], else 32.
fn ray_nodes() -> usize {
    std::env::var(RAY_NODES)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

/// The lab and the scale partition, held alone, for a test that needs `nodes` of its nodes;
/// unless `RAYSLURM_TEST_SCALE=0` leaves the test to its own step. A lab without that many
/// scale nodes: skipped loudly, or a failure under CI.
fn lab_scale(nodes: usize) -> Option<(&'static Lab, Turn, MutexGuard<'static, ()>)> {
    static SCALE: Mutex<()> = Mutex::new(());
    let (lab, turn) = lab()?;
    if lab.scale_nodes.len() < nodes {
        let test = this_test();
        let why = format!(
            "the test cluster has {} scale node(s), not {nodes} \
             (run `bash tests/cluster/cluster.sh up 8 2 --scale 64`, or bash tests/step.sh scale)",
            lab.scale_nodes.len()
        );
        skip(&test, &why, None);
        return None;
    }
    let alone = SCALE.lock().unwrap_or_else(PoisonError::into_inner);
    Some((lab, turn, alone))
}

/// Launches `args` from `dir` on `nodes` nodes of the scale partition, with a ready timeout of
/// 5 minutes (a 32-node Ray start is about 2 minutes of CPU on the lab's 2 cores; the bootstrap
/// gives `ray start` a third of it for each of its tries) and Ray's own start wait where
/// [`RAY_START_WAIT`] names one.
fn launch_scale(lab: &Lab, dir: &Path, name: &str, nodes: usize, args: &[&str]) -> Job {
    let n = nodes.to_string();
    let mut argv = vec![
        "-p",
        &lab.scale_partition,
        "-n",
        &n,
        "--time",
        "20",
        "--ready-timeout",
        "300",
    ];
    let ray_wait = std::env::var(RAY_START_WAIT)
        .ok()
        .map(|s| format!("RAY_raylet_start_wait_time_s={s}"));
    if let Some(wait) = &ray_wait {
        argv.extend(["--env", wait]);
    }
    argv.extend_from_slice(args);
    launch_in(lab, dir, name, &argv)
}

/// Waits until the job's log holds `needle`, failing at once, with the log, when the run ends
/// first (a run that fails to start never prints it), or when `limit` of its running passes.
fn wait_for_log_while_it_runs(job: &Job, needle: &str, limit: Duration) {
    let started = job.wait_started();
    let state = job.log.with_extension("state.json");
    loop {
        let log = job.log_text();
        if log.contains(needle) {
            return;
        }
        assert!(!state.exists(), "the run ended before `{needle}`:\n{log}");
        assert!(
            started.elapsed() < limit,
            "no `{needle}` within {limit:?}:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}
