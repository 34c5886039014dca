//! The arguments of the cluster commands: `up`, `exec`, `queue`, `scale`, `down`, `dashboard`,
//! `forward`.

use std::path::PathBuf;

use clap::Args;

use super::container::ContainerArgs;
use super::heading;
use super::launch::{ClusterArgs, JobArgs};
use super::values::{positive_count, ray_amount};
use super::worker_type::{WorkerTypeArg, worker_type};
use crate::env_vars;
use crate::handoff::elastic::ScaleRequest;
use crate::launch::config::idle_duration;

#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    /// The cluster's name (clusters and experiments share one namespace), or Ray's cluster
    /// YAML (`cluster.yaml`, whose `cluster_name` names the cluster; docs/clusters.md).
    pub(crate) name: String,

    /// A task file (SkyPilot's YAML format) giving the cluster's nodes, resources and setup.
    ///
    /// Its `run` is not run (`exec` the jobs); flags given here override it. See
    /// docs/task-files.md.
    #[arg(value_name = "TASK.yaml")]
    pub(crate) task: Option<PathBuf>,

    /// Stop after this long without a job.
    ///
    /// Release the allocation after this long without a running or pending job (e.g. `30m`,
    /// `2h`, `90s`; a plain number is minutes).
    #[arg(value_name = "DURATION", long, value_parser = idle_duration, env = env_vars::IDLE_TIMEOUT, help_heading = heading::JOB)]
    pub(crate) idle_timeout: Option<u32>,

    #[command(flatten)]
    pub(crate) job: JobArgs,

    #[command(flatten)]
    pub(crate) container: ContainerArgs,

    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,

    #[command(flatten)]
    pub(crate) elastic: ElasticArgs,

    /// Copy a local file or directory now and place it at DEST on every node (repeatable).
    ///
    /// Ray's cluster YAML's `file_mounts: {DEST: SRC}`, and a task file's. Copied at `up`
    /// into the cluster's private directory and placed on each node as it starts, workers
    /// that join later included: `~/PATH` under your home, under /tmp on the node's own
    /// disk, with --container-image bound into the image, any other new path (`/data`)
    /// shown to the cluster's programs in a private view of the node's filesystem. A
    /// cluster has no workdir of its own, so DEST is not relative.
    #[arg(value_name = "DEST=SRC", long, help_heading = heading::ENVIRONMENT)]
    pub(crate) file_mount: Vec<String>,

    /// Return once the allocation is submitted, without waiting for the cluster.
    #[arg(long, short, help_heading = heading::OUTPUT)]
    pub(crate) detach: bool,

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
}

/// An elastic cluster (`up --max-nodes N`): the head grows it with worker jobs and gives
/// them back when idle.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ElasticArgs {
    /// Grow with worker jobs up to N nodes in all (the head's allocation included)
    ///
    /// An elastic cluster: when Ray has work it cannot place, the head submits worker jobs
    /// (Slurm jobs of one node each, with this cluster's partition, account, resources and
    /// environment) that join its Ray, and gives each back once idle. At least --num-nodes;
    /// not with --node. `up` first asks Slurm whether it would take such a job (`sbatch
    /// --test-only`); `rayslurm scale` asks for more or fewer at any time.
    #[arg(value_name = "N", long, value_parser = positive_count, allow_hyphen_values = true, help_heading = heading::ELASTIC)]
    pub(crate) max_nodes: Option<u32>,

    /// Seconds a worker job may run nothing before it is given back [default: 300]
    ///
    /// With --max-nodes: counted by Ray, from the last task or actor on the worker's node.
    #[arg(value_name = "SECS", long, value_parser = positive_count, allow_hyphen_values = true, help_heading = heading::ELASTIC)]
    pub(crate) worker_idle_timeout: Option<u32>,

    /// Worker jobs waiting in Slurm's queue at once, at most [default: 2]
    ///
    /// With --max-nodes: the head submits no more while this many wait for a node.
    #[arg(value_name = "N", long, value_parser = positive_count, allow_hyphen_values = true, help_heading = heading::ELASTIC)]
    pub(crate) max_pending_workers: Option<u32>,

    /// Replace a worker job that ended early, even without work waiting
    ///
    /// With --max-nodes: a worker job that a node failure or a preemption ended is submitted
    /// again at once, not only when Ray has work it cannot place.
    #[arg(long, help_heading = heading::ELASTIC)]
    pub(crate) replace_failed: bool,

    /// A kind of worker job, `NAME: OPTIONS` (repeatable)
    ///
    /// Its OPTIONS are launch's long options, for this type's jobs on top of the cluster's own
    /// (`--partition`, `--account`, `--qos`, `--time`, `--num-nodes` per job, `--cpus-per-task`,
    /// `--mem`, `--mem-per-cpu`, `--num-gpus [TYPE:]N`, `--constraint`, `--exclusive`,
    /// `--sbatch-arg`, `--container-image`, `--setup`), what Ray is told of its nodes
    /// (`--resources JSON`, `--labels K=V,...`), and how many: `--min-workers N`, `--max-workers N`
    /// (nodes), `--idle-timeout SECS`, `--preemptible`, `--rollover SECS`. The head grows the type
    /// that can hold each piece of Ray's pending work, as Ray's own autoscaler chooses. Without
    /// --max-nodes, the cluster may hold the head's nodes and every type's --max-workers. E.g.
    /// `--worker-type 'gpu: -p gpu --num-gpus l4:1 --max-workers 2'`. See docs/clusters.md.
    #[arg(value_name = "NAME: OPTIONS", long = "worker-type", value_parser = worker_type, help_heading = heading::ELASTIC)]
    pub(crate) worker_type: Vec<WorkerTypeArg>,
}

