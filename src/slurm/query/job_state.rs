//! A job's state as Slurm names it, where that puts the job in its life ([`Phase`]), and the
//! exit code Slurm keeps for it.

/// Where a job is in its life, whatever Slurm's exact state name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// Waiting for resources (or held, or requeued).
    Pending,
    /// Has (or had, if suspended) its nodes.
    Running,
    /// The batch script has ended; Slurm is cleaning up (COMPLETING, STAGE_OUT).
    Ending,
    /// Gone for good: completed, failed, cancelled, timed out, ...
    Ended,
}

/// A Slurm job state name, e.g. `RUNNING` or `OUT_OF_MEMORY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlurmState(pub(crate) String);

impl SlurmState {
    pub(crate) fn new(name: &str) -> Self {
        // scontrol and sacct may add words: `CANCELLED by 1000`.
        let word = name.split_whitespace().next().unwrap_or("UNKNOWN");
        Self(word.trim_end_matches('+').to_ascii_uppercase())
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Unknown names count as running: a state we cannot read must never end a follower.
    pub(crate) fn phase(&self) -> Phase {
        match self.0.as_str() {
            "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESV_DEL_HOLD" => {
                Phase::Pending
            }
            "COMPLETING" | "STAGE_OUT" => Phase::Ending,
            "COMPLETED" | "CANCELLED" | "FAILED" | "TIMEOUT" | "PREEMPTED" | "NODE_FAIL"
            | "BOOT_FAIL" | "DEADLINE" | "OUT_OF_MEMORY" | "REVOKED" | "SPECIAL_EXIT" => {
                Phase::Ended
            }
            _ => Phase::Running,
        }
    }
}

/// A Slurm exit code field (`ExitCode=3:0`): the batch script's code and the signal that
/// ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlurmExit {
    pub(crate) code: i32,
    pub(crate) signal: i32,
}

impl SlurmExit {
    /// `3:0` -> code 3; `0:9` -> signal 9.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (code, signal) = text.trim().split_once(':')?;
        Some(Self {
            code: code.parse().ok()?,
            signal: signal.parse().ok()?,
        })
    }

    /// What a shell would report: the code, or 128 + signal.
    pub(crate) fn shell_code(self) -> i32 {
        if self.signal != 0 {
            128 + self.signal
        } else {
            self.code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_states_never_end_a_job() {
        assert_eq!(SlurmState::new("SOMETHING_NEW").phase(), Phase::Running);
        assert_eq!(SlurmState::new("CANCELLED by 1000").as_str(), "CANCELLED");
        assert_eq!(SlurmState::new("cancelled+").phase(), Phase::Ended);
    }

    #[test]
    fn exit_code_field() {
        assert_eq!(SlurmExit::parse("3:0").map(SlurmExit::shell_code), Some(3));
        assert_eq!(
            SlurmExit::parse("0:9").map(SlurmExit::shell_code),
            Some(137)
        );
        assert_eq!(
            SlurmExit::parse("0:15").map(SlurmExit::shell_code),
            Some(143)
        );
        assert_eq!(SlurmExit::parse("0:0").map(SlurmExit::shell_code), Some(0));
        assert_eq!(SlurmExit::parse("3"), None);
        assert_eq!(SlurmExit::parse("a:b"), None);
    }
}
