//! The arguments of the commands that mirror Ray's cluster launcher (`ray submit`, `ray
//! rsync_up`, `ray attach`): `submit`, `rsync-up`, `attach`. Each takes a cluster's name or
//! Ray's cluster YAML that started it (its `cluster_name`), as `up`, `down`, `exec` and
//! `dashboard` do.

use std::path::PathBuf;

use clap::Args;

use super::values::ray_amount;

#[derive(Debug, Args)]
pub(crate) struct SubmitArgs {
    /// The cluster, or Ray's cluster YAML that started it (`rayslurm up cluster.yaml`).
    pub(crate) cluster: String,

    /// The script: copied into the cluster's private directory now, and run there as a job
    /// of the cluster (`python SCRIPT`; `bash SCRIPT` for a `.sh`), as `ray submit` runs it.
    #[arg(value_name = "SCRIPT")]
    pub(crate) script: PathBuf,

    /// The script's arguments (options of `submit` go before the cluster).
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub(crate) args: Vec<String>,

    /// Return once the job is submitted; follow it with `rayslurm logs CLUSTER JOB -f`.
    #[arg(long, short)]
    pub(crate) detach: bool,

    /// CPUs the job needs (Ray's entrypoint resources): it waits in Ray's queue until free.
    #[arg(long, value_name = "N", value_parser = ray_amount)]
    pub(crate) num_cpus: Option<f64>,

    /// GPUs the job needs, fractions allowed: it sees those Ray gave it.
    #[arg(long, value_name = "N", value_parser = ray_amount)]
    pub(crate) num_gpus: Option<f64>,

    /// An environment variable for the job, `KEY=VALUE` (repeatable); `KEY` alone takes its
    /// value from this shell.
    #[arg(value_name = "KEY[=VALUE]", long = "env", allow_hyphen_values = true)]
    pub(crate) env: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RsyncUpArgs {
    /// The cluster, or Ray's cluster YAML that started it.
    pub(crate) cluster: String,

    /// A file or directory here.
    #[arg(value_name = "SRC")]
    pub(crate) source: PathBuf,

    /// Where it goes, relative to the cluster's files directory (`$RAYSLURM_CLUSTER_FILES`,
    /// which every node sees): a relative path that stays inside it.
    #[arg(value_name = "DST")]
    pub(crate) target: String,
}

#[derive(Debug, Args)]
pub(crate) struct AttachArgs {
    /// The cluster, or Ray's cluster YAML that started it.
    pub(crate) cluster: String,

    /// A command to run there instead of a shell, and its arguments.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}