#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The cluster (from `rayslurm up`), or Ray's cluster YAML that started it.
    pub(crate) cluster: String,

    /// A task file (SkyPilot's YAML format): `num_nodes: K` runs it as --per-node -n K.
    ///
    /// Flags given here override it; its `rayslurm:` section takes exec's options by name.
    /// See docs/task-files.md.
    #[arg(value_name = "TASK.yaml")]
    pub(crate) task: Option<PathBuf>,

    /// Return once the job is submitted; follow it with `rayslurm logs CLUSTER JOB -f`.
    #[arg(long, short)]
    pub(crate) detach: bool,

    /// A name for the job, shown by `queue`.
    #[arg(long)]
    pub(crate) name: Option<String>,

    /// CPUs this job needs (with --per-node: each rank). It waits in Ray's queue until free.
    #[arg(long, value_name = "N", value_parser = ray_amount)]
    pub(crate) num_cpus: Option<f64>,

    /// GPUs this job needs (with --per-node: each rank), fractions allowed, e.g. 0.5.
    ///
    /// The job (each rank) sees the GPUs Ray gave it in CUDA_VISIBLE_DEVICES. Not per node as
    /// in `launch`, unless with --per-node, where each rank has a node of its own.
    #[arg(long, value_name = "N", value_parser = ray_amount)]
    pub(crate) num_gpus: Option<f64>,

    /// Memory this job needs (with --per-node: each rank), as a Ray resource (e.g. `4G`).
    ///
    /// Ray's own accounting, not Slurm's: unlike `launch --mem`, which asks Slurm for memory
    /// per node, this only keeps jobs from being placed where Ray has promised it already.
    #[arg(long, value_name = "SIZE")]
    pub(crate) memory: Option<String>,

    /// Run the command once on each of N distinct nodes (-n), with the rank variables of
    /// `launch --per-node`.
    ///
    /// RAYSLURM_NODE_RANK, MASTER_ADDR/MASTER_PORT (rank 0's node), RANK, WORLD_SIZE and
    /// SkyPilot's names for them. The job waits in Ray's queue until N nodes have room for a
    /// rank; the first rank to fail stops the others. Output lines carry a `[RANK NODE] ` prefix.
    #[arg(long)]
    pub(crate) per_node: bool,

    /// With --per-node: how many nodes (ranks); every node of the cluster by default.
    #[arg(
        value_name = "N",
        long = "num-nodes",
        short = 'n',
        visible_alias = "nodes",
        short_alias = 'N',
        requires = "per_node"
    )]
    pub(crate) num_nodes: Option<u32>,

    /// With --per-node: a command every rank runs first; the command starts on no node until
    /// every setup has succeeded.
    #[arg(long, allow_hyphen_values = true, requires = "per_node")]
    pub(crate) setup: Option<String>,

    /// Copy the workdir now; the job (each rank) runs in that copy.
    ///
    /// At submission the workdir (--workdir, else the current directory) is copied into the
    /// cluster's private directory, beside the job's log: in a git repository its tracked
    /// files and the untracked ones that are not ignored, elsewhere every file. The job starts
    /// there when Ray runs it: edits after `exec` do not reach a queued job. With --per-node
    /// every rank starts in the same copy, on the shared filesystem.
    #[arg(long)]
    pub(crate) snapshot: bool,

    /// The directory --snapshot copies (implies --snapshot).
    #[arg(value_name = "DIR", long)]
    pub(crate) workdir: Option<PathBuf>,

    /// Largest snapshot, e.g. `500M`, `2G` (default: 1G; a plain number is megabytes).
    #[arg(value_name = "SIZE", long)]
    pub(crate) snapshot_max_size: Option<String>,

    /// An environment variable for the job, `KEY=VALUE` (repeatable); `KEY` alone takes its
    /// value from this shell.
    #[arg(value_name = "KEY[=VALUE]", long = "env", allow_hyphen_values = true)]
    pub(crate) env: Vec<String>,

    /// Environment variables from FILE: `KEY=VALUE` lines (repeatable).
    ///
    /// For secrets: unlike --env, the values never appear on a command line, which `ps` shows
    /// to every user of the machine. --env wins over a key given here too.
    #[arg(value_name = "FILE", long)]
    pub(crate) env_file: Vec<PathBuf>,

    /// A secret for the job, `KEY` (its value in this shell) or `KEY=VALUE` (repeatable).
    ///
    /// As --env, but its value never reaches Ray: it is written to a file only you can read,
    /// beside the job's record, which the job's shell reads before the command. It wins over
    /// the same key in --env and --env-file.
    #[arg(value_name = "KEY[=VALUE]", long, allow_hyphen_values = true)]
    pub(crate) secret: Vec<String>,

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
pub(crate) struct ScaleArgs {
    /// The cluster (from `rayslurm up --max-nodes`).
    pub(crate) cluster: String,

