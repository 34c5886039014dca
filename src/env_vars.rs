//! The environment variables users set to configure rayslurm on the login node, in one place.
//!
//! Only the launcher reads them: jobs inherit the login environment, so the bootstrap never
//! takes its options from here. The variables set inside jobs are in `handoff::job_env`, and
//! the two lists never share a name.

// Defaults for `launch` and `up` (below the command line, above config files), one for each
// config-file key, named after it: `RAYSLURM_PARTITION` is `partition`. clap reads them (each
// option's `env`, shown in `--help`); an empty one counts as unset.
pub(crate) const PARTITION: &str = "RAYSLURM_PARTITION";
pub(crate) const ACCOUNT: &str = "RAYSLURM_ACCOUNT";
pub(crate) const QOS: &str = "RAYSLURM_QOS";
pub(crate) const CONSTRAINT: &str = "RAYSLURM_CONSTRAINT";
pub(crate) const TIME: &str = "RAYSLURM_TIME";
pub(crate) const LOG_DIR: &str = "RAYSLURM_LOG_DIR";
pub(crate) const LOAD_ENV: &str = "RAYSLURM_LOAD_ENV";
pub(crate) const TEMPLATE: &str = "RAYSLURM_TEMPLATE";
pub(crate) const GPU_DIRECTIVE: &str = "RAYSLURM_GPU_DIRECTIVE";
pub(crate) const INTERFACE: &str = "RAYSLURM_INTERFACE";
pub(crate) const IP_FAMILY: &str = "RAYSLURM_IP_FAMILY";
pub(crate) const OBJECT_STORE_MEMORY: &str = "RAYSLURM_OBJECT_STORE_MEMORY";
pub(crate) const RAY_ARGS: &str = "RAYSLURM_RAY_ARGS";
pub(crate) const RAY_HEAD_ARGS: &str = "RAYSLURM_RAY_HEAD_ARGS";
pub(crate) const READY_TIMEOUT: &str = "RAYSLURM_READY_TIMEOUT";
/// `--setup-timeout`, the config key `setup_timeout`.
pub(crate) const SETUP_TIMEOUT: &str = "RAYSLURM_SETUP_TIMEOUT";
/// `launch --snapshot-max-size`.
pub(crate) const SNAPSHOT_MAX_SIZE: &str = "RAYSLURM_SNAPSHOT_MAX_SIZE";
pub(crate) const STOP_GRACE: &str = "RAYSLURM_STOP_GRACE";
/// `true` (or `1`, `yes`, `on`) is `--no-ray-auth`, the config key `ray_auth = false`.
pub(crate) const NO_RAY_AUTH: &str = "RAYSLURM_NO_RAY_AUTH";
/// Seconds a dry run (and `up --max-nodes`) gives `sbatch --test-only` to answer; default 20.
pub(crate) const TEST_ONLY_TIMEOUT: &str = "RAYSLURM_TEST_ONLY_TIMEOUT";
/// `up --idle-timeout`.
pub(crate) const IDLE_TIMEOUT: &str = "RAYSLURM_IDLE_TIMEOUT";
/// `--container-image`, `--container-mounts`, `--container-workdir`, `--container-runtime`:
/// the image the run's programs run in, and how (the config keys `container_image`, ...).
pub(crate) const CONTAINER_IMAGE: &str = "RAYSLURM_CONTAINER_IMAGE";
pub(crate) const CONTAINER_MOUNTS: &str = "RAYSLURM_CONTAINER_MOUNTS";
pub(crate) const CONTAINER_WORKDIR: &str = "RAYSLURM_CONTAINER_WORKDIR";
pub(crate) const CONTAINER_RUNTIME: &str = "RAYSLURM_CONTAINER_RUNTIME";
pub(crate) const SIGNAL: &str = "RAYSLURM_SIGNAL";
pub(crate) const MAX_REQUEUES: &str = "RAYSLURM_MAX_REQUEUES";
/// `--host`: the login node every command runs on, over SSH, from this machine.
pub(crate) const HOST: &str = "RAYSLURM_HOST";
/// Where run records are kept; default `$XDG_STATE_HOME/rayslurm` or `~/.local/state/rayslurm`.
pub(crate) const STATE_DIR: &str = "RAYSLURM_STATE_DIR";
/// Owner ids (comma-separated) accepted as the user's own where a shared filesystem cannot
/// show owners (NFS's `nobody`, an `all_squash` id): the escape hatch of the private tree,
/// named for its risk (anyone mapped to such an id may write there).
pub(crate) const TRUST_UNVERIFIED_OWNER: &str = crate::sys::private_tree::TRUST_UNVERIFIED_OWNER;
/// A user config file to read instead of `$XDG_CONFIG_HOME/rayslurm/config.toml`; an absolute
/// path.
pub(crate) const CONFIG: &str = "RAYSLURM_CONFIG";
pub(crate) const XDG_STATE_HOME: &str = "XDG_STATE_HOME";
pub(crate) const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
pub(crate) const HOME: &str = "HOME";
pub(crate) const NO_COLOR: &str = "NO_COLOR";
/// How the login node reaches a cluster's head: `always` through the allocation (an `srun`
/// step relaying bytes), `never` only directly; unset, directly where it can, else relayed.
pub(crate) const RELAY: &str = "RAYSLURM_RELAY";
