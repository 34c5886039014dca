//! Every environment variable rayslurm reads or sets, in one place.

/// Defaults for `launch` read from the environment (below the command line, above files).
pub(crate) const PARTITION: &str = "RAYSLURM_PARTITION";
pub(crate) const ACCOUNT: &str = "RAYSLURM_ACCOUNT";
pub(crate) const QOS: &str = "RAYSLURM_QOS";
pub(crate) const TIME: &str = "RAYSLURM_TIME";
pub(crate) const LOG_DIR: &str = "RAYSLURM_LOG_DIR";
pub(crate) const LOAD_ENV: &str = "RAYSLURM_LOAD_ENV";
pub(crate) const INTERFACE: &str = "RAYSLURM_INTERFACE";
/// Where run records are kept; default `$XDG_STATE_HOME/rayslurm` or `~/.local/state/rayslurm`.
pub(crate) const STATE_DIR: &str = "RAYSLURM_STATE_DIR";
/// A user config file to read instead of `$XDG_CONFIG_HOME/rayslurm/config.toml`.
pub(crate) const CONFIG: &str = "RAYSLURM_CONFIG";
pub(crate) const XDG_STATE_HOME: &str = "XDG_STATE_HOME";
pub(crate) const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
pub(crate) const HOME: &str = "HOME";
pub(crate) const NO_COLOR: &str = "NO_COLOR";

/// Set for the user command (and Ray's processes) inside the allocation.
pub(crate) const RAY_ADDRESS: &str = "RAY_ADDRESS";
pub(crate) const NODE_RANK: &str = "RAYSLURM_NODE_RANK";
pub(crate) const NODE_IPS: &str = "RAYSLURM_NODE_IPS";
pub(crate) const NUM_NODES: &str = "RAYSLURM_NUM_NODES";
pub(crate) const NUM_GPUS_PER_NODE: &str = "RAYSLURM_NUM_GPUS_PER_NODE";
pub(crate) const HEAD_IP: &str = "RAYSLURM_HEAD_IP";
pub(crate) const PYTHONUNBUFFERED: &str = "PYTHONUNBUFFERED";
/// Marks every process a bootstrap starts, so that it stops exactly those and no others.
pub(crate) const RUN_MARK: &str = "RAYSLURM_RUN_MARK";
/// Ray's temp root (Ray reads it in place of /tmp).
pub(crate) const RAY_TMPDIR: &str = "RAY_TMPDIR";
/// The temp dir of Ray's processes too: what they leave there (Python multiprocessing's
/// `pymp-*` dirs, say) goes when the temp root goes.
pub(crate) const TMPDIR: &str = "TMPDIR";

/// Read from Slurm inside the allocation.
pub(crate) const SLURM_JOB_ID: &str = "SLURM_JOB_ID";
pub(crate) const SLURM_JOB_NODELIST: &str = "SLURM_JOB_NODELIST";
pub(crate) const SLURMD_NODENAME: &str = "SLURMD_NODENAME";
/// A task's rank within its step (workers: 0 for the first worker node).
pub(crate) const SLURM_PROCID: &str = "SLURM_PROCID";
pub(crate) const SLURM_CPUS_ON_NODE: &str = "SLURM_CPUS_ON_NODE";
pub(crate) const SLURM_GPUS_ON_NODE: &str = "SLURM_GPUS_ON_NODE";
pub(crate) const SLURM_GPUS_PER_NODE: &str = "SLURM_GPUS_PER_NODE";
pub(crate) const SLURM_GPUS_PER_TASK: &str = "SLURM_GPUS_PER_TASK";
pub(crate) const CUDA_VISIBLE_DEVICES: &str = "CUDA_VISIBLE_DEVICES";

/// Set for Slurm's clients (`standard`), so that they print times one way whatever the user set.
pub(crate) const SLURM_TIME_FORMAT: &str = "SLURM_TIME_FORMAT";