    /// `+N` worker jobs more, `-N` fewer (pending ones first, then the idlest), or `=N` nodes in
    /// all (the head's own included).
    #[arg(value_name = "CHANGE", allow_hyphen_values = true, value_parser = ScaleRequest::parse)]
    pub(crate) change: ScaleRequest,

    /// With `+N` or `=N`: the worker type to grow (default: the cluster's first, `up
    /// --worker-type`'s first, or its one type).
    #[arg(value_name = "NAME", long = "worker-type")]
    pub(crate) worker_type: Option<String>,

    /// Seconds to wait for the cluster's head to take the request.
    #[arg(value_name = "SECS", long, value_parser = positive_count, default_value_t = 30)]
    pub(crate) timeout: u32,

    /// Print the cluster's jobs as JSON (`{"max_nodes", "paused", "updated_at", "jobs"}`).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DownArgs {
    /// The cluster, or Ray's cluster YAML that started it.
    pub(crate) cluster: String,
}

#[derive(Debug, Args)]
pub(crate) struct DashboardArgs {
    /// The cluster (or a run of `launch`), or Ray's cluster YAML that started it.
    pub(crate) target: String,
    /// The local port to listen on (default: the dashboard's own port number).
    #[arg(long)]
    pub(crate) port: Option<u16>,
}

#[derive(Debug, Args)]
pub(crate) struct ForwardArgs {
    /// The run (of `launch`) or cluster (of `up`) whose head node serves the ports.
    pub(crate) target: String,
    /// Ports of the head node to forward, each to the same port here (or to any free one where
    /// that is taken), or to LOCAL: `8080`, `8080:18080`, a range `9000-9002` (as a task
    /// file's `ports` writes it) or `9000-9002:19000-19002`.
    #[arg(required = true, value_name = "PORT[:LOCAL]")]
    pub(crate) ports: Vec<String>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};
    use crate::handoff::elastic::ScaleRequest;

    fn change(argv: &[&str]) -> Result<(ScaleRequest, bool), String> {
        let mut full = vec!["rayslurm", "scale"];
        full.extend_from_slice(argv);
        match Cli::try_parse_from(full)
            .map_err(|e| e.to_string())?
            .command
        {
            Command::Scale(args) => Ok((args.change, args.json)),
            _ => unreachable!(),
        }
    }

    /// `-1` is a change, not a flag, wherever the flags stand.
    #[test]
    fn scale_takes_a_negative_change_as_its_value() {
        assert_eq!(change(&["lab", "-1"]), Ok((ScaleRequest::Remove(1), false)));
        assert_eq!(
            change(&["lab", "-2", "--json"]),
            Ok((ScaleRequest::Remove(2), true))
        );
        assert_eq!(
            change(&["--json", "lab", "-3"]),
            Ok((ScaleRequest::Remove(3), true))
        );
        assert_eq!(change(&["lab", "+2"]), Ok((ScaleRequest::Add(2), false)));
        assert_eq!(change(&["lab", "=4"]), Ok((ScaleRequest::To(4), false)));
        let err = change(&["lab", "4"]).unwrap_err();
        assert!(err.contains("+N (add), -N (remove) or =N"), "{err}");
        assert!(change(&["lab"]).is_err(), "a change is needed");
    }
}
