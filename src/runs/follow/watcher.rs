//! The thread that asks squeue about the followed job, gently: once every 10 s while nothing
//! changes (sooner, but not within 2 s, when the log or the final state shows a change), less
//! often while the job pends or runs for long, with backoff while squeue fails, so a slow or
//! restarting slurmctld never stalls the log and many followers never load it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use crate::slurm::query::{self, Phase, QueryError, QueueEntry, Submission};

use super::MIN_POLL;

/// What the watcher thread saw.
pub(super) enum Observation {
    /// squeue answered: the job's line, or `None` if slurmctld no longer knows it (or has
    /// given its id to another job).
    Queue(Option<QueueEntry>),
    /// squeue failed; it will be asked again.
    Failing { error: String, retry_in: Duration },
    /// squeue cannot be run at all.
    Fatal(QueryError),
}

/// The thread that asks squeue about one job, gently. The job is known by its id and its
/// [`Submission`]: another job that has the id now is somebody else's.
pub(super) struct Watcher {
    pub(super) rx: Receiver<Observation>,
    stop: Arc<AtomicBool>,
    hurry: Arc<AtomicBool>,
}

impl Watcher {
    pub(super) fn spawn(job_id: String, run: Submission) -> Self {
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let hurry = Arc::new(AtomicBool::new(false));
        let (stop2, hurry2) = (Arc::clone(&stop), Arc::clone(&hurry));
        std::thread::spawn(move || {
            let mut last_call: Option<Instant> = None;
            let mut phase: Option<Phase> = None;
            let mut phase_since = Instant::now();
            let mut failures = 0u32;
            while !stop2.load(Ordering::SeqCst) {
                let due = last_call.is_none_or(|t| {
                    let since = t.elapsed();
                    since >= poll_interval(phase, phase_since.elapsed(), failures)
                        || (since >= MIN_POLL && hurry2.swap(false, Ordering::SeqCst))
                });
                if !due {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                last_call = Some(Instant::now());
                let observation = match query::squeue(&[&job_id]) {
                    Ok(entries) => {
                        failures = 0;
                        let entry = query::own_line(&entries, &job_id)
                            .filter(|e| e.is_job_of(&run))
                            .cloned();
                        let now = entry.as_ref().map(|e| e.state.phase());
                        if now != phase {
                            phase = now;
                            phase_since = Instant::now();
                        }
                        Observation::Queue(entry)
                    }
                    Err(e @ QueryError::Missing(_)) => Observation::Fatal(e),
                    Err(e) => {
                        failures += 1;
                        Observation::Failing {
                            error: e.to_string(),
                            retry_in: poll_interval(phase, phase_since.elapsed(), failures),
                        }
                    }
                };
                let last = matches!(
                    observation,
                    Observation::Fatal(_) | Observation::Queue(None)
                ) || matches!(&observation, Observation::Queue(Some(e)) if e.state.phase() == Phase::Ended);
                if tx.send(observation).is_err() || last {
                    return;
                }
            }
        });
        Self { rx, stop, hurry }
    }

    /// Asks squeue again as soon as the 2 s limit allows (the log appeared, the job finished).
    pub(super) fn hurry(&self) {
        self.hurry.store(true, Ordering::SeqCst);
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // The thread is not joined: it may be inside a squeue call that takes a while.
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The pause before the next squeue call while nothing changes: 10 s, growing to 30 s while the
/// job pends or runs for long (a tenth of the time in its phase), and doubling from 10 s to 30 s
/// while squeue fails. A change seen elsewhere (the log growing while the job pends, the final
/// state written) asks sooner, but never within [`MIN_POLL`] of the last call: one follower
/// costs slurmctld at most 6 calls a minute, 2 once the job has run for 5 minutes.
pub(super) fn poll_interval(phase: Option<Phase>, in_phase: Duration, failures: u32) -> Duration {
    if failures > 0 {
        let backoff = QUIET_POLL.saturating_mul(1 << (failures - 1).min(5));
        return backoff.min(LONG_POLL);
    }
    match phase {
        Some(Phase::Pending | Phase::Running) => (in_phase / 10).clamp(QUIET_POLL, LONG_POLL),
        _ => QUIET_POLL,
    }
}

/// The pause between squeue calls while nothing changes, at first and at most.
const QUIET_POLL: Duration = Duration::from_secs(10);
const LONG_POLL: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn never_more_than_one_squeue_every_ten_seconds_unless_hurried() {
        for phase in [
            None,
            Some(Phase::Pending),
            Some(Phase::Running),
            Some(Phase::Ending),
        ] {
            for secs in [0, 1, 5, 60, 600, 86_400] {
                for failures in [0, 1, 9] {
                    let d = poll_interval(phase, Duration::from_secs(secs), failures);
                    assert!(d >= QUIET_POLL, "{phase:?} {secs} {failures}: {d:?}");
                    assert!(d <= LONG_POLL, "{phase:?} {secs} {failures}: {d:?}");
                }
            }
        }
    }

    #[test]
    pub(super) fn backs_off_while_pending_or_running_long() {
        for phase in [Phase::Pending, Phase::Running] {
            let after = |s| poll_interval(Some(phase), Duration::from_secs(s), 0);
            assert_eq!(after(0), Duration::from_secs(10));
            assert_eq!(after(60), Duration::from_secs(10));
            assert_eq!(after(200), Duration::from_secs(20));
            assert_eq!(after(3600), Duration::from_secs(30));
        }
    }

    #[test]
    pub(super) fn backs_off_while_squeue_fails() {
        let failing = |n| poll_interval(Some(Phase::Running), Duration::ZERO, n);
        assert_eq!(failing(1), Duration::from_secs(10));
        assert_eq!(failing(2), Duration::from_secs(20));
        assert_eq!(failing(3), Duration::from_secs(30));
        assert_eq!(failing(50), Duration::from_secs(30));
    }
}
