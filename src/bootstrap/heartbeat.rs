//! Worker nodes' heartbeats, so that a node that dies or hangs (crashed, network gone, slurmd
//! gone) is noticed in seconds. Slurm itself notices only after `SlurmdTimeout` (300 s by
//! default), and until then the worker step's `srun` simply waits on the dead node.
//!
//! Every worker prints a line on the step's stdout every [`BEAT_EVERY`] from its first moment,
//! on a thread of its own (so a node busy starting Ray still beats), and a last line when it
//! exits. The head notes each node's last line; a node silent for [`SILENCE_LIMIT`] that has
//! not said goodbye is dead to the run.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often a worker says it is alive.
pub(super) const BEAT_EVERY: Duration = Duration::from_secs(2);
/// Silence after which a worker node counts as dead: six missed beats.
pub(super) const SILENCE_LIMIT: Duration = Duration::from_secs(12);
/// Silence allowed before a node's first heartbeat: its bootstrap must first be started by
/// Slurm there (a site's task prolog, a slow filesystem to load the binary from), which can
/// take longer than a beat; still well inside the 30 s in which a dead node must be noticed.
pub(super) const FIRST_CONTACT_LIMIT: Duration = Duration::from_secs(20);
/// `RAYSLURM-ALIVE <node>`.
pub(super) const ALIVE_PREFIX: &str = "RAYSLURM-ALIVE";
/// `RAYSLURM-GONE <node>`: the worker is exiting; its silence from now on means nothing.
pub(super) const GONE_PREFIX: &str = "RAYSLURM-GONE";

/// Starts beating for `node` on a thread of its own, for as long as the process lives.
pub(super) fn start_beating(node: String) {
    std::thread::spawn(move || {
        loop {
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{ALIVE_PREFIX} {node}")
                .and_then(|()| out.flush())
                .is_err()
            {
                return;
            }
            drop(out);
            std::thread::sleep(BEAT_EVERY);
        }
    });
}

/// Says goodbye: the head stops watching this node.
pub(super) fn say_gone(node: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{GONE_PREFIX} {node}").and_then(|()| out.flush());
}

/// The node a heartbeat line speaks of, and whether it is a goodbye.
pub(super) fn parse(line: &str) -> Option<(&str, bool)> {
    let (prefix, node) = line.trim().split_once(' ')?;
    match prefix {
        ALIVE_PREFIX => Some((node, false)),
        GONE_PREFIX => Some((node, true)),
        _ => None,
    }
}

/// The last sign of life of every worker node the head still watches, shared between the
/// thread that reads the step's output and the head's loops.
#[derive(Debug, Clone)]
pub(super) struct Liveness {
    /// Each node's last sign of life, and whether it has spoken at all yet.
    last_seen: Arc<Mutex<HashMap<String, (Instant, bool)>>>,
}

impl Liveness {
    /// Watches `nodes`, each counted as seen at `since` (when the step was started).
    pub(super) fn new(nodes: &[String], since: Instant) -> Self {
        Self {
            last_seen: Arc::new(Mutex::new(
                nodes.iter().map(|n| (n.clone(), (since, false))).collect(),
            )),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, bool)>> {
        self.last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `node` said something at `at`.
    pub(super) fn seen(&self, node: &str, at: Instant) {
        if let Some(last) = self.map().get_mut(node) {
            *last = (at, true);
        }
    }

    /// `node` is exiting: its silence no longer counts.
    pub(super) fn gone(&self, node: &str) {
        self.map().remove(node);
    }

    /// The node silent for longest, if it has been silent for more than `limit` at `now` (or,
    /// not having spoken yet, for more than [`FIRST_CONTACT_LIMIT`] too).
    pub(super) fn silent(&self, now: Instant, limit: Duration) -> Option<(String, Duration)> {
        // Every tick, over every node: only the silent one's name is copied.
        self.map()
            .iter()
            .map(|(node, (last, spoke))| {
                let allowed = if *spoke {
                    limit
                } else {
                    limit.max(FIRST_CONTACT_LIMIT)
                };
                (node, now.saturating_duration_since(*last), allowed)
            })
            .filter(|(_, quiet, allowed)| quiet > allowed)
            .max_by_key(|(_, quiet, _)| *quiet)
            .map(|(node, quiet, _)| (node.clone(), quiet))
    }
}

/// What the head says of a silent node.
pub(super) fn silence_message(node: &str, quiet: Duration) -> String {
    format!(
        "no heartbeat from {node} for {} s: the node died, hung or lost its network",
        quiet.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(parse("RAYSLURM-ALIVE node3"), Some(("node3", false)));
        assert_eq!(parse("RAYSLURM-GONE node3\n"), Some(("node3", true)));
        assert_eq!(parse("RAYSLURM-READY 1 node3 10.0.0.1"), None);
        assert_eq!(parse("hello"), None);
    }

    #[test]
    fn a_node_silent_past_the_limit_is_named_and_a_gone_one_never() {
        let t0 = Instant::now();
        let nodes = vec!["n2".to_owned(), "n3".to_owned(), "n4".to_owned()];
        let live = Liveness::new(&nodes, t0);
        let limit = Duration::from_secs(12);
        live.seen("n2", t0 + Duration::from_secs(10));
        live.gone("n4");
        assert_eq!(live.silent(t0 + Duration::from_secs(12), limit), None);
        // n3 has not spoken yet: its start may be slow, up to the first-contact limit.
        assert_eq!(live.silent(t0 + Duration::from_secs(20), limit), None);
        let (node, quiet) = live.silent(t0 + Duration::from_secs(21), limit).unwrap();
        assert_eq!((node.as_str(), quiet.as_secs()), ("n3", 21));
        live.seen("n3", t0 + Duration::from_secs(13));
        assert_eq!(live.silent(t0 + Duration::from_secs(20), limit), None);
        // A node not watched is never reported, even if it speaks.
        live.seen("n9", t0);
        assert_eq!(
            live.silent(t0 + Duration::from_secs(24), limit).unwrap().0,
            "n2"
        );
    }
}
