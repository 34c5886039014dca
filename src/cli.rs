//! The command-line surface: clap derive structs only, no I/O.
//!
//! Values are checked for form here (counts are numbers); everything that needs the
//! environment, config files or cross-checks happens in `launch::config`.

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

use crate::env_vars;
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::cluster::IpFamily;
use crate::handoff::signal_name::SignalName;

/// `rayslurm --version`: the version, the commit and the target it was built for.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("RAYSLURM_BUILD_COMMIT"),
    " ",
    env!("RAYSLURM_BUILD_TARGET"),
    ")"
);

const ABOUT: &str = "Run Ray (and other multi-node programs) on a Slurm cluster with one command";

#[derive(Debug, Parser)]
#[command(
    name = "rayslurm",
    version = VERSION,
    about = ABOUT,
    propagate_version = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,

    /// Print only results (job id, JSON), no progress.
    #[arg(long, short, global = true)]
    pub(crate) quiet: bool,

    /// Echo each command run (sbatch, squeue, srun, ...) on stderr, ready to paste.
    #[arg(long, short, global = true, conflicts_with = "quiet")]
    pub(crate) verbose: bool,

    /// Reach a cluster's head through the allocation (an srun step), not directly
    ///
    /// For login nodes that cannot reach compute nodes' ports; without it the head is tried
    /// directly first (`RAYSLURM_RELAY=always` or `never` decides instead, where set).
    #[arg(long, global = true)]
    pub(crate) via_allocation: bool,
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
    /// Trust a project file's settings that run code as you (`load_env`, `template`, ...).
    ///
    /// A `./rayslurm.toml` in the working directory gives its site settings (partition,
    /// account, time, ...) to every run from there, whoever wrote it. Its settings that run
    /// code as you or weaken a run's security (`load_env`, `template`, `ray_args`,
    /// `ray_head_args`, `ray_auth`, `log_dir`) are used only when no one else could have
    /// written the file, or once you trusted it with this command. The file's path and SHA-256
    /// are recorded in your state directory: a file changed since needs trusting again.
    Trust(TrustArgs),
    /// Print a shell completion script (bash, zsh, fish, ...).
    Completions(CompletionsArgs),
    /// Print the manual page (roff), of rayslurm or of one of its commands.
    Man(ManArgs),
    /// On a cluster's head: relay bytes between stdin/stdout and a local port.
    #[command(hide = true)]
    Relay(RelayArgs),
    /// Inside the allocation: start Ray on every node, run the command, stop Ray.
    #[command(hide = true)]
    Bootstrap(Box<BootstrapArgs>),
}

/// The `--help` headings of `launch` and `up`, in the order they are shown (clap orders
/// headings by their first option, so each struct lists its options heading by heading).
mod heading {
    pub(crate) const JOB: &str = "Job";
    pub(crate) const RESOURCES: &str = "Resources";
    pub(crate) const ENVIRONMENT: &str = "Environment";
    pub(crate) const INSIDE: &str = "Inside the job";
    pub(crate) const RAY: &str = "Ray";
    pub(crate) const OUTPUT: &str = "Output";
    pub(crate) const LONG_RUNS: &str = "Long runs";
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
    /// Experiment name: names the job and its files.
    ///
    /// The script and log are `{exp-name}_{date}-{time}.sh/.log`.
    #[arg(value_name = "NAME", long, help_heading = heading::JOB)]
    pub(crate) exp_name: String,

    /// The command to run on the head node, as typed into bash there.
    #[arg(value_name = "CMD", long, allow_hyphen_values = true, help_heading = heading::JOB)]
    pub(crate) command: String,

    #[command(flatten)]
    pub(crate) job: JobArgs,

    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,

    /// Write and show the script; submit nothing.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub(crate) dry_run: bool,

    /// Print the job id, script and log paths as JSON on stdout.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub(crate) json: bool,

    /// After submitting, show the job's state and stream its log until it ends.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub(crate) follow: bool,

    /// With --follow: cancel the job on Ctrl-C.
    #[arg(long, requires = "follow", help_heading = heading::OUTPUT)]
    pub(crate) cancel_on_interrupt: bool,

    #[command(flatten)]
    pub(crate) long_run: LongRunArgs,
}

