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
        }
    }
}

/// Written once, atomically, when the bootstrap ends.
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
}

impl FinalState {
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
        };
        state.write(&path).unwrap();
        assert_eq!(FinalState::read(&path).unwrap(), Some(state));
        std::fs::write(&path, "{").unwrap();
        assert!(FinalState::read(&path).is_err());
    }
}
