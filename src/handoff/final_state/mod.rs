//! The final state of a run, written by the bootstrap inside the allocation (next to the log)
//! and read by `status`/`logs`/`--follow` on the login node, so that job outcomes are known
//! on clusters without accounting (`sacct`).
//!
//! A run has one or more attempts (Slurm may requeue it); the state is those attempts and what
//! is the run's own (its job, its head node). How the run ended is how its last attempt did.

mod attempt;
mod ending;
mod state_file;

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub(crate) use self::attempt::Attempt;
pub(crate) use self::ending::Ending;
use self::state_file::StateFile;
use crate::sys::staged_file::Staged;

/// Written once, atomically, when the bootstrap ends (each attempt of a requeued run writes
/// it again, keeping the attempts before it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StateFile", into = "StateFile")]
pub(crate) struct FinalState {
    pub(crate) job_id: String,
    pub(crate) head_node: String,
    /// The attempts before the last, oldest first.
    earlier: Vec<Attempt>,
    /// The last attempt so far: how the run ended, unless it was requeued.
    last: Attempt,
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
        let earlier = path
            .and_then(|p| Self::read(p).ok().flatten())
            .filter(|earlier| earlier.job_id == job_id)
            .map(|earlier| {
                earlier
                    .attempts()
                    .filter(|a| a.restart < attempt.restart)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Self {
            job_id: job_id.to_owned(),
            head_node: head_node.to_owned(),
            earlier,
            last: attempt,
        }
    }

    /// The last attempt so far: the run's end, unless it was requeued.
    pub(crate) fn last(&self) -> &Attempt {
        &self.last
    }

    /// Every attempt so far, the last one included, oldest first.
    pub(crate) fn attempts(&self) -> impl Iterator<Item = &Attempt> {
        self.earlier.iter().chain(std::iter::once(&self.last))
    }

    /// How many attempts the run has had, the one now under way after a requeue included.
    pub(crate) fn attempt_count(&self) -> usize {
        self.earlier.len() + 1 + usize::from(self.last.requeued)
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
        let state =
            FinalState::after_attempt(None, "7", "node1", attempt(0, Ending::Failed, 3, false));
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
        assert_eq!(second.attempts().count(), 2);
        assert_eq!(second.attempt_count(), 2);
        let last = second.last();
        assert_eq!(
            (last.ending, last.exit_code, last.requeued),
            (Ending::Completed, 0, false)
        );
        assert_eq!(second.attempts().next().unwrap().ending, Ending::TimeLimit);
        assert_eq!(second.head_node, "node2");
        // Another job's state (an id Slurm gave again) is not this run's history; nor is an
        // attempt written again (the same restart count).
        second.write(&path).unwrap();
        let other =
            FinalState::after_attempt(Some(&path), "8", "n", attempt(0, Ending::Failed, 1, false));
        assert_eq!(other.attempts().count(), 1);
        let again =
            FinalState::after_attempt(Some(&path), "7", "n", attempt(1, Ending::Killed, 1, false));
        assert_eq!(again.attempts().count(), 2);
        assert_eq!(again.last().ending, Ending::Killed);
    }
}
