//! The state of a run, put together from every source there is, best first: what the run's
//! record already knows of its end; `squeue` while slurmctld knows the job (one call for all
//! runs); the bootstrap's final state file once Slurm has forgotten it; `sacct` where
//! accounting answers. The user command's exit code comes from the final state file when there
//! is one (it is the command's own code), else from `scontrol`'s `ExitCode`.
//!
//! A failing `squeue` is retried with backoff and, if it keeps failing, reported as `UNKNOWN`:
//! a run is never called finished because Slurm could not be asked.
//!
//! A job id Slurm shows with another script and submit time than the run's belongs to a newer
//! job (ids are reused): the run's own job is gone, and no Slurm command is asked about it again.

mod gather;
mod job_status;
mod of_run;
#[cfg(test)]
mod samples;

pub(crate) use self::gather::{
    ONE_SHOT_RETRIES, current, gather, read_final_state, remember, squeue_retrying,
};
pub(crate) use self::job_status::JobStatus;
pub(crate) use self::of_run::{InQueue, of_recorded, of_run};
/// Where a status came from (kept in a run's record with the end it learned).
pub(crate) use crate::runs::store::Source;
