//! Asking Slurm what became of jobs: `squeue` while slurmctld knows a job (`--states=all` also
//! shows jobs that ended less than MinJobAge ago), `scontrol show job` for an exit code, and
//! `sacct` only where accounting answers (many sites disable it); and `sinfo` for the site's
//! GPUs ([`gres`]), which launches resolve GPU names against.
//!
//! Each command's machine-readable output is parsed by a small tested function. A failing
//! `squeue` (a controller restart, a timeout) is [`QueryError::Unavailable`]: callers retry and
//! never take it to mean the job has ended. "Invalid job id specified" means "not in the queue".
//!
//! Job ids are not unique forever: a rebuilt cluster starts again at 1 and real clusters wrap
//! around. A job Slurm reports under a run's id is that run's job only if it runs the run's
//! script (kept when Slurm requeues the job, which gives it a new submit time) or was submitted
//! when the run was ([`submission`]); otherwise it is somebody else's, and the run's own
//! job is gone.

#[cfg(test)]
mod captured;
mod client;
mod ends;
mod fields;
mod gres;
mod job_state;
mod sacct;
#[cfg(test)]
mod samples;
mod scontrol;
mod squeue;
mod submission;

pub(crate) use self::client::QueryError;
pub(crate) use self::ends::{job_ends, partition_grace};
#[cfg(test)]
pub(crate) use self::gres::parse_sinfo_gpus;
pub(crate) use self::gres::{NodeGpus, sinfo_gpus};
pub(crate) use self::job_state::{Phase, SlurmExit, SlurmState};
pub(crate) use self::sacct::{SacctEntry, sacct};
pub(crate) use self::scontrol::{cluster_name, scontrol_job};
#[cfg(test)]
pub(crate) use self::squeue::parse_squeue_line;
pub(crate) use self::squeue::{QueueEntry, is_of_job, own_line, squeue, time_left};
pub(crate) use self::submission::Submission;
