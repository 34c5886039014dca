//! `launch`'s arguments, and the job and cluster flags `up` shares with it.

use std::path::PathBuf;

use clap::builder::{BoolishValueParser, PossibleValue};
use clap::{Args, ValueEnum};

use super::container::ContainerArgs;
use super::heading;
use super::values::{count, node_count, positive_count};
use crate::env_vars;
use crate::handoff::cluster::IpFamily;
use crate::handoff::signal_name::SignalName;
use crate::launch::gpu_directive::GpuDirective;
use crate::launch::gpu_names::GpuAsk;

/// `--gpu-directive`'s values, with the help each shows.
impl ValueEnum for GpuDirective {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::GpusPerTask, Self::GpusPerNode, Self::Gres]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::GpusPerTask => PossibleValue::new("gpus-per-task")
                .help("`#SBATCH --gpus-per-task=N` (as Ray's own launcher does)"),
            Self::GpusPerNode => {
                PossibleValue::new("gpus-per-node").help("`#SBATCH --gpus-per-node=N`")
            }
            Self::Gres => PossibleValue::new("gres").help("`#SBATCH --gres=gpu:N`"),
        })
    }
}

#[derive(Debug, Args)]
pub(crate) struct LaunchArgs {
    /// A task file (SkyPilot's YAML format) giving the run; flags given here override it.
    ///
    /// Its `setup` and `run` run on every node (as --per-node) unless its `rayslurm:` section
    /// says `ray_job: true`; that section takes any option below by its name (`time: 2:00:00`).
    /// See docs/task-files.md.
    #[arg(value_name = "TASK.yaml")]
    pub(crate) task: Option<PathBuf>,

    /// Experiment name: names the job and its files.
    ///
    /// The script and log are `{exp-name}_{date}-{time}.sh/.log`.
    #[arg(value_name = "NAME", long, required_unless_present_any = ["task", "again"], help_heading = heading::JOB)]
    pub(crate) exp_name: Option<String>,

    /// The command, as typed into bash: on the head node of the Ray cluster (with --no-ray, on
    /// the head node alone; with --per-node, on every node, once a task).
    ///
    /// Or give it after `--`, each word quoted as given: `-- python train.py --lr 0.1`.
    #[arg(value_name = "CMD", long, allow_hyphen_values = true, conflicts_with = "args", required_unless_present_any = ["task", "again", "args"], help_heading = heading::JOB)]
    pub(crate) command: Option<String>,

    /// Run RUN (an experiment name or job id) again, as a new recorded run.
    ///
    /// Rendered from RUN's record (its options, command, environment and template as they
    /// were launched), under a new name: a new job, record and log; RUN's own files stay as
    /// they are. Goes with --follow, --cancel-on-interrupt, --json,
    /// --dry-run and --log-dir only.
    #[arg(value_name = "RUN", long, help_heading = heading::JOB)]
    pub(crate) again: Option<String>,

    /// A Slurm job array: one run of the command a task (e.g. `0-7%2`, `1,3,5`, `0-15:4`)
    ///
    /// Each task is a run of its own, with its own nodes (-n), Ray, log, final state and
    /// RAYSLURM_RUN_DIR; the command sees SLURM_ARRAY_TASK_ID. `%N`: at most N tasks at once.
    /// `rayslurm logs JOBID_3` and `cancel JOBID_3` take one task. See docs/arrays.md.
    #[arg(value_name = "SPEC", long, help_heading = heading::JOB)]
    pub(crate) array: Option<String>,

    #[command(flatten)]
    pub(crate) job: JobArgs,

    #[command(flatten)]
    pub(crate) container: ContainerArgs,

    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,

    #[command(flatten)]
    pub(crate) snapshot: SnapshotArgs,

    /// Write and show the script, and ask Slurm whether it would take it; submit nothing.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub(crate) dry_run: bool,

    /// Ask Slurm and fail (exit 2) if it would refuse the job or cannot be asked; implies --dry-run.
    ///
    /// A dry run always asks Slurm whether it would take the job (`sbatch --test-only`, which
    /// submits nothing) and prints its answer, but exits 0 whatever Slurm said.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub(crate) check: bool,

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

    /// The options given on the command line (`--name`), which `--again` checks: filled by
    /// the parser, not by clap.
    #[arg(skip)]
    pub(crate) given: Vec<String>,

