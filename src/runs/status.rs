//! The state of a run, put together from every source there is, best first: what the run's
//! record already knows of its end; `squeue` while slurmctld knows the job (one call for all
//! runs); the bootstrap's final state file once Slurm has forgotten it; `sacct` where
//! accounting answers. The user command's exit code comes from the final state file when there
//! is one (it is the command's own code), else from `scontrol`'s `ExitCode`.
//!
//! A failing `squeue` is retried with backoff and, if it keeps failing, reported as `UNKNOWN`:
//! a run is never called finished because Slurm could not be asked.
//!
//! A job id Slurm shows with another script and submit time than the run's belongs to a newer
//! job (ids are reused): the run's own job is gone, and no Slurm command is asked about it again.

use std::time::Duration;

use chrono::DateTime;

use crate::handoff::final_state::{Ending, FinalState};
pub(crate) use crate::runs::store::Source;
use crate::runs::store::{RecordedEnd, RunRecord, RunStore, StoredRun};
use crate::slurm::query::{self, Phase, QueryError, QueueEntry, SacctEntry, SlurmExit, SlurmState};

/// Pauses between tries of a one-shot `squeue` (a status or cancel command).
pub(crate) const ONE_SHOT_RETRIES: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// A run's state as shown by `status` and at the end of `--follow`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobStatus {
    /// A Slurm state name; `STOPPED` (from the final state file: scancel, time limit or
    /// SIGTERM), `ENDED` (left Slurm, nothing said how) or `UNKNOWN` (Slurm could not be asked).
    pub(crate) state: String,
    /// `None` when the state is unknown.
    pub(crate) phase: Option<Phase>,
    pub(crate) reason: Option<String>,
    pub(crate) elapsed: Option<u64>,
    pub(crate) nodes: Option<u32>,
    pub(crate) nodelist: Option<String>,
    pub(crate) exit_code: Option<i32>,
    /// Whether the run ended as a success (exit code 0 alone is not enough: a job cancelled
    /// while pending has `ExitCode=0:0`).
    pub(crate) succeeded: bool,
    /// Where the state came from.
    pub(crate) source: Source,
    /// The bootstrap's message, if it left one.
    pub(crate) message: Option<String>,
    /// How many attempts the run has had (more than one once requeued), where its final state
    /// says.
    pub(crate) attempts: Option<usize>,
}

impl JobStatus {
    /// From squeue, with the exit code from the final state file or else from scontrol.
    pub(crate) fn from_queue(
        entry: &QueueEntry,
        final_state: Option<&FinalState>,
        slurm_exit: Option<SlurmExit>,
    ) -> Self {
        let ended = entry.state.phase() == Phase::Ended;
        let exit_code = final_state
            .map(|f| f.exit_code)
            .or_else(|| slurm_exit.filter(|_| ended).map(SlurmExit::shell_code));
        let succeeded = match final_state {
            Some(f) => f.ending == Ending::Completed && f.exit_code == 0,
            None => entry.state.as_str() == "COMPLETED",
        };
        Self {
            state: entry.state.as_str().to_owned(),
            phase: Some(entry.state.phase()),
            reason: entry
                .reason
                .clone()
                .filter(|_| entry.state.phase() == Phase::Pending),
            elapsed: entry.elapsed,
            nodes: entry.nodes,
            nodelist: entry.nodelist.clone(),
            exit_code,
            succeeded,
            source: Source::Squeue,
            attempts: None,
            message: final_state.and_then(|f| f.message.clone()),
        }
    }

