//! The environment variables Slurm sets inside an allocation that the bootstrap reads, and the
//! one rayslurm sets for Slurm's clients.

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
