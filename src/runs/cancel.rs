//! Cancelling a job: `scancel`, then watching squeue until the job has left PENDING/RUNNING,
//! so that "cancelled" is something we saw, not something we hope.
//!
//! Before `scancel`, squeue must show the run's job under its id: job ids are reused (a rebuilt
//! cluster starts again at 1, real clusters wrap around), and a job with the run's id but
//! another script and submit time is somebody else's.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::error::WithHint;
use crate::handoff::run_files::SIGNAL_REQUEST;
use crate::handoff::signal_name::SignalName;
use crate::handoff::signal_request::SignalRequest;
use crate::runs::status::{self, InQueue, JobStatus};
use crate::runs::store::{RunRecord, StoredRun};
use crate::slurm::query::{self, Phase, QueryError, QueueEntry};
use crate::sys::process::{Cmd, CmdError};

/// How long a cancelled job may take to leave PENDING/RUNNING before we say it did not.
const CONFIRM_WITHIN: Duration = Duration::from_secs(15);

/// How a cancel request ended.
#[derive(Debug)]
pub(crate) enum Cancelled {
    /// The job was cancelled and has left PENDING/RUNNING (it may still be COMPLETING).
    Stopped(JobStatus),
    /// The job had ended before scancel reached it.
    AlreadyEnded(JobStatus),
    /// Slurm has given the run's job id to another job: the run's own job ended long ago (as
    /// the status says), and the job that has the id now was left alone.
    IdReused(JobStatus),
}

