//! The final state of a run, written by the bootstrap inside the allocation (next to the log)
//! and read by `status`/`logs`/`--follow` on the login node, so that job outcomes are known
//! on clusters without accounting (`sacct`).

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::sys::staged_file::Staged;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Ending {
    /// The command exited 0.
    Completed,
    /// The command exited non-zero or was killed by a signal.
    Failed,
    /// The cluster did not come up (head or worker failed, or the ready timeout passed).
    StartupFailed,
    /// A node failed while the command ran.
    NodeFailed,
    /// The job was asked to stop (scancel, time limit, SIGTERM) while the command ran.
    Stopped,
    /// The head's bootstrap died (SIGKILL, the OOM killer, a crash); its watchdog stopped the
    /// command and Ray and wrote this.
    Killed,
    /// Slurm's warning before the time limit came: the command was signalled and given the
    /// stop grace (it may have checkpointed; it did not finish).
    TimeLimit,
    /// Slurm stopped the job to put it back in its queue (preemption, `scontrol requeue`).
    Preempted,
    /// Ray served a request without the run's token (the check beside the command found it),
    /// so the run was stopped: anyone who could reach the cluster could have used it.
    AuthNotEnforced,
}

impl Ending {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::StartupFailed => "startup-failed",
            Self::NodeFailed => "node-failed",
            Self::Stopped => "stopped",
            Self::Killed => "killed",
            Self::TimeLimit => "time-limit",
            Self::Preempted => "preempted",
            Self::AuthNotEnforced => "auth-not-enforced",
        }
    }
}

/// Written once, atomically, when the bootstrap ends (each attempt of a requeued run writes
/// it again, keeping the attempts before it). Its top-level fields describe the last attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FinalState {
    pub(crate) job_id: String,
    pub(crate) exit_code: i32,
    pub(crate) ending: Ending,
    /// RFC 3339.
    pub(crate) started_at: String,
    /// RFC 3339.
    pub(crate) ended_at: String,
    pub(crate) head_node: String,
    pub(crate) message: Option<String>,
    /// The run went back into Slurm's queue after this attempt: it has not ended.
    #[serde(default)]
    pub(crate) requeued: bool,
    /// Every attempt so far, the last one included, oldest first.
    #[serde(default)]
    pub(crate) attempts: Vec<Attempt>,
}

/// One attempt of a run: one time the job ran, until it ended or was requeued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Attempt {
    /// Slurm's restart count when it ran (0 for the first attempt).
    pub(crate) restart: u32,
    /// RFC 3339.
    pub(crate) started_at: String,
    /// RFC 3339.
    pub(crate) ended_at: String,
    pub(crate) ending: Ending,
    pub(crate) exit_code: i32,
    pub(crate) requeued: bool,
    pub(crate) message: Option<String>,
}

impl FinalState {
    /// The state after `attempt`, keeping the earlier attempts of the same job that the file
    /// at `path` holds (a requeued job keeps its id and its state file).
    pub(crate) fn after_attempt(
        path: Option<&Path>,
        job_id: &str,
        head_node: &str,
        attempt: Attempt,
    ) -> Self {
        let mut attempts: Vec<Attempt> = path
            .and_then(|p| Self::read(p).ok().flatten())
            .filter(|earlier| earlier.job_id == job_id)
            .map(|earlier| earlier.attempts)
            .unwrap_or_default()
            .into_iter()
            .filter(|a| a.restart < attempt.restart)
            .collect();
        attempts.push(attempt.clone());
        Self {
            job_id: job_id.to_owned(),
            exit_code: attempt.exit_code,
            ending: attempt.ending,
            started_at: attempt.started_at,
            ended_at: attempt.ended_at,
            head_node: head_node.to_owned(),
            message: attempt.message,
            requeued: attempt.requeued,
            attempts,
        }
    }

    /// How many attempts the run has had, the one now under way after a requeue included.
    pub(crate) fn attempt_count(&self) -> usize {
        self.attempts.len().max(1) + usize::from(self.requeued)
    }

    /// Writes the file whole ([`Staged`]), so a reader never sees half of it.
    pub(crate) fn write(&self, path: &Path) -> Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut file = Staged::new(dir, "state", 0o600)?;
        file.write_json(self)?;
        file.replace(path)
    }

    /// Reads a state file; `Ok(None)` when there is none yet.
    pub(crate) fn read(path: &Path) -> Result<Option<Self>> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .with_context(|| format!("damaged state file `{}`", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read `{}`", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.state.json");
        assert_eq!(FinalState::read(&path).unwrap(), None);
        let state = FinalState {
            job_id: "7".into(),
            exit_code: 3,
            ending: Ending::Failed,
            started_at: "2026-11-22T01:00:00+00:00".into(),
            ended_at: "2026-11-22T01:00:09+00:00".into(),
            head_node: "node1".into(),
            message: None,
            requeued: false,
            attempts: Vec::new(),
        };
        state.write(&path).unwrap();
        assert_eq!(FinalState::read(&path).unwrap(), Some(state));
        std::fs::write(&path, "{").unwrap();
        assert!(FinalState::read(&path).is_err());
    }

    fn attempt(restart: u32, ending: Ending, code: i32, requeued: bool) -> Attempt {
        Attempt {
            restart,
            started_at: format!("2026-11-22T01:0{restart}:00+00:00"),
            ended_at: format!("2026-11-22T01:0{restart}:30+00:00"),
            ending,
            exit_code: code,
            requeued,
            message: None,
        }
    }

    #[test]
    fn each_attempt_keeps_the_ones_before_it_of_the_same_job() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.state.json");
        let first = FinalState::after_attempt(
            Some(&path),
            "7",
            "node1",
            attempt(0, Ending::TimeLimit, 143, true),
        );
        assert_eq!(first.attempt_count(), 2, "the next one is under way");
        first.write(&path).unwrap();
        let second = FinalState::after_attempt(
            Some(&path),
            "7",
            "node2",
            attempt(1, Ending::Completed, 0, false),
        );
        assert_eq!(second.attempts.len(), 2);
        assert_eq!(second.attempt_count(), 2);
        assert_eq!(
            (second.ending, second.exit_code, second.requeued),
            (Ending::Completed, 0, false)
        );
        assert_eq!(second.attempts[0].ending, Ending::TimeLimit);
        // Another job's state (an id Slurm gave again) is not this run's history; nor is an
        // attempt written again (the same restart count).
        second.write(&path).unwrap();
        let other =
            FinalState::after_attempt(Some(&path), "8", "n", attempt(0, Ending::Failed, 1, false));
        assert_eq!(other.attempts.len(), 1);
        let again =
            FinalState::after_attempt(Some(&path), "7", "n", attempt(1, Ending::Killed, 1, false));
        assert_eq!(again.attempts.len(), 2);
        assert_eq!(again.attempts[1].ending, Ending::Killed);
    }

    #[test]
    fn a_state_written_before_attempts_were_kept_still_reads() {
        let old = r#"{"job_id":"7","exit_code":0,"ending":"completed","started_at":"a","ended_at":"b","head_node":"n","message":null}"#;
        let state: FinalState = serde_json::from_str(old).unwrap();
        assert!(!state.requeued);
        assert_eq!(state.attempt_count(), 1);
    }
}