/// Runs that outlive one allocation: the time limit's warning, requeue, chains (`launch`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct LongRunArgs {
    /// Signal sent before the time limit [default: TERM]
    ///
    /// Sent `--stop-grace` seconds before the limit (e.g. `USR1`, which NCCL leaves alone); Ray
    /// keeps running meanwhile, so the program can still use it to checkpoint.
    #[arg(long, value_name = "SIG", env = env_vars::SIGNAL, help_heading = heading::LONG_RUNS)]
    pub(crate) signal: Option<SignalName>,

    /// Requeue the job when its time limit, preemption or a node failure stops it
    ///
    /// The next attempt gets `RAYSLURM_RESTART_COUNT` one higher and the same
    /// `RAYSLURM_RUN_DIR`, where the command resumes from what it saved. A command that fails
    /// by itself, or a run you cancel, is never requeued.
    #[arg(long, help_heading = heading::LONG_RUNS)]
    pub(crate) requeue: bool,

    /// Requeue at most N times [default: 3]
    ///
    /// With --requeue; counted by Slurm's restart count, preemptions included.
    #[arg(
        value_name = "N",
        long,
        value_parser = count,
        allow_hyphen_values = true,
        env = env_vars::MAX_REQUEUES,
        help_heading = heading::LONG_RUNS
    )]
    pub(crate) max_requeues: Option<u32>,

    /// Start after RUN has ended, with its RAYSLURM_RUN_DIR
    ///
    /// RUN is an experiment name (its latest run) or a job id. The new run waits for it to end,
    /// however it ends (Slurm's `afterany`), and starts at once if it has ended already: a
    /// training as a chain of allocations.
    #[arg(long, value_name = "RUN", help_heading = heading::LONG_RUNS)]
    pub(crate) after: Option<String>,

    /// One job of this experiment name at a time (Slurm's singleton)
    #[arg(long, help_heading = heading::LONG_RUNS)]
    pub(crate) singleton: bool,
}

/// What the job asks of Slurm and where its files go: `launch`'s and `up`'s.
#[derive(Debug, Clone, Args)]
pub(crate) struct JobArgs {
    /// Partition.
    #[arg(value_name = "NAME", long, short = 'p', env = env_vars::PARTITION, help_heading = heading::JOB)]
    pub(crate) partition: Option<String>,

    /// Account to charge.
    #[arg(value_name = "NAME", long, short = 'A', env = env_vars::ACCOUNT, help_heading = heading::JOB)]
    pub(crate) account: Option<String>,

    /// Quality of service.
    #[arg(long, env = env_vars::QOS, help_heading = heading::JOB)]
    pub(crate) qos: Option<String>,

    /// Time limit (e.g. `30`, `2:00:00`, `1-12:00`).
    #[arg(long, short = 't', env = env_vars::TIME, help_heading = heading::JOB)]
    pub(crate) time: Option<String>,

    /// Any other sbatch option, e.g. `--sbatch-arg=--mail-type=END`.
    ///
    /// Repeatable: one option each.
    #[arg(value_name = "OPTION", long = "sbatch-arg", allow_hyphen_values = true, help_heading = heading::JOB)]
    pub(crate) sbatch_args: Vec<String>,

    /// Where the script and log go.
    ///
    /// Default: the current directory. It must be visible from the nodes.
    #[arg(value_name = "DIR", long, env = env_vars::LOG_DIR, help_heading = heading::JOB)]
    pub(crate) log_dir: Option<PathBuf>,

    /// A Tera template of your own.
    ///
    /// Rendered instead of the built-in one (start from `rayslurm template`).
    #[arg(value_name = "FILE", long, env = env_vars::TEMPLATE, help_heading = heading::JOB)]
    pub(crate) template: Option<PathBuf>,

    /// Number of nodes.
    #[arg(value_name = "N", long, short = 'n', default_value = "1", value_parser = positive_count, allow_hyphen_values = true, help_heading = heading::RESOURCES)]
    pub(crate) num_nodes: u32,

    /// Tasks per node.
    #[arg(value_name = "N", long, default_value = "1", value_parser = positive_count, allow_hyphen_values = true, help_heading = heading::RESOURCES)]
    pub(crate) tasks_per_node: u32,

    /// CPUs per task.
    #[arg(value_name = "N", long, value_parser = positive_count, allow_hyphen_values = true, help_heading = heading::RESOURCES)]
    pub(crate) cpus_per_task: Option<u32>,

    /// GPUs per node.
    #[arg(value_name = "N", long, default_value = "0", value_parser = count, allow_hyphen_values = true, help_heading = heading::RESOURCES)]
    pub(crate) num_gpus: u32,

    /// How GPUs are requested.
    ///
    /// As --gpus-per-task, --gpus-per-node or --gres=gpu:N.
    #[arg(value_name = "HOW", long, value_enum, env = env_vars::GPU_DIRECTIVE, help_heading = heading::RESOURCES)]
    pub(crate) gpu_directive: Option<GpuDirective>,

