//! The nodes' setups as the head follows them: which have not ended yet, `--setup-timeout`,
//! and when the last one ended, which is when `--ready-timeout` starts to count. A setup
//! (a clone, a venv, a download) may take far longer than Ray's start, so it has a clock of
//! its own; the barrier stays: nothing runs until every node's setup has succeeded.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The setups still running, and the clocks around them.
#[derive(Debug)]
pub(super) struct Setups {
    pending: BTreeSet<String>,
    started: Instant,
    limit: Option<Duration>,
    /// When the last setup ended (at once when there is none).
    ended: Option<Instant>,
}

impl Setups {
    /// The setups of `nodes`, started now; with `has_setup` false there are none.
    pub(super) fn new(nodes: &[String], has_setup: bool, limit: Option<u32>) -> Self {
        let now = Instant::now();
        Self {
            pending: if has_setup {
                nodes.iter().cloned().collect()
            } else {
                BTreeSet::new()
            },
            started: now,
            limit: limit.map(|s| Duration::from_secs(u64::from(s))),
            ended: (!has_setup).then_some(now),
        }
    }

    /// The setups start now (per-node runs start them once every node's IP is known).
    pub(super) fn restart_clock(&mut self) {
        self.started = Instant::now();
    }

    /// `node`'s setup succeeded.
    pub(super) fn done(&mut self, node: &str) {
        if self.pending.remove(node) && self.pending.is_empty() {
            self.ended = Some(Instant::now());
        }
    }

    pub(super) fn all_done(&self) -> bool {
        self.pending.is_empty()
    }

    /// Why the run fails if `--setup-timeout` has passed with setups still running.
    pub(super) fn overdue(&self, now: Instant) -> Option<String> {
        let limit = self.limit?;
        (!self.pending.is_empty() && now.duration_since(self.started) > limit).then(|| {
            format!(
                "the setup did not end within --setup-timeout {} s on: {} (its output is in the log; pass a longer --setup-timeout)",
                limit.as_secs(),
                self.pending.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
    }

    /// Whether `timeout` (`--ready-timeout`) has passed since the last setup ended; never
    /// while a setup runs.
    pub(super) fn ready_overdue(&self, timeout: Duration, now: Instant) -> bool {
        self.ended.is_some_and(|t| now.duration_since(t) > timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes() -> Vec<String> {
        vec!["n1".to_owned(), "n2".to_owned()]
    }

    #[test]
    fn the_ready_clock_starts_when_the_last_setup_ends() {
        let mut s = Setups::new(&nodes(), true, None);
        let later = Instant::now() + Duration::from_secs(1000);
        assert!(!s.ready_overdue(Duration::from_secs(5), later));
        assert_eq!(s.overdue(later), None, "no limit without --setup-timeout");
        s.done("n1");
        assert!(!s.all_done());
        s.done("n2");
        assert!(s.all_done());
        assert!(!s.ready_overdue(Duration::from_secs(5), Instant::now()));
        assert!(s.ready_overdue(Duration::from_secs(5), later));
    }

    #[test]
    fn without_setup_the_ready_clock_runs_at_once() {
        let s = Setups::new(&nodes(), false, Some(1));
        assert!(s.all_done());
        let later = Instant::now() + Duration::from_secs(6);
        assert!(s.ready_overdue(Duration::from_secs(5), later));
        assert_eq!(s.overdue(later), None);
    }

    #[test]
    fn the_setup_timeout_names_the_nodes_still_setting_up() {
        let mut s = Setups::new(&nodes(), true, Some(10));
        s.done("n1");
        assert_eq!(s.overdue(Instant::now()), None);
        let why = s.overdue(Instant::now() + Duration::from_secs(11)).unwrap();
        assert!(
            why.starts_with("the setup did not end within --setup-timeout 10 s on: n2 "),
            "{why}"
        );
    }
}
