//! The command-line surface: clap derive structs only, no I/O.
//!
//! Values are checked for form here (counts are numbers); everything that needs the
//! environment, config files or cross-checks happens in `launch::config`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::cluster::IpFamily;
use crate::handoff::signal_name::SignalName;

#[derive(Debug, Parser)]
#[command(
    name = "rayslurm",
    version = concat!(
        env!("CARGO_PKG_VERSION"),
        " (",
        env!("RAYSLURM_BUILD_COMMIT"),
        " ",
        env!("RAYSLURM_BUILD_TARGET"),
        ")"
    ),
    about = "Run Ray (and other multi-node programs) on a Slurm cluster with one command",
    propagate_version = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,

    /// Print only results (job id, JSON), no progress.
    #[arg(long, short, global = true)]
    pub(crate) quiet: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Render an sbatch script and submit it.
    Launch(Box<LaunchArgs>),
    /// Print the built-in sbatch template, to start a custom one from it.
    Template,
    /// Print (or follow) the log of a run.
    Logs(LogsArgs),
    /// Show runs and their states, newest first.
    Status(StatusArgs),
    /// Cancel a run, or a job of a cluster.
    Cancel(CancelArgs),
    /// Start a persistent Ray cluster: wait in the queue once, then `exec` many jobs onto it.
    Up(Box<UpArgs>),
    /// Run a command on a cluster as a Ray job (queued by Ray until resources are free).
    Exec(ExecArgs),
    /// Show a cluster's jobs, nodes, free resources and time left.
    Queue(QueueArgs),
    /// Stop a cluster: its running jobs, Ray, and its allocation.
    Down(DownArgs),
    /// Forward a cluster's (or a run's) Ray dashboard to a port on this machine.
    Dashboard(DashboardArgs),
    /// On a cluster's head: relay bytes between stdin/stdout and a local port.
    #[command(hide = true)]
    Relay(RelayArgs),
    /// Inside the allocation: start Ray on every node, run the command, stop Ray.
    #[command(hide = true)]
    Bootstrap(Box<BootstrapArgs>),
}

/// How GPUs are requested from Slurm (sites differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum GpuDirective {
    /// `#SBATCH --gpus-per-task=N` (as Ray's own launcher does).
    GpusPerTask,
    /// `#SBATCH --gpus-per-node=N`.
    GpusPerNode,
    /// `#SBATCH --gres=gpu:N`.
    Gres,
}

#[derive(Debug, Args)]
pub(crate) struct LaunchArgs {
    /// Experiment name: names the job and the files `{exp-name}_{date}-{time}.sh/.log`.
    #[arg(long)]
    pub(crate) exp_name: String,

    /// The command to run on the head node, as you would type it into bash there.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) command: String,

    #[command(flatten)]
    pub(crate) job: JobArgs,

    /// Write and show the script; submit nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Print the job id, script and log paths as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,

    /// After submitting, show the job's state and stream its log until it ends.
    #[arg(long)]
    pub(crate) follow: bool,

    /// With --follow: cancel the job on Ctrl-C.
    #[arg(long, requires = "follow")]
    pub(crate) cancel_on_interrupt: bool,

    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,

    #[command(flatten, next_help_heading = "Long runs")]
    pub(crate) long_run: LongRunArgs,
}