    /// Memory per node (e.g. `16G`).
    #[arg(value_name = "SIZE", long, conflicts_with = "mem_per_cpu", help_heading = heading::RESOURCES)]
    pub(crate) mem: Option<String>,

    /// Memory per CPU (e.g. `2G`).
    #[arg(value_name = "SIZE", long, help_heading = heading::RESOURCES)]
    pub(crate) mem_per_cpu: Option<String>,

    /// Nodes to run on, as sinfo prints them (e.g. `node[01-04]`).
    #[arg(value_name = "LIST", long = "node", short = 'w', help_heading = heading::RESOURCES)]
    pub(crate) node: Option<String>,

    /// Node features required.
    ///
    /// As Slurm's --constraint takes them.
    #[arg(value_name = "FEATURES", long, short = 'C', env = env_vars::CONSTRAINT, help_heading = heading::RESOURCES)]
    pub(crate) constraint: Option<String>,

    /// Ask for whole nodes (the default: Ray manages whole nodes).
    #[arg(long, overrides_with = "no_exclusive", help_heading = heading::RESOURCES)]
    pub(crate) exclusive: bool,

    /// Share nodes with other jobs.
    #[arg(long, overrides_with = "exclusive", help_heading = heading::RESOURCES)]
    pub(crate) no_exclusive: bool,

    /// Shell line(s) that set up the environment.
    ///
    /// E.g. `module load cuda; source venv/bin/activate`.
    #[arg(value_name = "LINES", long, allow_hyphen_values = true, env = env_vars::LOAD_ENV, help_heading = heading::ENVIRONMENT)]
    pub(crate) load_env: Option<String>,

    /// An environment variable for the command, `KEY=VALUE` (repeatable).
    #[arg(value_name = "KEY=VALUE", long = "env", allow_hyphen_values = true, help_heading = heading::ENVIRONMENT)]
    pub(crate) env: Vec<String>,

    /// Environment variables from FILE: `KEY=VALUE` lines (repeatable).
    ///
    /// For secrets: unlike --env, the values never appear on a command line, which `ps` shows
    /// to every user of the machine. `#` comments and blank lines are skipped; --env wins over
    /// a key given here too.
    #[arg(value_name = "FILE", long, help_heading = heading::ENVIRONMENT)]
    pub(crate) env_file: Vec<PathBuf>,
}

/// The cluster's flags as the user gives them; resolved (with config files and defaults) into
/// `handoff::cluster::ClusterOptions`, which the bootstrap gets.
#[derive(Debug, Clone, Args)]
pub(crate) struct ClusterArgs {
    /// Run this on every node first, before the command (or Ray).
    ///
    /// It runs in parallel, with the rank environment; the command (or Ray) starts only once
    /// every node's setup succeeded.
    #[arg(value_name = "CMD", long, allow_hyphen_values = true, help_heading = heading::ENVIRONMENT)]
    pub(crate) setup: Option<String>,

    /// Do not start Ray: run the command on the head node alone.
    ///
    /// The node list is in its environment.
    #[arg(long, help_heading = heading::INSIDE)]
    pub(crate) no_ray: bool,

    /// Run the command on every node, without Ray.
    ///
    /// `--tasks-per-node` times each, every task with its own rank: for torchrun, JAX,
    /// MPI-style and plain shell work.
    #[arg(long, help_heading = heading::INSIDE)]
    pub(crate) per_node: bool,

    /// With --per-node: do not prefix each output line with `[RANK NODE]`.
    #[arg(long, help_heading = heading::INSIDE)]
    pub(crate) no_prefix: bool,

    /// Interface of the head's IP, e.g. `ib0`.
    ///
    /// The network interface the head node's IP is taken from.
    #[arg(value_name = "NAME", long, env = env_vars::INTERFACE, help_heading = heading::INSIDE)]
    pub(crate) interface: Option<String>,

    /// IP family.
    ///
    /// The address family of the head node's IP.
    #[arg(value_name = "FAMILY", long, value_enum, env = env_vars::IP_FAMILY, help_heading = heading::INSIDE)]
    pub(crate) ip_family: Option<IpFamily>,

    /// Seconds the cluster may take to start.
    ///
    /// How long to wait for the cluster before failing the job.
    #[arg(value_name = "SECS", long, value_parser = positive_count, allow_hyphen_values = true, env = env_vars::READY_TIMEOUT, help_heading = heading::INSIDE)]
    pub(crate) ready_timeout: Option<u32>,

    /// Seconds of warning before the time limit.
    ///
    /// Slurm asks the job to stop cleanly this long before its time limit.
    #[arg(value_name = "SECS", long, value_parser = count, allow_hyphen_values = true, env = env_vars::STOP_GRACE, help_heading = heading::INSIDE)]
    pub(crate) stop_grace: Option<u32>,

