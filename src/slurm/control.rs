//! Telling Slurm to do something to a running job from inside it: `scontrol requeue`,
//! `scancel` of the jobs it started.
//! (Asking what became of jobs is [`super::query`]'s.)

use crate::sys::process::{Cmd, CmdError};

/// `scontrol requeue ID`: puts a running job back in the queue, ending it at once.
pub(crate) fn requeue(job_id: &str) -> Result<(), CmdError> {
    Cmd::new("scontrol")
        .args(["requeue", job_id])
        .output()
        .map(|_| ())
}

/// `scancel ID...`: ends these jobs (SIGTERM to every step, then SIGKILL after KillWait).
/// Jobs that have ended already are no error.
pub(crate) fn cancel(job_ids: &[String]) -> Result<(), CmdError> {
    if job_ids.is_empty() {
        return Ok(());
    }
    match Cmd::new("scancel").args(job_ids).output() {
        Ok(_) => Ok(()),
        Err(e) if e.to_string().contains("Invalid job id") => Ok(()),
        Err(e) => Err(e),
    }
}
