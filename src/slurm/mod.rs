//! Every Slurm client and text format: submitting ([`sbatch`]), asking what became of jobs
//! ([`query`]: `squeue`, `scontrol`, `sacct`), requeuing a job ([`control`]), which Slurm the clients are ([`version`]) and whether their srun has pyxis ([`pyxis`]), host lists ([`hostlist`]) and Slurm's durations
//! ([`duration`]). Output is machine-readable and parsed in small tested functions.

pub(crate) mod control;
pub(crate) mod duration;
pub(crate) mod env;
pub(crate) mod hostlist;
pub(crate) mod pyxis;
pub(crate) mod query;
pub(crate) mod sbatch;
pub(crate) mod version;