/// Runs that outlive one allocation: the time limit's warning, requeue, chains (`launch`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct LongRunArgs {
    /// Signal the command gets before the time limit [default: TERM]
    ///
    /// Sent `--stop-grace` seconds before the limit (e.g. `USR1`, which NCCL leaves alone); Ray
    /// keeps running meanwhile, so the program can still use it to checkpoint.
    #[arg(long, value_name = "SIG")]
    pub(crate) signal: Option<SignalName>,

    /// Requeue the job when the time limit, preemption or a node failure stops it
    ///
    /// The next attempt gets `RAYSLURM_RESTART_COUNT` one higher and the same
    /// `RAYSLURM_RUN_DIR`, where the command resumes from what it saved. A command that fails
    /// by itself, or a run you cancel, is never requeued.
    #[arg(long)]
    pub(crate) requeue: bool,

    /// With --requeue: at most this many times [default: 3]
    #[arg(long, value_parser = count, allow_hyphen_values = true)]
    pub(crate) max_requeues: Option<u32>,

    /// Start after RUN has ended, with its RAYSLURM_RUN_DIR
    ///
    /// RUN is an experiment name (its latest run) or a job id. The new run waits for it to end,
    /// however it ends (Slurm's `afterany`), and starts at once if it has ended already: a
    /// training as a chain of allocations.
    #[arg(long, value_name = "RUN")]
    pub(crate) after: Option<String>,

    /// One job of this experiment name at a time (Slurm's singleton)
    #[arg(long)]
    pub(crate) singleton: bool,
}

/// What the job asks of Slurm and where its files go: `launch`'s and `up`'s.
#[derive(Debug, Clone, Args)]
pub(crate) struct JobArgs {
    /// Number of nodes.
    #[arg(long, short = 'n', default_value = "1", value_parser = positive_count, allow_hyphen_values = true)]
    pub(crate) num_nodes: u32,

    /// GPUs per node.
    #[arg(long, default_value = "0", value_parser = count, allow_hyphen_values = true)]
    pub(crate) num_gpus: u32,

    /// How GPUs are requested: --gpus-per-task, --gpus-per-node or --gres=gpu:N.
    #[arg(long, value_enum)]
    pub(crate) gpu_directive: Option<GpuDirective>,

    /// Nodes to run on, as sinfo prints them (e.g. `node[01-04]`).
    #[arg(long = "node", short = 'w')]
    pub(crate) node: Option<String>,

    /// Partition.
    #[arg(long, short = 'p')]
    pub(crate) partition: Option<String>,

    /// Account to charge.
    #[arg(long, short = 'A')]
    pub(crate) account: Option<String>,

    /// Quality of service.
    #[arg(long)]
    pub(crate) qos: Option<String>,

    /// Node features required (Slurm --constraint).
    #[arg(long, short = 'C')]
    pub(crate) constraint: Option<String>,

    /// Shell line(s) that set up the environment, e.g. `module load cuda; source venv/bin/activate`.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) load_env: Option<String>,

    /// Tasks per node.
    #[arg(long, default_value = "1", value_parser = positive_count, allow_hyphen_values = true)]
    pub(crate) tasks_per_node: u32,

    /// CPUs per task.
    #[arg(long, value_parser = positive_count, allow_hyphen_values = true)]
    pub(crate) cpus_per_task: Option<u32>,

    /// Memory per node (e.g. `16G`).
    #[arg(long, conflicts_with = "mem_per_cpu")]
    pub(crate) mem: Option<String>,

    /// Memory per CPU (e.g. `2G`).
    #[arg(long)]
    pub(crate) mem_per_cpu: Option<String>,

    /// Time limit (e.g. `30`, `2:00:00`, `1-12:00`).
    #[arg(long, short = 't')]
    pub(crate) time: Option<String>,

    /// Ask for whole nodes (the default: Ray manages whole nodes).
    #[arg(long, overrides_with = "no_exclusive")]
    pub(crate) exclusive: bool,

    /// Share nodes with other jobs.
    #[arg(long, overrides_with = "exclusive")]
    pub(crate) no_exclusive: bool,

    /// Any other sbatch option, e.g. `--sbatch-arg=--mail-type=END` (repeatable).
    #[arg(long = "sbatch-arg", allow_hyphen_values = true)]
    pub(crate) sbatch_args: Vec<String>,

    /// An environment variable for the command, `KEY=VALUE` (repeatable).
    #[arg(long = "env", allow_hyphen_values = true)]
    pub(crate) env: Vec<String>,

