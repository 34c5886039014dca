//! Telling a run's job from a later job given the same id: the script it runs and when it
//! was submitted.

use std::path::PathBuf;

use chrono::{DateTime, FixedOffset, Local, LocalResult, NaiveDateTime, TimeDelta, TimeZone};

/// How far apart the submit time Slurm reports for a job id and the one in a run's record may
/// be for the two to be the same job. `launch` reads its own clock just after `sbatch` returns,
/// Slurm keeps whole seconds, and the login node's and the controller's clocks may differ a
/// little; a job that was given the same id later (a rebuilt cluster, job ids wrapping around)
/// was submitted long after.
pub(crate) const SAME_JOB_SLACK: TimeDelta = TimeDelta::seconds(60);

/// Whether a job Slurm reports as submitted at `slurm` is the one a run recorded as submitted
/// at `recorded`. Slurm's clients print times in the local time of the host they run on (ours),
/// without an offset. A time unknown on either side cannot tell two jobs apart, so it counts
/// as the same job, as before submit times were asked.
pub(super) fn same_submission(
    slurm: Option<NaiveDateTime>,
    recorded: Option<DateTime<FixedOffset>>,
) -> bool {
    same_submission_in(&Local, slurm, recorded)
}

/// [`same_submission`] with Slurm's times read in `tz`.
fn same_submission_in<Tz: TimeZone>(
    tz: &Tz,
    slurm: Option<NaiveDateTime>,
    recorded: Option<DateTime<FixedOffset>>,
) -> bool {
    let (Some(slurm), Some(recorded)) = (slurm, recorded) else {
        return true;
    };
    let near = |t: DateTime<Tz>| (t.fixed_offset() - recorded).abs() <= SAME_JOB_SLACK;
    match tz.from_local_datetime(&slurm) {
        LocalResult::Single(t) => near(t),
        // Clocks went back: the local time names two instants.
        LocalResult::Ambiguous(first, second) => near(first) || near(second),
        // Clocks went forward over it: no clock printed it, so it tells nothing.
        LocalResult::None => true,
    }
}

/// What tells a run's job from a later job given the same id: the script `launch` wrote for
/// it (a new name every launch) and when it was submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Submission {
    pub(crate) script: PathBuf,
    pub(crate) at: Option<DateTime<FixedOffset>>,
}

#[cfg(test)]
mod tests {
    use super::super::samples::{at, recorded};
    use super::*;
    use crate::slurm::query::parse_squeue_line;

    #[test]
    fn same_job_within_the_slack() {
        let utc = FixedOffset::east_opt(0).unwrap();
        let slurm = Some(at(2026, 11, 22, 3, 16, 18));
        // launch reads its clock just after sbatch returns, and clocks differ a little.
        for text in [
            "2026-11-22T03:16:18+00:00",
            "2026-11-22T03:16:19.734+00:00",
            "2026-11-22T03:17:18+00:00",
            "2026-11-22T03:15:18+00:00",
        ] {
            assert!(
                same_submission_in(&utc, slurm, Some(recorded(text))),
                "{text}"
            );
        }
        // The same instant, recorded by a login node in another zone than squeue prints.
        let cet = FixedOffset::east_opt(3600).unwrap();
        let recorded_utc = Some(recorded("2026-11-22T02:16:20+00:00"));
        assert!(same_submission_in(&cet, slurm, recorded_utc));
        assert!(!same_submission_in(&utc, slurm, recorded_utc));
    }

    #[test]
    fn another_job_outside_the_slack() {
        let utc = FixedOffset::east_opt(0).unwrap();
        let slurm = Some(at(2026, 11, 22, 3, 16, 18));
        for text in [
            // The job with this id now was submitted after the run's (the usual reuse)...
            "2026-11-22T03:15:17+00:00",
            "2026-11-19T11:00:00+00:00",
            // ...or before it (a clock set wrong, ids reused in a strange order).
            "2026-11-22T03:17:19+00:00",
            "2027-01-02T03:16:18+00:00",
        ] {
            assert!(
                !same_submission_in(&utc, slurm, Some(recorded(text))),
                "{text}"
            );
        }
    }

    #[test]
    fn unknown_submit_time_is_the_same_job() {
        let utc = FixedOffset::east_opt(0).unwrap();
        let run = Some(recorded("2026-11-22T03:16:18+00:00"));
        assert!(same_submission_in(&utc, None, run));
        assert!(same_submission_in(
            &utc,
            Some(at(2020, 1, 1, 0, 0, 0)),
            None
        ));
        let e = parse_squeue_line("12|RUNNING|None|0:07|2|N/A|node1").unwrap();
        assert!(e.is_job_of(&Submission {
            script: PathBuf::from("/x.sh"),
            at: run
        }));
    }
}
