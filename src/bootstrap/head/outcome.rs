//! How a run ended, before it is written down: the job's exit code, the [`Ending`] the final
//! state records and the message for the log. The mapping from what happened to the exit code
//! lives here alone, as pure functions.

use nix::sys::signal::Signal;

use crate::handoff::final_state::Ending;
use crate::handoff::signal_name::TIME_WARNING;

/// The exit code of a run the time limit stopped whose command exited 0 on the warning: it
/// did not finish, so not 0; 143 (128 + SIGTERM), as a run stopped by SIGTERM reports.
pub(super) const TIME_LIMIT_CODE: i32 = 143;

/// The end of a run as the head decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Outcome {
    pub(super) code: i32,
    pub(super) ending: Ending,
    pub(super) message: Option<String>,
}

impl Outcome {
    /// The cluster did not come up: exit code 1.
    pub(super) fn startup_failed(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            ending: Ending::StartupFailed,
            message: Some(message.into()),
        }
    }

    /// A stop signal came before the command started: 128 + the signal, as a shell reports it.
    /// The time warning (Slurm may send it up to a minute early, so it can come while Ray
    /// starts) ends the attempt as the time limit does.
    pub(super) fn stopped_while_starting(signal: Signal) -> Self {
        if signal == TIME_WARNING {
            return Self {
                code: TIME_LIMIT_CODE,
                ending: Ending::TimeLimit,
                message: Some(
                    "the time limit's warning came while the cluster was starting".into(),
                ),
            };
        }
        Self {
            code: 128 + signal as i32,
            ending: Ending::Stopped,
            message: Some(format!(
                "{} received while the cluster was starting",
                signal.as_str()
            )),
        }
    }

    /// Ray served a request without the run's token: the run was stopped on purpose.
    pub(super) fn auth_not_enforced(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            ending: Ending::AuthNotEnforced,
            message: Some(message.into()),
        }
    }

    /// The head could not watch the command (it cannot wait for its own child).
    pub(super) fn lost_command(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            ending: Ending::Failed,
            message: Some(message.into()),
        }
    }

    /// A run stopped by SIGTERM that Slurm is putting back in its queue (asked by `requeued`,
    /// so that Slurm is only asked about runs that were stopped) was preempted.
    pub(super) fn or_preempted(self, requeued: impl FnOnce() -> bool) -> Self {
        if self.ending != Ending::Stopped || !requeued() {
            return self;
        }
        Self {
            ending: Ending::Preempted,
            message: Some(
                "stopped by Slurm to go back in its queue (preemption or scontrol requeue)".into(),
            ),
            ..self
        }
    }

    /// The command ended with `code` (its own, or 128 + the signal that ended it).
    ///
    /// A node failure fails the run whatever the command made of it (never exit 0); a stop
    /// signal (scancel, time limit, SIGTERM) makes it stopped, with 128 + the signal where the
    /// command exited 0 on it; otherwise the command's own code decides.
    pub(super) fn of_command(
        code: i32,
        node_failure: Option<String>,
        stopped_by: Option<Signal>,
    ) -> Self {
        match (node_failure, stopped_by) {
            (Some(why), _) => Self {
                code: if code == 0 { 1 } else { code },
                ending: Ending::NodeFailed,
                message: Some(why),
            },
            (None, Some(TIME_WARNING)) => Self {
                code: if code == 0 { TIME_LIMIT_CODE } else { code },
                ending: Ending::TimeLimit,
                message: Some(format!(
                    "stopped by the time limit (the command ended with exit code {code})"
                )),
            },
            (None, Some(signal)) => Self {
                code: if code == 0 { 128 + signal as i32 } else { code },
                ending: Ending::Stopped,
                message: Some(format!("stopped by {}", signal.as_str())),
            },
            (None, None) => Self {
                code,
                ending: if code == 0 {
                    Ending::Completed
                } else {
                    Ending::Failed
                },
                message: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commands_own_code_decides_a_plain_run() {
        assert_eq!(Outcome::of_command(0, None, None).ending, Ending::Completed);
        let failed = Outcome::of_command(3, None, None);
        assert_eq!((failed.code, failed.ending), (3, Ending::Failed));
    }

    #[test]
    fn a_node_failure_never_exits_0() {
        let o = Outcome::of_command(0, Some("node2 died".into()), None);
        assert_eq!((o.code, o.ending), (1, Ending::NodeFailed));
        assert_eq!(o.message.as_deref(), Some("node2 died"));
        let o = Outcome::of_command(143, Some("x".into()), Some(Signal::SIGTERM));
        assert_eq!((o.code, o.ending), (143, Ending::NodeFailed));
    }

    #[test]
    fn a_stopped_run_reports_the_signal_where_the_command_exited_0() {
        let o = Outcome::of_command(0, None, Some(Signal::SIGTERM));
        assert_eq!((o.code, o.ending), (143, Ending::Stopped));
        assert_eq!(o.message.as_deref(), Some("stopped by SIGTERM"));
        let o = Outcome::of_command(7, None, Some(Signal::SIGINT));
        assert_eq!((o.code, o.ending), (7, Ending::Stopped));
        assert_eq!(Outcome::stopped_while_starting(Signal::SIGINT).code, 130);
    }
}