    /// First port of the job's block of ports.
    ///
    /// The block holds Ray's ports (default: chosen per job and checked free).
    #[arg(value_name = "PORT", long, value_parser = clap::value_parser!(u16).range(1024..=65000), help_heading = heading::INSIDE)]
    pub(crate) port_base: Option<u16>,

    /// Start once this many nodes have joined (default: all).
    ///
    /// The command starts once this many nodes, head included, have joined.
    #[arg(value_name = "N", long, value_parser = positive_count, allow_hyphen_values = true, help_heading = heading::RAY)]
    pub(crate) min_nodes: Option<u32>,

    /// Object store per node.
    ///
    /// Bytes of Ray object store per node (Ray's --object-store-memory).
    #[arg(value_name = "BYTES", long, value_parser = clap::value_parser!(u64).range(1..), allow_hyphen_values = true, env = env_vars::OBJECT_STORE_MEMORY, help_heading = heading::RAY)]
    pub(crate) object_store_memory: Option<u64>,

    /// `ray start` arguments for every node.
    ///
    /// Extra arguments, as one shell-quoted string.
    #[arg(value_name = "ARGS", long, allow_hyphen_values = true, env = env_vars::RAY_ARGS, help_heading = heading::RAY)]
    pub(crate) ray_args: Option<String>,

    /// Head-only `ray start` arguments.
    ///
    /// Extra arguments for the head only (e.g. `--include-dashboard=false`).
    #[arg(value_name = "ARGS", long, allow_hyphen_values = true, env = env_vars::RAY_HEAD_ARGS, help_heading = heading::RAY)]
    pub(crate) ray_head_args: Option<String>,

    /// Start Ray without its token auth.
    ///
    /// Anyone who can reach the nodes may then run code on your cluster as you (config key
    /// `ray_auth = false`).
    #[arg(long, env = env_vars::NO_RAY_AUTH, value_parser = BoolishValueParser::new(), help_heading = heading::RAY)]
    pub(crate) no_ray_auth: bool,

    /// Serve Ray's Prometheus metrics on every node.
    ///
    /// Off by default: Ray's metrics port takes no token, so anyone who can reach a node may
    /// read its metrics (the names of your tasks and actors among them).
    #[arg(long, help_heading = heading::RAY)]
    pub(crate) ray_metrics: bool,
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

#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    /// The cluster's name (clusters and experiments share one namespace).
    pub(crate) name: String,

    /// Stop after this long without a job.
    ///
    /// Release the allocation after this long without a running or pending job (e.g. `30m`,
    /// `2h`, `90s`; a plain number is minutes).
    #[arg(value_name = "DURATION", long, value_parser = idle_duration, env = env_vars::IDLE_TIMEOUT, help_heading = heading::JOB)]
    pub(crate) idle_timeout: Option<u32>,

    #[command(flatten)]
    pub(crate) job: JobArgs,

    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,

    /// Return once the allocation is submitted, without waiting for the cluster.
    #[arg(long, short, help_heading = heading::OUTPUT)]
    pub(crate) detach: bool,

    /// Write and show the script; submit nothing.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub(crate) dry_run: bool,

    /// Print the job id, script and log paths as JSON on stdout.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub(crate) json: bool,
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

    /// Environment variables from FILE: `KEY=VALUE` lines (repeatable).
    ///
    /// For secrets: unlike --env, the values never appear on a command line, which `ps` shows
    /// to every user of the machine. --env wins over a key given here too.
    #[arg(value_name = "FILE", long)]
    pub(crate) env_file: Vec<PathBuf>,

    /// The command as one string, run through bash (instead of `-- CMD ARGS...`).
    #[arg(long, allow_hyphen_values = true, conflicts_with = "args")]
    pub(crate) command: Option<String>,

    /// Print the job as JSON (`{"cluster", "job", ...}`), not its id alone.
    #[arg(long)]
    pub(crate) json: bool,

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

/// `rayslurm trust`'s example, after its options in `--help`.
const TRUST_EXAMPLE: &str = "\
Example:
  less ./rayslurm.toml             # read what it runs first
  rayslurm trust ./rayslurm.toml
  rayslurm trust --list";

#[derive(Debug, Args)]
#[command(after_long_help = TRUST_EXAMPLE)]
pub(crate) struct TrustArgs {
    /// The project file, e.g. `./rayslurm.toml`.
    #[arg(value_name = "FILE", required_unless_present = "list")]
    pub(crate) file: Option<PathBuf>,

