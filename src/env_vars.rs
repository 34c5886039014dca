//! The environment variables users set to configure rayslurm on the login node, in one place.
//!
//! Only the launcher reads them: jobs inherit the login environment, so the bootstrap never
//! takes its options from here. The variables set inside jobs are in `handoff::job_env`, and
//! the two lists never share a name.

/// Defaults for `launch` read from the environment (below the command line, above files).
pub(crate) const PARTITION: &str = "RAYSLURM_PARTITION";
pub(crate) const ACCOUNT: &str = "RAYSLURM_ACCOUNT";
pub(crate) const QOS: &str = "RAYSLURM_QOS";
pub(crate) const TIME: &str = "RAYSLURM_TIME";
pub(crate) const LOG_DIR: &str = "RAYSLURM_LOG_DIR";
pub(crate) const LOAD_ENV: &str = "RAYSLURM_LOAD_ENV";
pub(crate) const INTERFACE: &str = "RAYSLURM_INTERFACE";
pub(crate) const SIGNAL: &str = "RAYSLURM_SIGNAL";
pub(crate) const MAX_REQUEUES: &str = "RAYSLURM_MAX_REQUEUES";
/// Where run records are kept; default `$XDG_STATE_HOME/rayslurm` or `~/.local/state/rayslurm`.
pub(crate) const STATE_DIR: &str = "RAYSLURM_STATE_DIR";
/// A user config file to read instead of `$XDG_CONFIG_HOME/rayslurm/config.toml`.
pub(crate) const CONFIG: &str = "RAYSLURM_CONFIG";
pub(crate) const XDG_STATE_HOME: &str = "XDG_STATE_HOME";
pub(crate) const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
pub(crate) const HOME: &str = "HOME";
pub(crate) const NO_COLOR: &str = "NO_COLOR";
/// How the login node reaches a cluster's head: `always` through the allocation (an `srun`
/// step relaying bytes), `never` only directly; unset, directly where it can, else relayed.
pub(crate) const RELAY: &str = "RAYSLURM_RELAY";
