//! The arguments of the commands that read recorded runs (`logs`, `status`, `cancel`),
//! resolved: each destructured, so a flag added to `cli` is a compile error here until it is.

use crate::cli::{CancelArgs, LogsArgs, StatusArgs};
use crate::handoff::signal_name::SignalName;
use crate::runs::log_tail::Start;

/// `logs`, resolved.
#[derive(Debug)]
pub(crate) struct LogsSettings {
    /// An experiment name, job id or cluster name.
    pub(crate) target: String,
    /// With a cluster: one of its jobs.
    pub(crate) job: Option<u32>,
    pub(crate) follow: bool,
    /// Where printing starts: the beginning, or `--tail`'s last lines.
    pub(crate) start: Start,
    /// With a job array: the task whose log to show.
    pub(crate) task: Option<u32>,
}

impl LogsSettings {
    pub(crate) fn resolve(args: &LogsArgs) -> Self {
        let LogsArgs {
            target,
            job,
            follow,
            tail,
            task,
        } = args;
        let start = match tail {
            Some(n) => Start::LastLines(u64::from(*n)),
            None => Start::Beginning,
        };
        Self {
            target: target.clone(),
            job: *job,
            follow: *follow,
            start,
            task: *task,
        }
    }
}

/// `status`, resolved.
#[derive(Debug)]
pub(crate) struct StatusSettings {
    /// Experiment names or job ids; all recent runs without any.
    pub(crate) targets: Vec<String>,
    pub(crate) json: bool,
    /// Older runs too.
    pub(crate) all: bool,
}

impl StatusSettings {
    pub(crate) fn resolve(args: &StatusArgs) -> Self {
        let StatusArgs { targets, json, all } = args;
        Self {
            targets: targets.clone(),
            json: *json,
            all: *all,
        }
    }
}

/// `cancel`, resolved (clap refuses `--signal` with a job or `--all`, and a job with `--all`).
#[derive(Debug)]
pub(crate) struct CancelSettings {
    /// An experiment name, job id or cluster name.
    pub(crate) target: String,
    /// Signal the run's command instead of cancelling the run.
    pub(crate) signal: Option<SignalName>,
    /// With a cluster: the job to cancel.
    pub(crate) job: Option<u32>,
    /// With a cluster: every running and pending job.
    pub(crate) all: bool,
}

impl CancelSettings {
    pub(crate) fn resolve(args: &CancelArgs) -> Self {
        let CancelArgs {
            target,
            signal,
            job,
            all,
        } = args;
        Self {
            target: target.clone(),
            signal: *signal,
            job: *job,
            all: *all,
        }
    }
}