    /// Forget FILE: its settings that run code are refused again.
    #[arg(long, requires = "file")]
    pub(crate) revoke: bool,

    /// List the trusted files.
    #[arg(long, conflicts_with_all = ["file", "revoke"])]
    pub(crate) list: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: Shell,
}

#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// The command whose page to print, e.g. `launch` (default: rayslurm's own).
    pub(crate) command: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RelayArgs {
    /// `HOST:PORT` to connect to.
    #[arg(long)]
    pub(crate) to: String,
}

/// The command line users see: without the hidden commands (`bootstrap`, `relay`), which
/// completion scripts would otherwise offer.
pub(crate) fn public_command() -> clap::Command {
    let full = Cli::command();
    clap::Command::new("rayslurm")
        .version(VERSION)
        .about(ABOUT)
        .propagate_version(true)
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned())
}

/// `30m`, `2h`, `90s` or a plain number of minutes, in seconds (clap value parser; also
/// `idle_timeout` in config files).
pub(crate) fn idle_duration(value: &str) -> Result<u32, String> {
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
    use crate::handoff::cluster::ClusterOptions;

    /// Every configuration variable, with a value that would change what it configures.
    const EVERY_VARIABLE: &[(&str, &str)] = &[
        (env_vars::PARTITION, "env-partition"),
        (env_vars::ACCOUNT, "env-account"),
        (env_vars::QOS, "env-qos"),
        (env_vars::CONSTRAINT, "env-constraint"),
        (env_vars::TIME, "7:00"),
        (env_vars::LOG_DIR, "/env/logs"),
        (env_vars::LOAD_ENV, "source env"),
        (env_vars::TEMPLATE, "/env/t.tera"),
        (env_vars::GPU_DIRECTIVE, "gres"),
        (env_vars::INTERFACE, "envif0"),
        (env_vars::IP_FAMILY, "6"),
        (env_vars::OBJECT_STORE_MEMORY, "12345"),
        (env_vars::RAY_ARGS, "--env-args=1"),
        (env_vars::RAY_HEAD_ARGS, "--env-head=1"),
        (env_vars::READY_TIMEOUT, "77"),
        (env_vars::STOP_GRACE, "33"),
        (env_vars::NO_RAY_AUTH, "true"),
        (env_vars::IDLE_TIMEOUT, "9m"),
    ];

    /// In a child process (this test binary again, the one safe way to set variables for a
    /// test) with every configuration variable set: the bootstrap's command line, as the
    /// script writes it, parses to exactly what it says, while `launch` does take the
    /// variables (so they were live).
    #[test]
    fn configuration_variables_never_change_what_the_bootstrap_parses() {
        const CHILD: &str = "RAYSLURM_UNIT_TEST_CHILD";
        let head = BootstrapArgs::head("/logs/x.state.json".into(), "/logs/x.d".into(), 2, {
            ClusterOptions {
                ready_timeout: 5,
                stop_grace: 6,
                ..ClusterOptions::default()
            }
        });
        if std::env::var_os(CHILD).is_some() {
            for (name, value) in EVERY_VARIABLE {
                assert_eq!(std::env::var(name).as_deref(), Ok(*value), "{name}");
            }
            let mut argv = vec!["rayslurm".to_owned(), "bootstrap".to_owned()];
            argv.extend(head.to_words());
            let Command::Bootstrap(parsed) = Cli::try_parse_from(&argv).unwrap().command else {
                panic!("not the bootstrap");
            };
            assert_eq!(*parsed, head);
            let launch = ["rayslurm", "launch", "--exp-name", "x", "--command", "y"];
            let Command::Launch(launch) = Cli::try_parse_from(launch).unwrap().command else {
                panic!("not launch");
            };
            assert_eq!(launch.cluster.interface.as_deref(), Some("envif0"));
            assert!(launch.cluster.no_ray_auth);
            assert_eq!(launch.cluster.ready_timeout, Some(77));
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "cli::tests::configuration_variables_never_change_what_the_bootstrap_parses",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .envs(EVERY_VARIABLE.iter().copied())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{said}");
        assert!(said.contains("1 passed"), "the child ran no test: {said}");
    }

    #[test]
    fn the_public_command_has_every_visible_command_and_no_hidden_one() {
        let public: Vec<String> = public_command()
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        let full = Cli::command();
        let visible: Vec<String> = full
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name().to_owned())
            .collect();
        assert_eq!(public, visible);
        assert!(!public.contains(&"bootstrap".to_owned()));
        assert_eq!(
            public_command().get_arguments().count(),
            full.get_arguments().count()
        );
    }

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