/// Sends `scancel` for the run's job, if Slurm still has it, and waits until Slurm shows it
/// stopped. `warn` hears of squeue failures that are retried.
pub(crate) fn cancel(record: &RunRecord, warn: &dyn Fn(&str)) -> Result<Cancelled> {
    let job_id = record.job_id.as_str();
    let entries = queue_of(job_id, warn)?;
    match InQueue::find(&entries, record) {
        InQueue::Own(_) => {}
        other @ InQueue::Other => {
            return Ok(Cancelled::IdReused(status::of_run(
                record,
                other,
                status::read_final_state(record, warn).as_ref(),
            )));
        }
        gone @ InQueue::Gone(_) => {
            return Ok(Cancelled::AlreadyEnded(status::of_run(
                record,
                gone,
                status::read_final_state(record, warn).as_ref(),
            )));
        }
    }
    let cmd = Cmd::new("scancel").arg(job_id);
    if let Err(e) = cmd.output() {
        if let CmdError::NotFound { .. } = e {
            return Err(e).hint("run on a Slurm login node");
        }
        // scancel refuses jobs that are already completing or gone; see what became of it.
        return match current(record, warn) {
            Some(status) if status.phase >= Some(Phase::Ending) => {
                Ok(Cancelled::AlreadyEnded(status))
            }
            _ => Err(e).with_context(|| format!("cannot cancel job {job_id}")),
        };
    }
    let start = Instant::now();
    let mut last_seen = None;
    loop {
        if let Some(status) = current(record, warn) {
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

/// Cancels a whole job array, its tasks `tasks` (the array's runs): one `scancel JOBID` if
/// squeue shows any of them as this array's job, then squeue for all of them at once until
/// every task has left PENDING/RUNNING. Gives each task's status, in order, and whether
/// scancel was sent.
pub(crate) fn cancel_array(
    array: &str,
    tasks: &[&StoredRun],
    warn: &dyn Fn(&str),
) -> Result<(bool, Vec<JobStatus>)> {
    let ids: Vec<&str> = tasks.iter().map(|t| t.record.job_id.as_str()).collect();
    let on_retry = |e: &QueryError, pause: Duration| {
        warn(&format!("{e}; trying again in {} s", pause.as_secs()));
    };
    let entries = match status::squeue_retrying(&ids, &status::ONE_SHOT_RETRIES, &on_retry) {
        Ok(entries) => entries,
        Err(e @ QueryError::Missing(_)) => return Err(e).hint("run on a Slurm login node"),
        Err(e) => {
            return Err(e)
                .with_context(|| format!("cannot tell whether job {array} is still this array's job, so it was not cancelled"))
                .hint("try again once squeue answers");
        }
    };
    let own = |t: &&StoredRun| {
        let mine: Vec<QueueEntry> = entries
            .iter()
            .filter(|e| query::is_of_job(&e.job_id, &t.record.job_id))
            .cloned()
            .collect();
        matches!(InQueue::find(&mine, &t.record), InQueue::Own(e) if e.state.phase() < Phase::Ending)
    };
    let sent = tasks.iter().any(own);
    if sent {
        Cmd::new("scancel")
            .arg(array)
            .output()
            .with_context(|| format!("cannot cancel job array {array}"))?;
    }
    let start = Instant::now();
    loop {
        let gathered = status::gather(tasks, &[], warn)?;
        let stopped = gathered.squeue_error.is_none()
            && gathered
                .statuses
                .iter()
                .all(|s| s.phase >= Some(Phase::Ending));
        if stopped {
            return Ok((sent, gathered.statuses));
        }
        if start.elapsed() >= CONFIRM_WITHIN {
            let running = gathered
                .statuses
                .iter()
                .zip(tasks)
                .filter(|(s, _)| s.phase < Some(Phase::Ending))
                .map(|(_, t)| t.record.job_id.as_str())
                .collect::<Vec<_>>();
            anyhow::bail!(
                "`scancel {array}` was accepted, but after {} s these tasks are not confirmed stopped: {}",
                CONFIRM_WITHIN.as_secs(),
                running.join(", ")
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// How `cancel --signal` went.
#[derive(Debug)]
pub(crate) enum Signalled {
    /// The bootstrap was sent the signal, to pass on to the command.
    Sent,
    /// The job is not running (pending, ended, or its id is another job's now).
    NotRunning(JobStatus),
}

/// Sends `signal` to the run's command without ending the run: `scancel --batch --signal` to
/// the bootstrap (the batch step alone: Slurm would otherwise signal Ray's processes too),
/// which passes it on. The signal is named first in the run's directory, for this job and
/// attempt (see [`SignalRequest`]), so that the bootstrap does not take a TERM, INT or HUP for
/// a request to stop.
pub(crate) fn signal(
    record: &RunRecord,
    signal: SignalName,
    warn: &dyn Fn(&str),
) -> Result<Signalled> {
    let job_id = record.job_id.as_str();
    let entries = queue_of(job_id, warn)?;
    let final_state = status::read_final_state(record, warn);
    let found = InQueue::find(&entries, record);
    let running = matches!(&found, InQueue::Own(e) if e.state.phase() == Phase::Running);
    if !running {
        return Ok(Signalled::NotRunning(status::of_run(
            record,
            found,
            final_state.as_ref(),
        )));
    }
    // Named for this attempt of this job: the run directory outlives both.
    let request = record.run_dir().map(|dir| {
        let job = query::scontrol_job(job_id).ok().flatten();
        let restart = job.as_ref().and_then(|j| j.restarts);
        let request = SignalRequest {
            signal,
            // An array's task (`JOBID_N`) is a job of its own id inside, its SLURM_JOB_ID.
            job_id: job
                .and_then(|j| j.own_id)
                .unwrap_or_else(|| job_id.to_owned()),
            restart,
        };
        (dir.join(SIGNAL_REQUEST), request)
    });
    if let Some((path, request)) = &request {
        std::fs::write(path, request.line())
            .with_context(|| format!("cannot write `{}`", path.display()))?;
    }
    let cmd = Cmd::new("scancel")
        .arg("--batch")
        .arg(format!("--signal={signal}"))
        .arg(job_id);
    if let Err(e) = cmd.output() {
        // No signal came: the request must not wait for a later, real one.
        if let Some((path, _)) = &request {
            let _ = std::fs::remove_file(path);
        }
        return Err(anyhow::Error::from(e)).with_context(|| format!("cannot signal job {job_id}"));
    }
    Ok(Signalled::Sent)
}

/// squeue's lines for the job id, retried while squeue fails: without its answer no job is
/// cancelled.
fn queue_of(job_id: &str, warn: &dyn Fn(&str)) -> Result<Vec<QueueEntry>> {
    let on_retry = |e: &QueryError, pause: Duration| {
        warn(&format!("{e}; trying again in {} s", pause.as_secs()));
    };
    match status::squeue_retrying(&[job_id], &status::ONE_SHOT_RETRIES, &on_retry) {
        Ok(entries) => Ok(entries),
        Err(e @ QueryError::Missing(_)) => Err(e).hint("run on a Slurm login node"),
        Err(e) => Err(e)
            .with_context(|| {
                format!("cannot tell whether job {job_id} is still this run's job, so it was not cancelled")
            })
            .hint("try again once squeue answers"),
    }
}

/// What became of the run now; `None` if squeue failed (a job is never called ended because
/// squeue did not answer).
fn current(record: &RunRecord, warn: &dyn Fn(&str)) -> Option<JobStatus> {
    let entries = query::squeue(&[record.job_id.as_str()]).ok()?;
    let final_state = status::read_final_state(record, warn);
    Some(status::of_run(
        record,
        InQueue::find(&entries, record),
        final_state.as_ref(),
    ))
}
