//! Whether an attempt that has ended goes back into Slurm's queue (`--requeue`): one stopped by
//! its time limit or by a node failure does, up to `--max-requeues` times counted by Slurm's
//! restart count; one Slurm is requeuing itself (preemption, `scontrol requeue`) is recorded as
//! such; one that failed by itself, finished, or was cancelled never does.

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
}

impl Requeue {
    /// Whether another attempt follows.
    pub(super) fn follows(self) -> bool {
        matches!(self, Self::ByRayslurm | Self::BySlurm)
    }
}

/// Decides for an attempt that ended as `ending` after `restart` requeues.
pub(super) fn decide(ending: Ending, options: &ClusterOptions, restart: u32) -> Requeue {
    match ending {
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
pub(super) fn note(requeue: Requeue, options: &ClusterOptions, restart: u32) -> Option<String> {
    let max = options.long_run.max_requeues;
    match requeue {
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
            assert_eq!(decide(ending, &on, 0), Requeue::ByRayslurm);
            assert_eq!(decide(ending, &on, 2), Requeue::ByRayslurm);
            assert_eq!(decide(ending, &on, 3), Requeue::BudgetSpent);
            assert_eq!(decide(ending, &options(false, 3), 0), Requeue::No);
        }
        assert!(
            note(Requeue::BudgetSpent, &on, 3)
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
            assert_eq!(decide(ending, &on, 0), Requeue::No, "{ending:?}");
        }
        // Slurm requeues a preempted job by itself, with or without --requeue.
        assert_eq!(
            decide(Ending::Preempted, &options(false, 3), 0),
            Requeue::BySlurm
        );
        assert!(Requeue::BySlurm.follows() && !Requeue::BudgetSpent.follows());
    }
}
