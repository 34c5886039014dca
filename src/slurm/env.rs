//! The environment variables Slurm sets inside an allocation that the bootstrap reads, and the
//! one rayslurm sets for Slurm's clients.

pub(crate) const SLURM_JOB_ID: &str = "SLURM_JOB_ID";
/// An array task's index (`launch --array`): its files are named from it.
pub(crate) const SLURM_ARRAY_TASK_ID: &str = "SLURM_ARRAY_TASK_ID";
pub(crate) const SLURM_JOB_NODELIST: &str = "SLURM_JOB_NODELIST";
pub(crate) const SLURMD_NODENAME: &str = "SLURMD_NODENAME";
/// A task's rank within its step (workers: 0 for the first worker node).
pub(crate) const SLURM_PROCID: &str = "SLURM_PROCID";
/// A task's rank on its node.
pub(crate) const SLURM_LOCALID: &str = "SLURM_LOCALID";
/// The tasks of the step.
pub(crate) const SLURM_NTASKS: &str = "SLURM_NTASKS";
/// The job's tasks per node (`--ntasks-per-node`).
pub(crate) const SLURM_NTASKS_PER_NODE: &str = "SLURM_NTASKS_PER_NODE";
pub(crate) const SLURM_CPUS_ON_NODE: &str = "SLURM_CPUS_ON_NODE";
/// The job's memory per node, in MB (set where Slurm tracks memory).
pub(crate) const SLURM_MEM_PER_NODE: &str = "SLURM_MEM_PER_NODE";
/// The job's memory per CPU, in MB (set instead, with `--mem-per-cpu` or `DefMemPerCPU`).
pub(crate) const SLURM_MEM_PER_CPU: &str = "SLURM_MEM_PER_CPU";
/// The directory the job was submitted from, where its batch script should run.
pub(crate) const SLURM_SUBMIT_DIR: &str = "SLURM_SUBMIT_DIR";
/// How many times Slurm has requeued the job; unset on its first run.
pub(crate) const SLURM_RESTART_COUNT: &str = "SLURM_RESTART_COUNT";
pub(crate) const SLURM_GPUS_ON_NODE: &str = "SLURM_GPUS_ON_NODE";
pub(crate) const SLURM_GPUS_PER_NODE: &str = "SLURM_GPUS_PER_NODE";
pub(crate) const SLURM_GPUS_PER_TASK: &str = "SLURM_GPUS_PER_TASK";
pub(crate) const CUDA_VISIBLE_DEVICES: &str = "CUDA_VISIBLE_DEVICES";
/// What Slurm sets on the batch node for the GPUs it has there. A step started from the batch
/// script inherits them on every node, where slurmd sets them again only on nodes with GPUs of
/// the job: a node without any would take the batch node's as its own.
pub(crate) const NODE_GPU_VARS: &[&str] = &[
    CUDA_VISIBLE_DEVICES,
    "GPU_DEVICE_ORDINAL",
    "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    SLURM_GPUS_ON_NODE,
];

/// Set for Slurm's clients (`standard`), so that they print times one way whatever the user set.
pub(crate) const SLURM_TIME_FORMAT: &str = "SLURM_TIME_FORMAT";