    /// From the bootstrap's final state alone (Slurm has forgotten the job).
    pub(crate) fn from_final_state(f: &FinalState) -> Self {
        let state = match f.ending {
            Ending::Completed => "COMPLETED",
            Ending::Failed | Ending::StartupFailed | Ending::Killed | Ending::AuthNotEnforced => {
                "FAILED"
            }
            Ending::NodeFailed => "NODE_FAIL",
            Ending::Stopped => "STOPPED",
            Ending::TimeLimit => "TIMEOUT",
            Ending::Preempted => "PREEMPTED",
        };
        let elapsed = match (
            DateTime::parse_from_rfc3339(&f.started_at),
            DateTime::parse_from_rfc3339(&f.ended_at),
        ) {
            (Ok(a), Ok(b)) => u64::try_from((b - a).num_seconds()).ok(),
            _ => None,
        };
        Self {
            state: state.to_owned(),
            phase: Some(Phase::Ended),
            reason: None,
            elapsed,
            nodes: None,
            nodelist: Some(f.head_node.clone()).filter(|n| !n.is_empty()),
            exit_code: Some(f.exit_code),
            succeeded: f.ending == Ending::Completed && f.exit_code == 0,
            source: Source::FinalState,
            attempts: Some(f.attempt_count()),
            message: f.message.clone(),
        }
    }

    pub(crate) fn from_sacct(e: &SacctEntry) -> Self {
        Self {
            state: e.state.as_str().to_owned(),
            phase: Some(e.state.phase()),
            reason: None,
            elapsed: e.elapsed,
            nodes: None,
            nodelist: None,
            exit_code: e.exit.map(SlurmExit::shell_code),
            succeeded: e.state.as_str() == "COMPLETED",
            source: Source::Sacct,
            attempts: None,
            message: None,
        }
    }

    pub(crate) fn from_record(end: &RecordedEnd) -> Self {
        let state = SlurmState::new(&end.state);
        Self {
            state: end.state.clone(),
            phase: Some(Phase::Ended),
            reason: None,
            elapsed: end.elapsed_seconds,
            nodes: None,
            nodelist: end.nodelist.clone(),
            exit_code: end.exit_code,
            succeeded: state.as_str() == "COMPLETED" && end.exit_code.is_none_or(|c| c == 0),
            source: Source::Record,
            attempts: None,
            message: None,
        }
    }

    /// Slurm no longer knows the run's job (it has forgotten it, or given its id to another
    /// job) and nothing says how it ended: `ENDED`, and that it has no final state.
    pub(crate) fn gone() -> Self {
        Self {
            message: Some(NO_FINAL_STATE.to_owned()),
            ..Self::unsourced("ENDED", Some(Phase::Ended))
        }
    }

    /// Slurm could not be asked.
    pub(crate) fn unknown() -> Self {
        Self::unsourced("UNKNOWN", None)
    }

    /// A state no source backs: only its name and phase are known.
    fn unsourced(state: &str, phase: Option<Phase>) -> Self {
        Self {
            state: state.to_owned(),
            phase,
            reason: None,
            elapsed: None,
            nodes: None,
            nodelist: None,
            exit_code: None,
            succeeded: false,
            source: Source::None,
            attempts: None,
            message: None,
        }
    }

    /// The job ended without ever running: no node, no time (cancelled while pending, say).
    pub(crate) fn never_ran(&self) -> bool {
        self.phase == Some(Phase::Ended) && self.nodelist.is_none() && self.elapsed == Some(0)
    }

    /// The state with the pending reason, as a person reads it: `PENDING (Resources)`.
    pub(crate) fn label(&self) -> String {
        match &self.reason {
            Some(reason) => format!("{} ({reason})", self.state),
            None => self.state.clone(),
        }
    }

    /// The exit code rayslurm passes on for an ended run: the job's own code, but never 0 for
    /// a run that did not succeed, and 1 when the code is unknown or out of range.
    pub(crate) fn shell_exit_code(&self) -> u8 {
        match self.exit_code {
            Some(0) if !self.succeeded => 1,
            Some(code) => u8::try_from(code).unwrap_or(1),
            None if self.succeeded => 0,
            None => 1,
        }
    }

    /// What the run's record keeps, once the run has ended. A state read from the final state
    /// file is not copied: the file stays, and Slurm may still say more (`CANCELLED` where the
    /// file says `STOPPED`).
    pub(crate) fn recorded_end(&self) -> Option<RecordedEnd> {
        let learned = !matches!(self.source, Source::Record | Source::FinalState);
        (self.phase == Some(Phase::Ended) && learned).then(|| RecordedEnd {
            state: self.state.clone(),
            exit_code: self.exit_code,
            elapsed_seconds: self.elapsed,
            nodelist: self.nodelist.clone(),
            source: self.source,
        })
    }
}