    /// Where the script and log go (default: the current directory). Must be visible from the nodes.
    #[arg(long)]
    pub(crate) log_dir: Option<PathBuf>,

    /// A Tera template to render instead of the built-in one (see `rayslurm template`).
    #[arg(long)]
    pub(crate) template: Option<PathBuf>,
}

/// The cluster's flags as the user gives them; resolved (with config files and defaults) into
/// `handoff::cluster::ClusterOptions`, which the bootstrap gets.
#[derive(Debug, Clone, Args)]
pub(crate) struct ClusterArgs {
    /// Do not start Ray: run the command on the head node with the node list in its environment.
    #[arg(long)]
    pub(crate) no_ray: bool,

    /// Run the command on every node (`--tasks-per-node` times each, every task with its own
    /// rank), without Ray: for torchrun, JAX, MPI-style and plain shell work.
    #[arg(long)]
    pub(crate) per_node: bool,

    /// Run this on every node first, in parallel, with the rank environment; the command (or
    /// Ray) starts only once every node's setup succeeded.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) setup: Option<String>,

    /// With --per-node: do not prefix each output line with `[RANK NODE]`.
    #[arg(long)]
    pub(crate) no_prefix: bool,

    /// Network interface the head node's IP is taken from (e.g. `ib0`).
    #[arg(long)]
    pub(crate) interface: Option<String>,

    /// Address family of the head node's IP.
    #[arg(long, value_enum)]
    pub(crate) ip_family: Option<IpFamily>,

    /// Start the command once this many nodes (head included) have joined (default: all).
    #[arg(long, value_parser = positive_count, allow_hyphen_values = true)]
    pub(crate) min_nodes: Option<u32>,

    /// Seconds to wait for the cluster before failing the job.
    #[arg(long, value_parser = positive_count, allow_hyphen_values = true)]
    pub(crate) ready_timeout: Option<u32>,

    /// Bytes of Ray object store per node (Ray's --object-store-memory).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), allow_hyphen_values = true)]
    pub(crate) object_store_memory: Option<u64>,

    /// Extra `ray start` arguments for every node, as one shell-quoted string.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) ray_args: Option<String>,

    /// Extra `ray start` arguments for the head only (e.g. `--include-dashboard=false`).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) ray_head_args: Option<String>,

    /// First port of the block of Ray ports (default: chosen per job and checked free).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1024..=65000))]
    pub(crate) port_base: Option<u16>,

    /// Start Ray without token authentication: anyone who can reach the nodes may then run
    /// code on your cluster as you (config key `ray_auth = false`).
    #[arg(long)]
    pub(crate) no_ray_auth: bool,

    /// Seconds before the time limit at which Slurm asks the job to stop cleanly.
    #[arg(long, value_parser = count, allow_hyphen_values = true)]
    pub(crate) stop_grace: Option<u32>,
}

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
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// Experiment name or job id (default: all recent runs).
    pub(crate) target: Option<String>,
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
    /// E.g. `USR1` to ask it to checkpoint. TERM, INT and HUP reach the command too, without
    /// stopping the run.
    #[arg(long, value_name = "SIG", conflicts_with_all = ["job", "all"])]
    pub(crate) signal: Option<SignalName>,
    /// With a cluster: the id of the job to cancel.
    pub(crate) job: Option<u32>,
    /// With a cluster: cancel every running and pending job.
    #[arg(long, conflicts_with = "job")]
    pub(crate) all: bool,
}

