//! How the Slurm clients are run and how they fail: times always printed one way, a missing
//! client told apart from one that failed, and "Invalid job id specified" read as "not in the
//! queue".

use crate::slurm::env as slurm_env;
use crate::sys::process::{Cmd, CmdError};

/// A Slurm client command that prints times the way [`parse_submit_time`] reads them
/// (`2026-11-22T03:16:18`), whatever `SLURM_TIME_FORMAT` the user has set (`relative` would
/// print `Ystday 03:16`).
pub(super) fn slurm_client(program: &str) -> Cmd {
    Cmd::new(program).env(slurm_env::SLURM_TIME_FORMAT, "standard")
}

/// Why Slurm could not be asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum QueryError {
    /// The command is not installed: retrying will not help.
    #[error(transparent)]
    Missing(CmdError),
    /// The command ran and failed (controller down or restarting, timeout): try again later.
    #[error(transparent)]
    Unavailable(CmdError),
}

impl QueryError {
    pub(super) fn from_cmd(error: CmdError) -> Self {
        match error {
            e @ CmdError::NotFound { .. } => Self::Missing(e),
            e => Self::Unavailable(e),
        }
    }
}

/// squeue and scontrol fail this way for a job id slurmctld has forgotten (or never had).
pub(super) fn is_unknown_job(error: &CmdError) -> bool {
    matches!(error, CmdError::Failed { stderr, .. } if stderr.contains("Invalid job id specified"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_job_id_means_not_in_queue() {
        let e = CmdError::Failed {
            cmd: "squeue".into(),
            status: "exit code 1".into(),
            stderr: "slurm_load_jobs error: Invalid job id specified".into(),
        };
        assert!(is_unknown_job(&e));
        let e = CmdError::Failed {
            cmd: "squeue".into(),
            status: "exit code 1".into(),
            stderr: "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
                .into(),
        };
        assert!(!is_unknown_job(&e));
    }
}