/// What Slurm's queue shows under a run's job id.
#[derive(Debug, Clone, Copy)]
pub(crate) enum InQueue<'a> {
    /// The run's own job (an array job's first element speaks for it).
    Own(&'a QueueEntry),
    /// Another job has the id now: ids are reused, and `scontrol` or `sacct` would describe
    /// that job, not the run's.
    Other,
    /// slurmctld no longer knows the id.
    Gone,
}

impl<'a> InQueue<'a> {
    /// Finds the run's job among squeue's answer for its id.
    pub(crate) fn find(entries: &'a [QueueEntry], record: &RunRecord) -> Self {
        match query::own_line(entries, &record.job_id) {
            Some(entry) if entry.is_job_of(&record.submission()) => Self::Own(entry),
            Some(_) => Self::Other,
            None => Self::Gone,
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
    let requeued = final_state.filter(|f| f.requeued);
    if let (InQueue::Own(entry), Some(f)) = (&in_queue, requeued) {
        let last = f.attempts.last().map_or(f.ending, |a| a.ending);
        return JobStatus {
            message: Some(format!(
                "attempt {} (requeued after {})",
                f.attempt_count(),
                last.as_str()
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
                    message: Some(NO_FINAL_STATE.to_owned()),
                    ..JobStatus::from_queue(entry, None, exit)
                }
            }
            _ => JobStatus::from_queue(entry, final_state, None),
        },
        InQueue::Other => final_state.map_or_else(JobStatus::gone, JobStatus::from_final_state),
        InQueue::Gone => match final_state {
            Some(f) => JobStatus::from_final_state(f),
            None => JobStatus {
                message: Some(NO_FINAL_STATE.to_owned()),
                ..query::sacct(&[record.job_id.as_str()])
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

/// What is said of a job that ended without ever running (cancelled while pending, say).
const NEVER_STARTED: &str = "ended before it started";

/// A run whose end its record keeps: as recorded, with what the record does not keep, so that
/// `status` says the same after the first time: the bootstrap's message from its final state,
/// else that the job never started or that it ended without a final state.
pub(crate) fn of_recorded(end: &RecordedEnd, final_state: Option<&FinalState>) -> JobStatus {
    let status = JobStatus::from_record(end);
    let message = match final_state {
        Some(f) => f.message.clone(),
        None if status.never_ran() => Some(NEVER_STARTED.to_owned()),
        None => Some(NO_FINAL_STATE.to_owned()),
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

/// Reads a run's final state file; a damaged one is reported and treated as absent.
pub(crate) fn read_final_state(record: &RunRecord, warn: &dyn Fn(&str)) -> Option<FinalState> {
    match FinalState::read(&record.state_file) {
        Ok(state) => state,
        Err(e) => {
            warn(&format!("{e:#}"));
            None
        }
    }
}

/// `squeue` for these jobs, retried after each pause in `pauses` while it fails.
pub(crate) fn squeue_retrying(
    job_ids: &[&str],
    pauses: &[Duration],
    on_retry: &dyn Fn(&QueryError, Duration),
) -> Result<Vec<QueueEntry>, QueryError> {
    let mut pauses = pauses.iter();
    loop {
        match query::squeue(job_ids) {
            Ok(entries) => return Ok(entries),
            Err(e @ QueryError::Missing(_)) => return Err(e),
            Err(e) => match pauses.next() {
                Some(&pause) => {
                    on_retry(&e, pause);
                    std::thread::sleep(pause);
                }
                None => return Err(e),
            },
        }
    }
}

/// The statuses of many runs, in their order, with one `squeue` call for all of them.
/// `Err` only when squeue is not installed; a squeue that keeps failing gives `UNKNOWN`
/// states and the error in `squeue_error`.
pub(crate) struct Gathered {
    pub(crate) statuses: Vec<JobStatus>,
    pub(crate) squeue_error: Option<QueryError>,
}

pub(crate) fn gather(
    runs: &[&StoredRun],
    pauses: &[Duration],
    warn: &dyn Fn(&str),
) -> Result<Gathered, QueryError> {
    let open: Vec<&str> = runs
        .iter()
        .filter(|r| r.record.ended.is_none())
        .map(|r| r.record.job_id.as_str())
        .collect();
    let on_retry = |e: &QueryError, pause: Duration| {
        warn(&format!("{e}; trying again in {} s", pause.as_secs()));
    };
    let (queue, squeue_error) = match squeue_retrying(&open, pauses, &on_retry) {
        Ok(entries) => (Some(entries), None),
        Err(e @ QueryError::Missing(_)) => return Err(e),
        Err(e) => (None, Some(e)),
    };
    let statuses = runs
        .iter()
        .map(|run| {
            let record = &run.record;
            let final_state = read_final_state(record, warn);
            if let Some(end) = &record.ended {
                return of_recorded(end, final_state.as_ref());
            }
            match &queue {
                Some(entries) => {
                    let mine: Vec<QueueEntry> = entries
                        .iter()
                        .filter(|e| query::is_of_job(&e.job_id, &record.job_id))
                        .cloned()
                        .collect();
                    of_run(record, InQueue::find(&mine, record), final_state.as_ref())
                }
                None => final_state
                    .as_ref()
                    .map_or_else(JobStatus::unknown, JobStatus::from_final_state),
            }
        })
        .collect();
    Ok(Gathered {
        statuses,
        squeue_error,
    })
}

/// Keeps an ended run's end in its record, so it outlives Slurm's memory of the job.
pub(crate) fn remember(
    store: &RunStore,
    run: &StoredRun,
    status: &JobStatus,
) -> anyhow::Result<()> {
    let Some(end) = status.recorded_end() else {
        return Ok(());
    };
    if run.record.ended.as_ref() == Some(&end) {
        return Ok(());
    }
    let mut updated = run.clone();
    updated.record.ended = Some(end);
    store.update(&updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(line: &str) -> QueueEntry {
        query::parse_squeue_line(line).unwrap()
    }

    fn final_state(code: i32, ending: Ending) -> FinalState {
        FinalState {
            job_id: "7".into(),
            exit_code: code,
            ending,
            started_at: "2026-11-22T01:00:00+00:00".into(),
            ended_at: "2026-11-22T01:01:05+00:00".into(),
            head_node: "node1".into(),
            message: None,
            requeued: false,
            attempts: Vec::new(),
        }
    }

    /// A requeued attempt wrote its end, and Slurm has the job back: the run goes on.
    #[test]
    fn a_requeued_attempts_end_is_not_the_runs() {
        let mut f = final_state(143, Ending::TimeLimit);
        f.requeued = true;
        f.attempts = vec![crate::handoff::final_state::Attempt {
            restart: 0,
            started_at: f.started_at.clone(),
            ended_at: f.ended_at.clone(),
            ending: Ending::TimeLimit,
            exit_code: 143,
            requeued: true,
            message: None,
        }];
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
        f.requeued = false;
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

    #[test]
    fn pending_shows_its_reason() {
        let s = JobStatus::from_queue(&entry("7|PENDING|Priority|0:00|2|"), None, None);
        assert_eq!(s.label(), "PENDING (Priority)");
        assert_eq!(s.exit_code, None);
        assert_eq!(s.recorded_end(), None);
    }

    #[test]
    fn exit_code_prefers_the_final_state() {
        let e = entry("7|FAILED|NonZeroExitCode|0:03|1|node1");
        let s = JobStatus::from_queue(&e, None, SlurmExit::parse("3:0"));
        assert_eq!((s.exit_code, s.shell_exit_code()), (Some(3), 3));
        let f = final_state(4, Ending::Failed);
        let s = JobStatus::from_queue(&e, Some(&f), SlurmExit::parse("1:0"));
        assert_eq!((s.exit_code, s.shell_exit_code()), (Some(4), 4));
        assert_eq!(s.recorded_end().unwrap().state, "FAILED");
    }

    #[test]
    fn signals_become_128_plus() {
        let e = entry("7|CANCELLED|None|0:03|1|node1");
        let s = JobStatus::from_queue(&e, None, SlurmExit::parse("0:9"));
        assert_eq!(s.shell_exit_code(), 137);
    }

    #[test]
    fn a_job_cancelled_while_pending_is_not_a_success() {
        let e = entry("7|CANCELLED|None|0:00|1|");
        let s = JobStatus::from_queue(&e, None, SlurmExit::parse("0:0"));
        assert_eq!(s.exit_code, Some(0));
        assert_eq!(s.shell_exit_code(), 1);
        let ok = JobStatus::from_queue(
            &entry("7|COMPLETED|None|0:03|1|n"),
            None,
            SlurmExit::parse("0:0"),
        );
        assert_eq!(ok.shell_exit_code(), 0);
    }

    #[test]
    fn running_jobs_have_no_exit_code_yet() {
        let e = entry("7|RUNNING|None|0:03|1|node1");
        let s = JobStatus::from_queue(&e, None, SlurmExit::parse("0:0"));
        assert_eq!(s.exit_code, None);
        assert_eq!(s.phase, Some(Phase::Running));
    }

    #[test]
    fn final_state_alone() {
        let s = JobStatus::from_final_state(&final_state(0, Ending::Completed));
        assert_eq!(s.state, "COMPLETED");
        assert_eq!(s.elapsed, Some(65));
        assert_eq!(s.shell_exit_code(), 0);
        let s = JobStatus::from_final_state(&final_state(143, Ending::Stopped));
        assert_eq!((s.state.as_str(), s.shell_exit_code()), ("STOPPED", 143));
        let s = JobStatus::from_final_state(&final_state(0, Ending::StartupFailed));
        assert_eq!((s.state.as_str(), s.shell_exit_code()), ("FAILED", 1));
        assert_eq!(s.recorded_end(), None, "the file itself stays the record");
    }

    #[test]
    fn recorded_end_round_trips() {
        let e = entry("7|CANCELLED|None|0:04|1|node1");
        let s = JobStatus::from_queue(&e, None, SlurmExit::parse("0:15"));
        let end = s.recorded_end().unwrap();
        let again = JobStatus::from_record(&end);
        assert_eq!(again.state, "CANCELLED");
        assert_eq!(again.exit_code, Some(143));
        assert_eq!(again.elapsed, Some(4));
        assert_eq!(again.recorded_end(), None);
    }

    #[test]
    fn unknown_is_never_ended() {
        assert_eq!(JobStatus::unknown().phase, None);
        assert_eq!(JobStatus::unknown().recorded_end(), None);
        assert_eq!(JobStatus::gone().shell_exit_code(), 1);
    }

    fn record() -> RunRecord {
        let files = crate::handoff::run_files::RunFiles::for_stem(
            std::path::Path::new("/nonexistent"),
            "x_1122-090000",
        );
        let at = DateTime::parse_from_rfc3339("2026-11-22T09:00:00+00:00").unwrap();
        RunRecord::new("x", "7", &files, at, std::path::Path::new("/w"), "true", 1)
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
        let message = |end: &RecordedEnd, f: Option<&FinalState>| of_recorded(end, f).message;
        assert_eq!(message(&ran, None).as_deref(), Some(NO_FINAL_STATE));
        assert_eq!(message(&end(None, 0), None).as_deref(), Some(NEVER_STARTED));
        let mut f = final_state(143, Ending::Stopped);
        assert_eq!(message(&ran, Some(&f)), None);
        f.message = Some("no heartbeat from node3 for 20 s".into());
        assert_eq!(message(&ran, Some(&f)), f.message);
        assert_eq!(
            of_recorded(&ran, Some(&f)).state,
            "CANCELLED",
            "as recorded"
        );
    }
}
