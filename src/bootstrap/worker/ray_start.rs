//! A worker node's `ray start`, tried again when it fails: on a loaded node (many Ray nodes
//! starting at once, a slow filesystem) one worker's `ray start` can give up ("The current node
//! timed out during startup") where a second try succeeds, and without another try one slow
//! node ends a run of hundreds. Up to [`TRIES`] tries, each after what the failed one left is
//! stopped and its temp root removed, with a pause that grows with the try and differs from
//! node to node, over a window that grows with the node count (2 s a node, at most a minute) (so that the nodes that failed
//! together, as many nodes starting at once on a slow shared filesystem do, do not all try
//! again at once). A try is over as soon as its raylet has exited: Ray's raylet aborts when its
//! dashboard agent is slow to start (a fixed wait of Ray's), and `ray start` would only notice
//! when its own wait for the node ends, minutes later. The head's `--ready-timeout` still
//! bounds it all: when it passes the head says stop, and the worker stops trying.

use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::kept_logs::session_logs;
use crate::bootstrap::marked::{self, RunMark};
use crate::bootstrap::node::{RAY_STOP_GRACE, TICK, say};
use crate::bootstrap::ray_auth::RayAuth;
use crate::bootstrap::ray_node::{NodeRole, TempRoot, start_node};
use crate::bootstrap::signals;
use crate::handoff::cluster::ClusterOptions;
use crate::sys::process::describe_status;

/// How many times a worker tries to start Ray.
pub(super) const TRIES: u32 = 3;

/// What a worker's Ray joins, and how its processes are found.
pub(super) struct Joining<'a> {
    pub(super) head: &'a str,
    pub(super) ip: IpAddr,
    pub(super) mark: &'a str,
    pub(super) auth: &'a RayAuth,
}

/// Why one try did not start Ray.
enum Failed {
    /// The head said stop (or a signal came): no other try.
    Stopped,
    /// Ray could not be started at all (no `ray`, no free port): another try would fail alike.
    Cannot(String),
    /// `ray start` ran and failed: worth another try.
    Exited(String),
}

/// Starts the node's Ray and has it join `to.head`, trying again after a failed `ray start`
/// while tries are left and the head has not said stop; the last failure otherwise.
pub(super) fn start_with_tries(
    alloc: &Allocation,
    cluster: &ClusterOptions,
    to: &Joining,
    told_to_stop: &AtomicBool,
    temp_slot: &mut Option<TempRoot>,
) -> Result<(), String> {
    let node = &alloc.node;
    let stopped =
        || told_to_stop.load(Ordering::SeqCst) || signals::take().into_iter().any(signals::stops);
    let mut tried = 0;
    loop {
        tried += 1;
        let why = match try_once(alloc, cluster, to, &stopped, temp_slot) {
            Ok(()) => return Ok(()),
            Err(Failed::Stopped) => return Err("stopped while Ray was starting".to_owned()),
            Err(Failed::Cannot(why)) => return Err(why),
            Err(Failed::Exited(why)) => why,
        };
        let Some(pause) = pause_before(tried + 1, node, alloc.nodes.len()) else {
            return Err(why);
        };
        say(
            node,
            format!(
                "warning: {why}\nRay's start on {node} failed (try {tried} of {TRIES}): trying again in {:.1} s",
                pause.as_secs_f64()
            ),
        );
        // What the failed try left: its daemons (by the mark, or a file held in its temp root).
        let left = RunMark {
            mark: to.mark.to_owned(),
            temp_root: temp_slot.as_ref().map(|t| t.path.clone()),
        };
        marked::stop_all(&left, RAY_STOP_GRACE);
        if let Some(temp) = temp_slot.take() {
            temp.remove();
        }
        let until = Instant::now() + pause;
        while Instant::now() < until {
            if stopped() {
                return Err(why);
            }
            std::thread::sleep(TICK);
        }
    }
}

/// One `ray start`, waited for.
fn try_once(
    alloc: &Allocation,
    cluster: &ClusterOptions,
    to: &Joining,
    stopped: &dyn Fn() -> bool,
    temp_slot: &mut Option<TempRoot>,
) -> Result<(), Failed> {
    let node = &alloc.node;
    let (mut start, _) = start_node(
        alloc,
        cluster,
        NodeRole::Worker(to.head),
        to.ip,
        to.mark,
        to.auth,
        temp_slot,
    )
    .map_err(Failed::Cannot)?;
    let run = RunMark {
        mark: to.mark.to_owned(),
        temp_root: temp_slot.as_ref().map(|t| t.path.clone()),
    };
    let mut raylet = RayletWatch::default();
    let status = loop {
        // A head that gave up (its own start failed, or the ready timeout passed) says stop;
        // `ray start` would otherwise wait for a dead head for many minutes.
        if stopped() {
            start.kill();
            return Err(Failed::Stopped);
        }
        match start.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(TICK),
            Err(e) => {
                return Err(Failed::Cannot(format!(
                    "cannot wait for `{}`: {e}",
                    start.cmd
                )));
            }
        }
        if raylet.exited(&run) {
            start.kill();
            return Err(Failed::Exited(format!(
                "the raylet of node {node} exited while Ray was starting (`ray start` still waited for it); its last words:\n{}",
                raylet_tail(run.temp_root.as_deref())
            )));
        }
    };
    if status.success() {
        return Ok(());
    }
    Err(Failed::Exited(format!(
        "Ray on node {node} failed to start or to join the head at {} ({}):\n{}",
        to.head,
        describe_status(status),
        start.output_tail(15)
    )))
}