#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    /// The cluster's name (clusters and experiments share one namespace).
    pub(crate) name: String,

    /// Return once the allocation is submitted, without waiting for the cluster.
    #[arg(long, short)]
    pub(crate) detach: bool,

    /// Release the allocation after this long without a running or pending job
    /// (e.g. `30m`, `2h`, `90s`; a plain number is minutes).
    #[arg(long, value_parser = idle_duration)]
    pub(crate) idle_timeout: Option<u32>,

    /// Write and show the script; submit nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Print the job id, script and log paths as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,

    #[command(flatten)]
    pub(crate) job: JobArgs,

    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The cluster (from `rayslurm up`).
    pub(crate) cluster: String,

    /// Return once the job is submitted; follow it with `rayslurm logs CLUSTER JOB -f`.
    #[arg(long, short)]
    pub(crate) detach: bool,

    /// A name for the job, shown by `queue`.
    #[arg(long)]
    pub(crate) name: Option<String>,

    /// CPUs this job needs (Ray's entrypoint resources: it waits in Ray's queue until free).
    #[arg(long)]
    pub(crate) num_cpus: Option<f64>,

    /// GPUs this job needs, in all (fractions allowed, e.g. 0.5); not per node as in `launch`.
    #[arg(long)]
    pub(crate) num_gpus: Option<f64>,

    /// Memory this job needs (e.g. `4G`, `512M`).
    #[arg(long)]
    pub(crate) memory: Option<String>,

    /// An environment variable for the job, `KEY=VALUE` (repeatable).
    #[arg(long = "env", allow_hyphen_values = true)]
    pub(crate) env: Vec<String>,

    /// The command as one string, run through bash (instead of `-- CMD ARGS...`).
    #[arg(long, allow_hyphen_values = true, conflicts_with = "args")]
    pub(crate) command: Option<String>,

    /// The command and its arguments, each quoted as given.
    #[arg(last = true)]
    pub(crate) args: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct QueueArgs {
    /// The cluster.
    pub(crate) cluster: String,
    /// Print JSON for scripts.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DownArgs {
    /// The cluster.
    pub(crate) cluster: String,
}

#[derive(Debug, Args)]
pub(crate) struct DashboardArgs {
    /// The cluster (or a run of `launch`).
    pub(crate) target: String,
    /// The local port to listen on (default: the dashboard's own port number).
    #[arg(long)]
    pub(crate) port: Option<u16>,
}

#[derive(Debug, Args)]
pub(crate) struct RelayArgs {
    /// `HOST:PORT` to connect to.
    #[arg(long)]
    pub(crate) to: String,
}

/// `30m`, `2h`, `90s` or a plain number of minutes, in seconds (clap value parser).
fn idle_duration(value: &str) -> Result<u32, String> {
    let v = value.trim();
    let (number, unit) = match v.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&v[..i], c),
        _ => (v, 'm'),
    };
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        _ => {
            return Err(format!(
                "`{}` ends in an unknown unit (use s, m or h, e.g. `30m`)",
                value.escape_debug()
            ));
        }
    };
    number
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| {
            format!(
                "`{}` is not a duration such as `30m`, `2h` or `90s`",
                value.escape_debug()
            )
        })
}

/// A count that must be at least 1 (clap value parser).
fn positive_count(value: &str) -> Result<u32, String> {
    match value.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{}` is not a whole number of at least 1 (for example `3`)",
            value.escape_debug()
        )),
    }
}

/// A count that may be 0 (clap value parser).
fn count(value: &str) -> Result<u32, String> {
    value.trim().parse::<u32>().map_err(|_| {
        format!(
            "`{}` is not a whole number of 0 or more (for example `2`)",
            value.escape_debug()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_durations() {
        assert_eq!(idle_duration("30m"), Ok(1800));
        assert_eq!(idle_duration("2h"), Ok(7200));
        assert_eq!(idle_duration("90s"), Ok(90));
        assert_eq!(idle_duration("5"), Ok(300));
        for bad in ["0", "x", "5d", "", "-3m"] {
            assert!(idle_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn counts() {
        assert_eq!(positive_count("3"), Ok(3));
        for bad in ["0", "-1", "x", "", "1.5"] {
            assert!(positive_count(bad).is_err(), "{bad}");
        }
        assert_eq!(count("0"), Ok(0));
        assert!(count("-2").is_err());
    }
}
