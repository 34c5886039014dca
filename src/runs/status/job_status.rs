//! A run's state as `status` shows it, made from one source at a time: `squeue`, the
//! bootstrap's final state, `sacct`, or the run's own record.

use chrono::DateTime;

use super::Source;
use super::of_run::NO_FINAL_STATE;
use crate::handoff::final_state::{Ending, FinalState};
use crate::runs::store::RecordedEnd;
use crate::slurm::query::{Phase, QueueEntry, SacctEntry, SlurmExit, SlurmState};

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
            .map(|f| f.last().exit_code)
            .or_else(|| slurm_exit.filter(|_| ended).map(SlurmExit::shell_code));
        let succeeded = match final_state {
            Some(f) => f.last().succeeded(),
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
            message: final_state.and_then(|f| f.last().message.clone()),
        }
    }

    /// From the bootstrap's final state alone (Slurm has forgotten the job).
    pub(crate) fn from_final_state(f: &FinalState) -> Self {
        let last = f.last();
        let state = match last.ending {
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
            DateTime::parse_from_rfc3339(&last.started_at),
            DateTime::parse_from_rfc3339(&last.ended_at),
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
            exit_code: Some(last.exit_code),
            succeeded: last.succeeded(),
            source: Source::FinalState,
            attempts: Some(f.attempt_count()),
            message: last.message.clone(),
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

#[cfg(test)]
mod tests {
    use super::super::samples::{entry, final_state};
    use super::*;

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
}
