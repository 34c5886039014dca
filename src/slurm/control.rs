//! Telling Slurm to do something to a running job from inside it: `scontrol requeue`.
//! (Asking what became of jobs is [`super::query`]'s.)

use crate::sys::process::{Cmd, CmdError};

/// `scontrol requeue ID`: puts a running job back in the queue, ending it at once.
pub(crate) fn requeue(job_id: &str) -> Result<(), CmdError> {
    Cmd::new("scontrol")
        .args(["requeue", job_id])
        .output()
        .map(|_| ())
}
