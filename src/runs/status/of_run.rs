//! What became of a run: the one place the sources (the queue, the final state, `scontrol`,
//! `sacct`, the record) are weighed against each other, for `status`, `cancel` and `--follow`.

use std::path::Path;

use super::JobStatus;
use crate::handoff::final_state::FinalState;
use crate::runs::store::{RecordedEnd, RunRecord};
use crate::slurm::query::{self, Phase, QueueEntry};

/// What Slurm's queue shows under a run's job id.
#[derive(Debug, Clone, Copy)]
pub(crate) enum InQueue<'a> {
    /// The run's own job (an array job's first element speaks for it).
    Own(&'a QueueEntry),
    /// Another job has the id now: ids are reused, and `scontrol` or `sacct` would describe
    /// that job, not the run's.
    Other,
    /// slurmctld no longer knows the id; with what accounting said of it, where it was asked
    /// already (`status` asks once for every such run, [`super::gather`]).
    Gone(Option<&'a [query::SacctEntry]>),
}

impl<'a> InQueue<'a> {
    /// Finds the run's job among squeue's answer for its id.
    pub(crate) fn find(entries: &'a [QueueEntry], record: &RunRecord) -> Self {
        match query::own_line(entries, &record.job_id) {
            Some(entry) if entry.is_job_of(&record.submission()) => Self::Own(entry),
            Some(_) => Self::Other,
            None => Self::Gone(None),
        }
    }
}

/// What became of a run, from what the queue shows under its id and the bootstrap's final state
/// (if it wrote one): the one place this is worked out, for `status`, `cancel` and `--follow`.
///
/// A job Slurm is still cleaning up (`COMPLETING`: a dead node keeps it there for minutes)
/// whose bootstrap has written its final state has ended as that state says. An ended job's
/// exit code is the command's own from the final state, else Slurm's from `scontrol`. A job
/// Slurm has forgotten (or whose id another job has now) is described by the final state, else
/// by `sacct` where accounting answers, else as `ENDED`. An ended run without a final state
/// says so ([`NO_FINAL_STATE`]): its state is only what Slurm knows, never a guess.
pub(crate) fn of_run(
    record: &RunRecord,
    in_queue: InQueue<'_>,
    final_state: Option<&FinalState>,
) -> JobStatus {
    let status = of_run_once(record, in_queue, final_state);
    JobStatus {
        attempts: status
            .attempts
            .or_else(|| final_state.map(FinalState::attempt_count)),
        ..status
    }
}

/// [`of_run`], but for the attempts.
fn of_run_once(
    record: &RunRecord,
    in_queue: InQueue<'_>,
    final_state: Option<&FinalState>,
) -> JobStatus {
    // A requeued attempt's end is not the run's while Slurm has the job again.
    let requeued = final_state.filter(|f| f.last().requeued);
    if let (InQueue::Own(entry), Some(f)) = (&in_queue, requeued) {
        return JobStatus {
            message: Some(format!(
                "attempt {} (requeued after {})",
                f.attempt_count(),
                f.last().ending.as_str()
            )),
            attempts: Some(f.attempt_count()),
            ..JobStatus::from_queue(entry, None, None)
        };
    }
    match in_queue {
        InQueue::Own(entry) => match (entry.state.phase(), final_state) {
            // The bootstrap has written how the attempt ended (a requeued one is above): the
            // run is over, though Slurm may show it RUNNING while the nodes finish their
            // teardown (the state is written before the log copies) or COMPLETING.
            (Phase::Ending | Phase::Running, Some(f)) => JobStatus {
                elapsed: entry.elapsed,
                nodes: entry.nodes,
                nodelist: entry.nodelist.clone(),
                ..JobStatus::from_final_state(f)
            },
            (Phase::Ended, None) => {
                if never_ran(entry) {
                    // `ExitCode=0:0` of a job cancelled while pending is no exit code.
                    return JobStatus {
                        message: Some(NEVER_STARTED.to_owned()),
                        ..JobStatus::from_queue(entry, None, None)
                    };
                }
                let exit = query::scontrol_job(&record.job_id)
                    .ok()
                    .flatten()
                    .and_then(|j| j.exit);
                JobStatus {
                    message: Some(without_final_state(&record.log)),
                    ..JobStatus::from_queue(entry, None, exit)
                }
            }
            _ => JobStatus::from_queue(entry, final_state, None),
        },
        InQueue::Other => final_state.map_or_else(JobStatus::gone, JobStatus::from_final_state),
        InQueue::Gone(accounting) => match final_state {
            Some(f) => JobStatus::from_final_state(f),
            None => JobStatus {
                message: Some(without_final_state(&record.log)),
                ..accounting
                    .map_or_else(|| query::sacct(&[record.job_id.as_str()]), <[_]>::to_vec)
                    .iter()
                    .find(|e| e.job_id == record.job_id && e.is_submitted_at(record.submitted()))
                    .map_or_else(JobStatus::gone, JobStatus::from_sacct)
            },
        },
    }
}

/// What is said of an ended run whose bootstrap wrote no final state: its exit code, if any,
/// is Slurm's, and how the run ended is not known.
pub(crate) const NO_FINAL_STATE: &str = "ended without a final state";

/// What is said of a run that ran and ended without a final state: [`NO_FINAL_STATE`], and,
/// when its log is empty or gone too (the launcher makes it empty; the bootstrap's first words
/// go in it), that the nodes could not write into the run's directory: what a login node whose
/// filesystem the compute nodes do not share gives (Slurm cannot open the job's output there,
/// and the job fails before anything runs).
fn without_final_state(log: &Path) -> String {
    if std::fs::metadata(log).is_ok_and(|m| m.len() > 0) {
        return NO_FINAL_STATE.to_owned();
    }
    let dir = log.parent().unwrap_or(log);
    format!(
        "{NO_FINAL_STATE}, and its log is empty: its nodes could not write `{}`; \
         rayslurm's state directory must be on a filesystem the compute nodes share with \
         this login node (set RAYSLURM_STATE_DIR to one)",
        dir.display()
    )
}

/// What is said of a job that ended without ever running (cancelled while pending, say).
const NEVER_STARTED: &str = "ended before it started";

/// A run whose end its record keeps: as recorded, with what the record does not keep, so that
/// `status` says the same after the first time: the bootstrap's message from its final state,
/// else that the job never started or that it ended without a final state.
pub(crate) fn of_recorded(
    end: &RecordedEnd,
    log: &Path,
    final_state: Option<&FinalState>,
) -> JobStatus {
    let status = JobStatus::from_record(end);
    let message = match final_state {
        Some(f) => f.last().message.clone(),
        None if status.never_ran() => Some(NEVER_STARTED.to_owned()),
        None => Some(without_final_state(log)),
    };
    JobStatus {
        message,
        attempts: final_state.map(FinalState::attempt_count),
        ..status
    }
}

/// Slurm shows the job ended with no node and no time run: it never started (cancelled while
/// pending, say).
fn never_ran(entry: &QueueEntry) -> bool {
    entry.nodelist.is_none() && entry.elapsed == Some(0)
}

#[cfg(test)]
mod tests {
    use super::super::samples::{attempt, entry, final_state, record};
    use super::*;
    use crate::handoff::final_state::{Attempt, Ending};
    use crate::runs::store::Source;

    /// A requeued attempt wrote its end, and Slurm has the job back: the run goes on.
    #[test]
    fn a_requeued_attempts_end_is_not_the_runs() {
        let requeued = Attempt {
            requeued: true,
            ..attempt(143, Ending::TimeLimit)
        };
        let f = FinalState::after_attempt(None, "7", "node1", requeued);
        for line in [
            "7|COMPLETING|None|1:00|1|node1",
            "7|PENDING|BeginTime|0:00|1|",
            "7|RUNNING|None|0:05|1|node2",
        ] {
            let e = entry(line);
            let s = of_run(&record(), InQueue::Own(&e), Some(&f));
            assert_ne!(s.phase, Some(Phase::Ended), "{line}");
            assert_eq!(s.exit_code, None, "{line}");
            assert_eq!(s.attempts, Some(2), "{line}");
            assert_eq!(
                s.message.as_deref(),
                Some("attempt 2 (requeued after time-limit)"),
                "{line}"
            );
        }
        // Once the last attempt has ended, its state is the run's, while Slurm still shows the
        // job COMPLETING or (the nodes still tearing down) RUNNING.
        let f = final_state(143, Ending::TimeLimit);
        for line in [
            "7|COMPLETING|None|1:00|1|node1",
            "7|RUNNING|None|1:00|1|node1",
        ] {
            let e = entry(line);
            let s = of_run(&record(), InQueue::Own(&e), Some(&f));
            assert_eq!(
                (s.phase, s.exit_code),
                (Some(Phase::Ended), Some(143)),
                "{line}"
            );
            assert_eq!(s.state, "TIMEOUT", "{line}");
        }
    }

    /// Regression: with the job id given to another job and no final state, the run was
    /// `ENDED` without saying that nothing told how it ended.
    #[test]
    fn a_reused_job_id_without_a_final_state_says_so() {
        let s = of_run(&record(), InQueue::Other, None);
        assert_eq!(
            (s.state.as_str(), s.exit_code, s.message.as_deref()),
            ("ENDED", None, Some(NO_FINAL_STATE))
        );
        let f = final_state(4, Ending::Failed);
        let s = of_run(&record(), InQueue::Other, Some(&f));
        assert_eq!(
            (s.state.as_str(), s.exit_code, s.message.as_deref()),
            ("FAILED", Some(4), None)
        );
    }

    #[test]
    fn a_recorded_end_says_what_the_record_does_not_keep() {
        let end = |nodelist: Option<&str>, elapsed| RecordedEnd {
            state: "CANCELLED".into(),
            exit_code: None,
            elapsed_seconds: Some(elapsed),
            nodelist: nodelist.map(str::to_owned),
            source: Source::Squeue,
        };
        let ran = end(Some("node1"), 7);
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("run.log");
        std::fs::write(&log, "[rayslurm] starting\n").unwrap();
        let message = |end: &RecordedEnd, f: Option<&FinalState>| of_recorded(end, &log, f).message;
        assert_eq!(message(&ran, None).as_deref(), Some(NO_FINAL_STATE));
        // No log either (gone, or as empty as the launcher made it): the nodes could not
        // write the run's directory (not shared).
        std::fs::create_dir(dir.path().join("jobs")).unwrap();
        std::fs::write(dir.path().join("jobs/empty.log"), "").unwrap();
        let empty = of_recorded(&ran, &dir.path().join("jobs/empty.log"), None)
            .message
            .unwrap();
        assert!(empty.contains("could not write"), "{empty}");
        let missing = dir.path().join("jobs/none.log");
        let said = of_recorded(&ran, &missing, None).message.unwrap();
        assert!(
            said.starts_with(NO_FINAL_STATE)
                && said.contains(&format!(
                    "could not write `{}`",
                    dir.path().join("jobs").display()
                )),
            "{said}"
        );
        assert_eq!(message(&end(None, 0), None).as_deref(), Some(NEVER_STARTED));
        let f = final_state(143, Ending::Stopped);
        assert_eq!(message(&ran, Some(&f)), None);
        let why = Some("no heartbeat from node3 for 20 s".to_owned());
        let f = FinalState::after_attempt(
            None,
            "7",
            "node1",
            Attempt {
                message: why.clone(),
                ..attempt(143, Ending::Stopped)
            },
        );
        assert_eq!(message(&ran, Some(&f)), why);
        assert_eq!(
            of_recorded(&ran, &log, Some(&f)).state,
            "CANCELLED",
            "as recorded"
        );
    }
}