/// Whether the raylet a try started has exited: it was started (seen alive, or its log is
/// there: the raylet opens it itself as it starts) and no marked raylet is alive, at two looks
/// in a row. Looked at once a second (a walk of `/proc`); two looks, so that one look that
/// missed a live raylet does not end the try.
#[derive(Default)]
struct RayletWatch {
    seen: bool,
    gone_looks: u32,
    looked: Option<Instant>,
}

impl RayletWatch {
    fn exited(&mut self, run: &RunMark) -> bool {
        if self
            .looked
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return false;
        }
        self.looked = Some(Instant::now());
        let alive = marked::alive_named(run, "raylet");
        self.seen |= alive;
        let started = self.seen
            || run
                .temp_root
                .as_deref()
                .is_some_and(|root| raylet_log(root).exists());
        self.gone_looks = if started && !alive {
            self.gone_looks + 1
        } else {
            0
        };
        self.gone_looks >= 2
    }
}

/// The raylet's own log in a try's temp root (its session's, once Ray has made one).
fn raylet_log(temp_root: &std::path::Path) -> std::path::PathBuf {
    session_logs(temp_root)
        .unwrap_or_else(|| temp_root.join("session_latest/logs"))
        .join("raylet.out")
}

/// What the raylet's own log in the try's temp root says of its end: its failed check (Ray's
/// `Check failed: ...`, before the stack trace it prints) if it has one, else its last lines.
fn raylet_tail(temp_root: Option<&std::path::Path>) -> String {
    let Some(root) = temp_root else {
        return String::new();
    };
    let bytes = std::fs::read(raylet_log(root)).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if let Some(check) = lines.iter().rev().find(|l| l.contains("Check failed")) {
        return (*check).to_owned();
    }
    lines[lines.len().saturating_sub(5)..].join("\n")
}

/// The pause before try `next` (2 is the first retry), or none when no try is left: 2 s more
/// for each try, and a part that depends on the node, within a window of 2 s a node of the job
/// (at least 3 s, at most 60 s): the nodes that failed together start again a few at a time.
fn pause_before(next: u32, node: &str, nodes: usize) -> Option<Duration> {
    if !(2..=TRIES).contains(&next) {
        return None;
    }
    let window = (nodes as u64 * 2000).clamp(3000, 60_000);
    let mut hasher = std::hash::DefaultHasher::new();
    (node, next).hash(&mut hasher);
    let spread = hasher.finish() % window;
    Some(Duration::from_millis(2000 * u64::from(next - 1) + spread))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_tries_three_times_with_longer_pauses_that_differ_by_node() {
        assert_eq!(
            pause_before(1, "node1", 1),
            None,
            "the first try has no pause"
        );
        assert_eq!(pause_before(TRIES + 1, "node1", 1), None, "no fourth try");
        let second = pause_before(2, "node1", 1).unwrap();
        let third = pause_before(3, "node1", 1).unwrap();
        assert!((2000..5000).contains(&second.as_millis()), "{second:?}");
        assert!((4000..7000).contains(&third.as_millis()), "{third:?}");
        let pauses = |nodes: usize| -> Vec<u128> {
            (1..=nodes)
                .map(|k| {
                    pause_before(2, &format!("node{k}"), nodes)
                        .unwrap()
                        .as_millis()
                })
                .collect()
        };
        // 16 nodes spread their second tries over 32 s; 4,096 over a minute at most.
        let of_16 = pauses(16);
        let distinct: std::collections::BTreeSet<_> = of_16.iter().collect();
        assert!(distinct.len() > 12, "16 nodes pause alike: {of_16:?}");
        assert!(
            of_16.iter().all(|p| (2000..34_000).contains(p)),
            "{of_16:?}"
        );
        assert!(of_16.iter().any(|p| *p > 20_000), "{of_16:?}");
        assert!(pauses(4096).iter().all(|p| *p < 62_000));
    }
}
