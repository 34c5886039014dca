//! When a worker job goes away on Slurm's word, seen by the head from `squeue`'s end time of
//! each job (no signal needed: under a preemption's GraceTime, Slurm signals every step but the
//! batch script, where a worker runs): a preemption moves the end earlier; a time limit is the
//! end. What to do about one worker job is decided here (a pure function, tested): drain its
//! Ray node with the real deadline (the end) once preempted, or [`DRAIN_LEAD`] before its time
//! limit, and submit its replacement at once, or its type's `rollover` before the limit, so
//! that a cluster of short jobs keeps its capacity.

use chrono::NaiveDateTime;

use crate::handoff::worker_types::WorkerType;

/// Seconds before a worker job's time limit at which its node is drained: Ray Train and Tune
/// checkpoint by the deadline they are given.
pub(super) const DRAIN_LEAD: i64 = 60;

/// An end moved at least this much earlier is a preemption (Slurm's times are whole seconds).
const MOVED: i64 = 5;

/// Why a worker job goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// Slurm preempts it: its end is its grace time's.
    Preempted,
    /// Its time limit comes.
    TimeLimit,
}

/// What the head has seen and done of one running worker job's end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Watch {
    /// Its end when first seen running (`None`: no limit).
    first_end: Option<Option<NaiveDateTime>>,
    /// Why it goes, once known.
    pub(super) going: Option<Why>,
    pub(super) drained: bool,
    pub(super) replaced: bool,
}

/// What to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Step {
    /// Drain its node now, with this many seconds to the deadline.
    pub(super) drain: Option<(Why, i64)>,
    /// Submit a job of its type to take its place.
    pub(super) replace: bool,
}

/// What Slurm says of a running job's end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Seen {
    /// Its end as `squeue` shows it (`None`: no limit; Slurm shows no end for a job without
    /// one even once it is preempted).
    pub(super) end: Option<NaiveDateTime>,
    /// The end a preemption gives it (Slurm chose to preempt it: then, plus its GraceTime).
    pub(super) preempted_end: Option<NaiveDateTime>,
}

impl Watch {
    /// Takes what Slurm says of a running job's end, seen at `now`, and says what to do.
    pub(super) fn see(
        &mut self,
        seen: Seen,
        now: NaiveDateTime,
        kind: &WorkerType,
        replace_failed: bool,
    ) -> Step {
        let Seen { end, preempted_end } = seen;
        let first = *self.first_end.get_or_insert(end);
        let moved = match (first, end) {
            (Some(f), Some(e)) => (f - e).num_seconds() >= MOVED,
            (None, Some(_)) => true,
            _ => false,
        };
        let preempted = moved || preempted_end.is_some();
        let end = match (end, preempted_end) {
            (Some(e), Some(p)) => Some(e.min(p)),
            (e, p) => e.or(p),
        };
        let left = end.map(|e| (e - now).num_seconds());
        if preempted {
            self.going = Some(Why::Preempted);
        }
        let rollover = kind.rollover.map(i64::from);
        let mut step = Step {
            drain: None,
            replace: false,
        };
        if !self.replaced {
            let rolls = matches!((rollover, left), (Some(r), Some(l)) if l <= r);
            let replaces = if preempted {
                kind.preemptible || replace_failed
            } else {
                rolls
            };
            if replaces {
                self.replaced = true;
                step.replace = true;
                self.going.get_or_insert(Why::TimeLimit);
            }
        }
        // A type that rolls over drains when its replacement comes, if that is sooner.
        let lead = rollover.map_or(DRAIN_LEAD, |r| r.min(DRAIN_LEAD));
        if !self.drained
            && let Some(left) = left
            && (preempted || left <= lead)
        {
            let why = if preempted {
                Why::Preempted
            } else {
                Why::TimeLimit
            };
            self.drained = true;
            self.going.get_or_insert(why);
            step.drain = Some((why, left.max(0)));
        }
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(1_800_000_000 + s, 0)
            .unwrap()
            .naive_utc()
    }

    fn kind(preemptible: bool, rollover: Option<u32>) -> WorkerType {
        WorkerType {
            preemptible,
            rollover,
            ..WorkerType::plain()
        }
    }

    fn ends(end: Option<NaiveDateTime>) -> Seen {
        Seen {
            end,
            preempted_end: None,
        }
    }

    const NOTHING: Step = Step {
        drain: None,
        replace: false,
    };

    #[test]
    fn a_preemption_drains_with_its_grace_and_a_preemptible_type_is_replaced_at_once() {
        let mut w = Watch::default();
        let spot = kind(true, None);
        assert_eq!(w.see(ends(Some(at(3600))), at(0), &spot, false), NOTHING);
        assert_eq!(w.see(ends(Some(at(3600))), at(10), &spot, false), NOTHING);
        // Preempted at 20 with a GraceTime of 60 s.
        let step = w.see(ends(Some(at(80))), at(20), &spot, false);
        assert_eq!(
            step,
            Step {
                drain: Some((Why::Preempted, 60)),
                replace: true
            }
        );
        assert_eq!(w.going, Some(Why::Preempted));
        assert_eq!(
            w.see(ends(Some(at(80))), at(30), &spot, false),
            NOTHING,
            "once"
        );
    }

    #[test]
    fn a_job_without_a_limit_that_gets_an_end_is_preempted() {
        let mut w = Watch::default();
        let plain = kind(false, None);
        assert_eq!(w.see(ends(None), at(0), &plain, false), NOTHING);
        let step = w.see(ends(Some(at(70))), at(10), &plain, false);
        assert_eq!(step.drain, Some((Why::Preempted, 60)));
        assert!(!step.replace, "not preemptible, no --replace-failed");
        let mut w = Watch::default();
        w.see(ends(None), at(0), &plain, true);
        assert!(w.see(ends(Some(at(70))), at(10), &plain, true).replace);
    }

    #[test]
    fn a_preempted_job_without_a_limit_ends_with_its_grace() {
        let mut w = Watch::default();
        let spot = kind(true, None);
        assert_eq!(w.see(ends(None), at(0), &spot, false), NOTHING);
        let preempted = Seen {
            end: None,
            preempted_end: Some(at(70)),
        };
        assert_eq!(
            w.see(preempted, at(10), &spot, false),
            Step {
                drain: Some((Why::Preempted, 60)),
                replace: true
            }
        );
    }

    #[test]
    fn a_rollover_replaces_before_the_limit_and_the_drain_comes_at_its_lead() {
        let mut w = Watch::default();
        let short = kind(false, Some(120));
        assert_eq!(w.see(ends(Some(at(600))), at(0), &short, false), NOTHING);
        let step = w.see(ends(Some(at(600))), at(480), &short, false);
        assert_eq!(
            step,
            Step {
                drain: None,
                replace: true
            }
        );
        assert_eq!(w.see(ends(Some(at(600))), at(500), &short, false), NOTHING);
        assert_eq!(
            w.see(ends(Some(at(600))), at(545), &short, false).drain,
            Some((Why::TimeLimit, 55))
        );
        assert_eq!(w.going, Some(Why::TimeLimit));
    }

    #[test]
    fn without_rollover_the_limit_drains_and_replaces_nothing() {
        let mut w = Watch::default();
        let plain = kind(false, None);
        w.see(ends(Some(at(600))), at(0), &plain, false);
        assert_eq!(w.see(ends(Some(at(600))), at(500), &plain, false), NOTHING);
        assert_eq!(
            w.see(ends(Some(at(600))), at(541), &plain, false),
            Step {
                drain: Some((Why::TimeLimit, 59)),
                replace: false
            }
        );
    }
}
