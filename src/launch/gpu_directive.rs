//! How GPUs are requested from Slurm: sites differ, so `--gpu-directive` (or the config files'
//! `gpu_directive`) picks the `#SBATCH` line the job's GPUs are asked with.

/// How GPUs are requested from Slurm (sites differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum GpuDirective {
    /// `#SBATCH --gpus-per-task=N` (as Ray's own launcher does).
    GpusPerTask,
    /// `#SBATCH --gpus-per-node=N`.
    GpusPerNode,
    /// `#SBATCH --gres=gpu:N`.
    Gres,
}
