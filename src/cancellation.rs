//! Cancelling a job: `scancel`, then watching squeue until the job has left PENDING/RUNNING,
//! so that "cancelled" is something we saw, not something we hope.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::error::WithHint;
use crate::job_status::JobStatus;
use crate::process::{Cmd, CmdError};
use crate::slurm_query::{self, Phase};

/// How long a cancelled job may take to leave PENDING/RUNNING before we say it did not.
const CONFIRM_WITHIN: Duration = Duration::from_secs(15);

/// How a cancel request ended.
#[derive(Debug)]
pub(crate) enum Cancelled {
    /// The job was cancelled and has left PENDING/RUNNING (it may still be COMPLETING).
    Stopped(JobStatus),
    /// The job had ended before scancel reached it.
    AlreadyEnded(JobStatus),
}

/// Sends `scancel` for the job and waits until Slurm shows it stopped.
pub(crate) fn cancel(job_id: &str) -> Result<Cancelled> {
    let cmd = Cmd::new("scancel").arg(job_id);
    if let Err(e) = cmd.output() {
        if let CmdError::NotFound { .. } = e {
            return Err(e).hint("run on a Slurm login node");
        }
        // scancel refuses jobs that are already completing or gone; see what became of it.
        return match current(job_id) {
            Some(status) if status.phase >= Some(Phase::Ending) => {
                Ok(Cancelled::AlreadyEnded(status))
            }
            _ => Err(e).with_context(|| format!("cannot cancel job {job_id}")),
        };
    }
    let start = Instant::now();
    let mut last_seen = None;
    loop {
        if let Some(status) = current(job_id) {
            if status.phase >= Some(Phase::Ending) {
                return Ok(Cancelled::Stopped(status));
            }
            last_seen = Some(status.label());
        }
        if start.elapsed() >= CONFIRM_WITHIN {
            anyhow::bail!(
                "`{cmd}` was accepted, but job {job_id} is still {} after {} s",
                last_seen
                    .as_deref()
                    .unwrap_or("not confirmed stopped (squeue did not answer)"),
                CONFIRM_WITHIN.as_secs()
            );
        }
        let pause = if start.elapsed() < Duration::from_secs(2) {
            250
        } else {
            1000
        };
        std::thread::sleep(Duration::from_millis(pause));
    }
}

/// What squeue says of the job now; `None` if squeue failed (a job is never called ended
/// because squeue did not answer).
fn current(job_id: &str) -> Option<JobStatus> {
    match slurm_query::squeue(&[job_id]) {
        Ok(entries) => Some(match entries.iter().find(|e| e.job_id == job_id) {
            Some(entry) => {
                let exit = match entry.state.phase() {
                    Phase::Ended => slurm_query::scontrol_job(job_id)
                        .ok()
                        .flatten()
                        .and_then(|j| j.exit),
                    _ => None,
                };
                JobStatus::from_queue(entry, None, exit)
            }
            None => JobStatus::gone(),
        }),
        Err(_) => None,
    }
}
