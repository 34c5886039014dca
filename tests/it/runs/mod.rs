//! Finding and managing runs: `status`, `logs`, `cancel` and `launch --follow` against fake
//! `sbatch`/`squeue`/`scontrol`/`scancel` on PATH (the error paths a real cluster cannot easily
//! produce: a controller that does not answer, a log deleted under a follower, scancel
//! refusing), and, end to end, the same commands on the test cluster and how often a run asks
//! Slurm. The fake Slurm world (`fake.rs`) serves the other features' login-side tests too.

pub(crate) mod fake;

mod arrays;
mod cancel;
mod e2e_arrays;
mod e2e_runs;
mod e2e_slurm_calls;
mod follow;
mod logs;
mod records;
mod reused_ids;
mod status;
