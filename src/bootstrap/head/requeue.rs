//! Whether an attempt that has ended goes back into Slurm's queue (`--requeue`): one stopped by
//! its time limit or by a node failure does, up to `--max-requeues` times counted by Slurm's
//! restart count; one Slurm is requeuing itself (preemption, `scontrol requeue`) is recorded as
//! such; one whose command failed does up to `--restarts-on-error` times, counted by the
//! run's earlier attempts that failed and went back; one that finished, or was cancelled, never
//! does.

use crate::handoff::cluster::ClusterOptions;
use crate::handoff::final_state::Ending;

/// What becomes of the run after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Requeue {
    /// It has ended.
    No,
    /// The bootstrap asks Slurm to requeue it (`scontrol requeue`), as its last act.
    ByRayslurm,
    /// Slurm is requeuing it already.
    BySlurm,
    /// It would go back, but has used its `--max-requeues`.
    BudgetSpent,
    /// The command failed: the bootstrap asks Slurm to requeue it, one of `--restarts-on-error`.
    AfterError,
    /// The command failed, and the run has used its `--restarts-on-error`.
    ErrorsSpent,
}

impl Requeue {
    /// Whether another attempt follows.
    pub(super) fn follows(self) -> bool {
        matches!(self, Self::ByRayslurm | Self::BySlurm | Self::AfterError)
    }

    /// Whether the bootstrap asks Slurm for it (`scontrol requeue`).
    pub(super) fn by_rayslurm(self) -> bool {
        matches!(self, Self::ByRayslurm | Self::AfterError)
    }
}

/// Decides for an attempt that ended as `ending` after `restart` requeues, `errors` of them
/// after the command failed.
pub(super) fn decide(
    ending: Ending,
    options: &ClusterOptions,
    restart: u32,
    errors: u32,
) -> Requeue {
    let on_error = options.long_run.restarts_on_error;
    match ending {
        Ending::Failed if on_error > 0 => {
            if errors < on_error {
                Requeue::AfterError
            } else {
                Requeue::ErrorsSpent
            }
        }
        Ending::Preempted => Requeue::BySlurm,
        Ending::TimeLimit | Ending::NodeFailed if options.long_run.requeue => {
            if restart < options.long_run.max_requeues {
                Requeue::ByRayslurm
            } else {
                Requeue::BudgetSpent
            }
        }
        _ => Requeue::No,
    }
}

/// What the log and the final state say of it, if anything.
pub(super) fn note(
    requeue: Requeue,
    options: &ClusterOptions,
    restart: u32,
    errors: u32,
) -> Option<String> {
    let max = options.long_run.max_requeues;
    let on_error = options.long_run.restarts_on_error;
    match requeue {
        Requeue::AfterError => Some(format!(
            "the command failed: putting the job back in the queue (restart on error {} of at most {on_error})",
            errors + 1
        )),
        Requeue::ErrorsSpent => Some(format!(
            "not restarted: the command failed {} times (--restarts-on-error {on_error})",
            errors + 1
        )),
        Requeue::No => None,
        Requeue::ByRayslurm => Some(format!(
            "putting the job back in the queue (requeue {} of at most {max}); the next attempt resumes from what the command saved",
            restart + 1
        )),
        Requeue::BySlurm => Some("Slurm puts the job back in its queue".to_owned()),
        Requeue::BudgetSpent => Some(format!(
            "not requeued: the run was requeued {restart} time(s) already (--max-requeues {max})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::cluster::LongRunOptions;

    fn options(requeue: bool, max_requeues: u32) -> ClusterOptions {
        ClusterOptions {
            long_run: LongRunOptions {
                requeue,
                max_requeues,
                ..LongRunOptions::default()
            },
            ..ClusterOptions::default()
        }
    }

    #[test]
    fn time_limit_and_node_failure_go_back_within_the_budget() {
        let on = options(true, 3);
        for ending in [Ending::TimeLimit, Ending::NodeFailed] {
            assert_eq!(decide(ending, &on, 0, 0), Requeue::ByRayslurm);
            assert_eq!(decide(ending, &on, 2, 0), Requeue::ByRayslurm);
            assert_eq!(decide(ending, &on, 3, 0), Requeue::BudgetSpent);
            assert_eq!(decide(ending, &options(false, 3), 0, 0), Requeue::No);
        }
        assert!(
            note(Requeue::BudgetSpent, &on, 3, 0)
                .unwrap()
                .contains("--max-requeues 3")
        );
    }

    #[test]
    fn a_run_that_failed_finished_or_was_cancelled_never_goes_back() {
        let on = options(true, 3);
        for ending in [
            Ending::Failed,
            Ending::Completed,
            Ending::Stopped,
            Ending::StartupFailed,
            Ending::Killed,
        ] {
            assert_eq!(decide(ending, &on, 0, 0), Requeue::No, "{ending:?}");
        }
        // Slurm requeues a preempted job by itself, with or without --requeue.
        assert_eq!(
            decide(Ending::Preempted, &options(false, 3), 0, 0),
            Requeue::BySlurm
        );
        assert!(Requeue::BySlurm.follows() && !Requeue::BudgetSpent.follows());
    }

    /// A failed command goes back while the run's failures that went back are fewer than
    /// `--restarts-on-error`, whatever else requeued it (a time limit counts apart).
    #[test]
    fn a_failed_command_goes_back_within_its_own_budget() {
        let mut on = options(false, 3);
        on.long_run.restarts_on_error = 2;
        assert_eq!(decide(Ending::Failed, &on, 0, 0), Requeue::AfterError);
        assert_eq!(decide(Ending::Failed, &on, 5, 1), Requeue::AfterError);
        assert_eq!(decide(Ending::Failed, &on, 2, 2), Requeue::ErrorsSpent);
        assert_eq!(decide(Ending::Failed, &options(true, 3), 0, 0), Requeue::No);
        for ending in [Ending::Completed, Ending::Stopped, Ending::StartupFailed] {
            assert_eq!(decide(ending, &on, 0, 0), Requeue::No, "{ending:?}");
        }
        assert!(Requeue::AfterError.follows() && Requeue::AfterError.by_rayslurm());
        assert!(!Requeue::ErrorsSpent.follows());
        assert_eq!(
            note(Requeue::ErrorsSpent, &on, 2, 2).unwrap(),
            "not restarted: the command failed 3 times (--restarts-on-error 2)"
        );
        assert!(
            note(Requeue::AfterError, &on, 0, 0)
                .unwrap()
                .contains("restart on error 1 of at most 2")
        );
    }
}