    /// The command and its arguments after `--`, each quoted as given (instead of --command).
    #[arg(value_name = "CMD ARGS", last = true)]
    pub(crate) args: Vec<String>,
}

/// The code a run gets: a copy of its workdir made at submission (`launch`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct SnapshotArgs {
    /// Copy the workdir now; the run works in a node-local copy of it.
    ///
    /// At submission the workdir (--workdir, else the current directory) is copied into the
    /// run's private directory: in a git repository its tracked files and the untracked ones
    /// that are not ignored, elsewhere every file. At start each node copies it to its own
    /// temp dir, and --setup and the command run there: edits after the launch do not reach
    /// a queued run or its requeued attempts, and nodes do not collide in it.
    #[arg(long, overrides_with_all = ["empty_workdir", "git_workdir"], help_heading = heading::ENVIRONMENT)]
    pub(crate) snapshot: bool,

    /// The directory --snapshot copies (implies --snapshot).
    #[arg(value_name = "DIR", long, overrides_with_all = ["empty_workdir", "git_workdir"], help_heading = heading::ENVIRONMENT)]
    pub(crate) workdir: Option<PathBuf>,

    /// The workdir is a clone of this git repository, made now (a task file's `workdir: {url:}`).
    ///
    /// Cloned at submission on this node with `git` (shallow for a branch or tag), then
    /// copied as --snapshot copies a directory, with its `.git`. A clone that fails is
    /// refused with what git said.
    #[arg(value_name = "URL", long, overrides_with_all = ["snapshot", "workdir", "empty_workdir"], help_heading = heading::ENVIRONMENT)]
    pub(crate) git_workdir: Option<String>,

    /// The branch, tag or commit --git-workdir clones (default: the remote's default branch).
    #[arg(value_name = "REF", long, requires = "git_workdir", help_heading = heading::ENVIRONMENT)]
    pub(crate) git_ref: Option<String>,

    /// Copy a local file or directory now and place it at DEST on every node (repeatable).
    ///
    /// A task file's `file_mounts: {DEST: SRC}`. DEST relative: in the node's workdir;
    /// `~/PATH`: under your home; under /tmp: on the node's own disk; with
    /// --container-image, bound into the image; any other path (not the node's system
    /// directories) in a private view of the node's filesystem that the run's programs run
    /// in (a user namespace). Without --snapshot, --workdir or --git-workdir, as with
    /// --empty-workdir.
    #[arg(value_name = "DEST=SRC", long, help_heading = heading::ENVIRONMENT)]
    pub(crate) file_mount: Vec<String>,

    /// Show the storage NAME at DEST on every node: a directory kept after the run (repeatable).
    ///
    /// A task file's `file_mounts: {DEST: {name: NAME}}` (SkyPilot's bucket): the directory
    /// `storage/NAME` in your state directory, made when missing, seen by every node as it is,
    /// so that what the run writes there is there for the next run. DEST as --file-mount's.
    #[arg(value_name = "DEST=NAME", long, help_heading = heading::ENVIRONMENT)]
    pub(crate) storage: Vec<String>,

    /// Each node works in a new, empty directory of its own.
    ///
    /// --setup and the command start there, on the node's disk as with --snapshot, but
    /// nothing is copied into it: a `git clone` or a venv there does not collide with another
    /// node's. What a task file without `workdir:` does. The last of --snapshot, --workdir
    /// and this one given wins.
    #[arg(long, overrides_with_all = ["snapshot", "workdir", "git_workdir"], help_heading = heading::ENVIRONMENT)]
    pub(crate) empty_workdir: bool,

    /// Largest snapshot, e.g. `500M`, `2G` (default: 1G; a plain number is megabytes).
    #[arg(value_name = "SIZE", long, env = env_vars::SNAPSHOT_MAX_SIZE, help_heading = heading::ENVIRONMENT)]
    pub(crate) snapshot_max_size: Option<String>,
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

    /// Requeue the job when the command fails, at most N times [default: 0]
    ///
    /// A task file's `job_recovery: {max_restarts_on_errors: N}`. A command that exits
    /// non-zero puts the job back in the queue for another attempt (`RAYSLURM_RESTART_COUNT`
    /// one higher, the same `RAYSLURM_RUN_DIR`) until it has failed N+1 times; counted apart
    /// from --requeue's. The job is submitted requeueable (sbatch --requeue), so Slurm requeues
    /// it after a node failure too.
    #[arg(
        value_name = "N",
        long,
        value_parser = count,
        allow_hyphen_values = true,
        help_heading = heading::LONG_RUNS
    )]
    pub(crate) restarts_on_error: Option<u32>,

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

    /// Time limit (e.g. `30`, `2:00:00`, `1-12:00`; `0` or `UNLIMITED`: none).
    ///
    /// As sbatch takes it: minutes, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`; `0`,
    /// `UNLIMITED` and `INFINITE` ask for no limit (the partition's own may still apply).
    #[arg(long, short = 't', env = env_vars::TIME, help_heading = heading::JOB)]
    pub(crate) time: Option<String>,

    /// Any other sbatch option, e.g. `--sbatch-arg=--mail-type=END`.
    ///
    /// Repeatable: one option each.
    #[arg(value_name = "OPTION", long = "sbatch-arg", allow_hyphen_values = true, help_heading = heading::JOB)]
    pub(crate) sbatch_args: Vec<String>,

    /// Where a link to each run's log goes [default: ./rayslurm-logs]
    ///
    /// Only links go there (the script, log and run files stay in rayslurm's private
    /// directory); the default is made when first needed.
    #[arg(value_name = "DIR", long, env = env_vars::LOG_DIR, help_heading = heading::JOB)]
    pub(crate) log_dir: Option<PathBuf>,

    /// A Tera template of your own.
    ///
    /// Rendered instead of the built-in one (start from `rayslurm template`).
    #[arg(value_name = "FILE", long, env = env_vars::TEMPLATE, help_heading = heading::JOB)]
    pub(crate) template: Option<PathBuf>,

    /// Number of nodes (Slurm's -N/--nodes).
    ///
    /// For Slurm's MIN-MAX form, give the maximum here and the minimum with --min-nodes.
    #[arg(value_name = "N", long, short = 'n', visible_short_alias = 'N', visible_alias = "nodes", default_value = "1", value_parser = node_count, allow_hyphen_values = true, help_heading = heading::RESOURCES)]
    pub(crate) num_nodes: u32,

    /// Tasks per node (Slurm's --ntasks-per-node).
    #[arg(value_name = "N", long, visible_alias = "ntasks-per-node", default_value = "1", value_parser = positive_count, allow_hyphen_values = true, help_heading = heading::RESOURCES)]
    pub(crate) tasks_per_node: u32,

    /// CPUs per task.
    #[arg(value_name = "N", long, value_parser = positive_count, allow_hyphen_values = true, help_heading = heading::RESOURCES)]
    pub(crate) cpus_per_task: Option<u32>,

    /// GPUs per node, of a type where given (e.g. `4`, `a100:4`, `A100-80GB:4`).
    ///
    /// N GPUs on each node, whatever --tasks-per-node is. TYPE is looked up among the site's
    /// GPU types (`rayslurm gpus`; case, `-` and `_` alike, so SkyPilot's `A100-80GB` is
    /// `a100_80gb`) or the config's `gpu_partitions`. Candidates: `{h100:8,a100:4}` takes the
    /// one with free nodes now, `[h100:8,a100:4]` the first in order with free nodes. Ray is
    /// told N per node.
    #[arg(value_name = "[TYPE:]N", long, default_value = "0", value_parser = clap::value_parser!(GpuAsk), allow_hyphen_values = true, help_heading = heading::RESOURCES)]
    pub(crate) num_gpus: GpuAsk,

    /// Where a task file gave --num-gpus (`task.yaml:5: resources.accelerators`), for its
    /// refusals.
    #[arg(skip)]
    pub(crate) num_gpus_from: Option<String>,

    /// How GPUs are requested [default: gpus-per-task]
    ///
    /// As --gpus-per-task, --gpus-per-node or --gres=gpu:[TYPE:]N; --gpus-per-task carries
    /// N / --tasks-per-node (or becomes --gpus-per-node where that does not divide).
    #[arg(value_name = "HOW", long, value_enum, env = env_vars::GPU_DIRECTIVE, help_heading = heading::RESOURCES)]
    pub(crate) gpu_directive: Option<GpuDirective>,

    /// Memory per node, asked of Slurm (e.g. `16G`, `16GB`; a plain number is megabytes).
    ///
    /// Slurm's --mem: `0` asks for all of each node's memory. Not `exec --memory`, which is
    /// memory a job on a cluster reserves in Ray's own accounting.
    #[arg(value_name = "SIZE", long, conflicts_with = "mem_per_cpu", help_heading = heading::RESOURCES)]
    pub(crate) mem: Option<String>,

    /// Memory per CPU, asked of Slurm (e.g. `2G`, `1GB`).
    #[arg(value_name = "SIZE", long, help_heading = heading::RESOURCES)]
    pub(crate) mem_per_cpu: Option<String>,

    /// Nodes to run on, as sinfo prints them (e.g. `node[01-04]`; Slurm's -w/--nodelist).
    ///
    /// Names, not a count: the number of nodes is --num-nodes.
    #[arg(value_name = "LIST", long = "node", short = 'w', visible_alias = "nodelist", help_heading = heading::RESOURCES)]
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
    ///
    /// `KEY` alone takes its value from this shell (`--env HF_TOKEN`), so that a secret never
    /// appears on a command line.
    #[arg(value_name = "KEY[=VALUE]", long = "env", allow_hyphen_values = true, help_heading = heading::ENVIRONMENT)]
    pub(crate) env: Vec<String>,

    /// Environment variables from FILE: `KEY=VALUE` lines (repeatable).
    ///
    /// For secrets: unlike --env, the values never appear on a command line, which `ps` shows
    /// to every user of the machine. `#` comments and blank lines are skipped; --env wins over
    /// a key given here too.
    #[arg(value_name = "FILE", long, help_heading = heading::ENVIRONMENT)]
    pub(crate) env_file: Vec<PathBuf>,

    /// A secret for the command, `KEY` (its value in this shell) or `KEY=VALUE` (repeatable).
    ///
    /// Set as --env sets it, and never shown: a dry run prints `***` for its value, which is
    /// only in the run's private script.
    #[arg(value_name = "KEY[=VALUE]", long, allow_hyphen_values = true, help_heading = heading::ENVIRONMENT)]
    pub(crate) secret: Vec<String>,
}

