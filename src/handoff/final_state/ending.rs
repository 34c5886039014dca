//! How an attempt of a run ended, in the words the final state file and `status` use.

use serde::{Deserialize, Serialize};

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
