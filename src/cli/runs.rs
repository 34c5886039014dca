//! The arguments of the commands that read recorded runs: `logs`, `status`, `cancel`.

use clap::Args;

use super::values::count;
use crate::handoff::signal_name::SignalName;

#[derive(Debug, Args)]
pub(crate) struct LogsArgs {
    /// Experiment name (its latest run), job id, or cluster name.
    pub(crate) target: String,
    /// With a cluster: the id of one of its jobs (see `rayslurm queue`).
    pub(crate) job: Option<u32>,
    /// Follow the log until the job ends.
    #[arg(long, short)]
    pub(crate) follow: bool,
    /// Print only the last N lines.
    #[arg(long, value_parser = count)]
    pub(crate) tail: Option<u32>,
    /// With a job array (`launch --array`): the task whose log to show (or name it `JOBID_N`).
    #[arg(long, value_name = "N", conflicts_with = "job")]
    pub(crate) task: Option<u32>,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// Experiment names or job ids, all asked of Slurm at once (default: all recent runs)
    pub(crate) targets: Vec<String>,
    /// Print JSON for scripts.
    #[arg(long)]
    pub(crate) json: bool,
    /// Include older runs.
    #[arg(long)]
    pub(crate) all: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CancelArgs {
    /// Experiment name (its latest run), job id, or cluster name.
    pub(crate) target: String,
    /// Send this signal to the run's command instead; the run goes on
    ///
    /// E.g. `USR1` to ask it to checkpoint. Once the command runs, TERM, INT and HUP reach it
    /// too without stopping the run.
    #[arg(long, value_name = "SIG", conflicts_with_all = ["job", "all"])]
    pub(crate) signal: Option<SignalName>,
    /// With a cluster: the id of the job to cancel.
    pub(crate) job: Option<u32>,
    /// With a cluster: cancel every running and pending job.
    #[arg(long, conflicts_with = "job")]
    pub(crate) all: bool,
}