/// The cluster's flags as the user gives them; resolved (with config files and defaults) into
/// `handoff::cluster::ClusterOptions`, which the bootstrap gets.
#[derive(Debug, Clone, Args)]
pub(crate) struct ClusterArgs {
    /// Run this on every node first, before the command (or Ray).
    ///
    /// It runs in parallel, with the rank environment ($RAYSLURM_NODE_RANK is 0 on one node
    /// only); the command (or Ray) starts only once every node's setup succeeded, and the first
    /// to fail fails the run. Its time is not counted in --ready-timeout: --setup-timeout
    /// limits it. With `launch --snapshot` it runs in the node's own copy of the workdir.
    #[arg(value_name = "CMD", long, allow_hyphen_values = true, help_heading = heading::ENVIRONMENT)]
    pub(crate) setup: Option<String>,

    /// Seconds every node's --setup may take (default: no limit).
    ///
    /// Counted from the start of the setups; the run fails when a node's setup has not
    /// ended by then.
    #[arg(value_name = "SECS", long, value_parser = positive_count, allow_hyphen_values = true, env = env_vars::SETUP_TIMEOUT, help_heading = heading::ENVIRONMENT)]
    pub(crate) setup_timeout: Option<u32>,

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

    /// Seconds the cluster may take to start, setup not counted [default: 180]
    ///
    /// How long to wait for Ray (or the nodes) before failing the job; the clock starts once
    /// every node's --setup is done (see --setup-timeout).
    #[arg(value_name = "SECS", long, value_parser = positive_count, allow_hyphen_values = true, env = env_vars::READY_TIMEOUT, help_heading = heading::INSIDE)]
    pub(crate) ready_timeout: Option<u32>,

    /// Seconds of warning before the time limit [default: 60]
    ///
    /// Slurm asks the job to stop cleanly this long before its time limit; 0 asks for no
    /// warning. With no time limit (`--time 0` or `UNLIMITED`) there is nothing to warn of.
    #[arg(value_name = "SECS", long, value_parser = count, allow_hyphen_values = true, env = env_vars::STOP_GRACE, help_heading = heading::INSIDE)]
    pub(crate) stop_grace: Option<u32>,

    /// Put Ray's ports in one fixed block from PORT.
    ///
    /// For a firewall that opens one range: Ray's services on PORT to PORT+8, the rendezvous
    /// port (`MASTER_PORT`) PORT+9, workers PORT+10 to PORT+999, each checked free on every
    /// node. Default: every port chosen free per run and node, no block.
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
