//! `status`, `logs`, `cancel` and `launch --follow` against fake `sbatch`/`squeue`/`scontrol`/
//! `scancel` on PATH: the error paths a real cluster cannot easily produce (a controller that
//! does not answer, a log deleted under a follower, scancel refusing). One file a feature.

mod fake;

mod cancel;
mod chains;
mod clusters;
mod elastic;
mod follow;
mod logs;
mod records;
mod reused_ids;
mod signals;
mod status;
