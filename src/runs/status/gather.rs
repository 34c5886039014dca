//! The statuses of many runs at once: one `squeue` call for all of them (retried while it
//! fails), each run's final state file, and the ends learned kept in the runs' records.

use std::time::Duration;

use super::{InQueue, JobStatus, of_recorded, of_run};
use crate::handoff::final_state::FinalState;
use crate::printer::Printer;
use crate::runs::store::{RunRecord, RunStore, StoredRun};
use crate::slurm::query::{self, QueryError, QueueEntry};

/// Pauses between tries of a one-shot `squeue` (a status or cancel command).
pub(crate) const ONE_SHOT_RETRIES: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// Reads a run's final state file; a damaged one is reported and treated as absent.
pub(crate) fn read_final_state(record: &RunRecord, warn: &dyn Fn(&str)) -> Option<FinalState> {
    match FinalState::read(&record.state_file) {
        Ok(state) => state,
        Err(e) => {
            warn(&format!("{e:#}"));
            None
        }
    }
}

/// `squeue` for these jobs, retried after each pause in `pauses` while it fails.
pub(crate) fn squeue_retrying(
    job_ids: &[&str],
    pauses: &[Duration],
    on_retry: &dyn Fn(&QueryError, Duration),
) -> Result<Vec<QueueEntry>, QueryError> {
    let mut pauses = pauses.iter();
    loop {
        match query::squeue(job_ids) {
            Ok(entries) => return Ok(entries),
            Err(e @ QueryError::Missing(_)) => return Err(e),
            Err(e) => match pauses.next() {
                Some(&pause) => {
                    on_retry(&e, pause);
                    std::thread::sleep(pause);
                }
                None => return Err(e),
            },
        }
    }
}

/// The statuses of many runs, in their order, with one `squeue` call for all of them.
/// `Err` only when squeue is not installed; a squeue that keeps failing gives `UNKNOWN`
/// states and the error in `squeue_error`.
pub(crate) struct Gathered {
    pub(crate) statuses: Vec<JobStatus>,
    pub(crate) squeue_error: Option<QueryError>,
}

pub(crate) fn gather(
    runs: &[&StoredRun],
    pauses: &[Duration],
    warn: &dyn Fn(&str),
) -> Result<Gathered, QueryError> {
    let open: Vec<&str> = runs
        .iter()
        .filter(|r| r.record.ended.is_none())
        .map(|r| r.record.job_id.as_str())
        .collect();
    let on_retry = |e: &QueryError, pause: Duration| {
        warn(&format!("{e}; trying again in {} s", pause.as_secs()));
    };
    let (queue, squeue_error) = match squeue_retrying(&open, pauses, &on_retry) {
        Ok(entries) => (Some(entries), None),
        Err(e @ QueryError::Missing(_)) => return Err(e),
        Err(e) => (None, Some(e)),
    };
    let final_states: Vec<_> = runs
        .iter()
        .map(|run| read_final_state(&run.record, warn))
        .collect();
    let mine = |record: &RunRecord| -> Vec<QueueEntry> {
        queue
            .iter()
            .flatten()
            .filter(|e| query::is_of_job(&e.job_id, &record.job_id))
            .cloned()
            .collect()
    };
    // Accounting, asked once for every run that Slurm has forgotten and that left no final
    // state: one `sacct` whatever their number.
    let forgotten: Vec<&str> = runs
        .iter()
        .zip(&final_states)
        .filter(|(run, f)| {
            run.record.ended.is_none()
                && f.is_none()
                && queue.is_some()
                && matches!(
                    InQueue::find(&mine(&run.record), &run.record),
                    InQueue::Gone(_)
                )
        })
        .map(|(run, _)| run.record.job_id.as_str())
        .collect();
    let accounting = if forgotten.is_empty() {
        Vec::new()
    } else {
        query::sacct(&forgotten)
    };
    let statuses = runs
        .iter()
        .zip(&final_states)
        .map(|(run, final_state)| {
            let record = &run.record;
            if let Some(end) = &record.ended {
                return of_recorded(end, &record.log, final_state.as_ref());
            }
            match &queue {
                Some(_) => {
                    let mine = mine(record);
                    let in_queue = match InQueue::find(&mine, record) {
                        InQueue::Gone(_) => InQueue::Gone(Some(&accounting)),
                        other => other,
                    };
                    of_run(record, in_queue, final_state.as_ref())
                }
                None => final_state
                    .as_ref()
                    .map_or_else(JobStatus::unknown, JobStatus::from_final_state),
            }
        })
        .collect();
    Ok(Gathered {
        statuses,
        squeue_error,
    })
}

/// One run's status now, as `status` shows it (Slurm asked again on a passing failure).
pub(crate) fn current(run: &StoredRun, printer: &Printer) -> Result<JobStatus, QueryError> {
    let warn = |m: &str| printer.warn(m);
    let gathered = gather(&[run], &ONE_SHOT_RETRIES, &warn)?;
    Ok(gathered
        .statuses
        .into_iter()
        .next()
        .unwrap_or_else(JobStatus::unknown))
}

/// Keeps an ended run's end in its record, so it outlives Slurm's memory of the job.
pub(crate) fn remember(
    store: &RunStore,
    run: &StoredRun,
    status: &JobStatus,
) -> anyhow::Result<()> {
    let Some(end) = status.recorded_end() else {
        return Ok(());
    };
    if run.record.ended.as_ref() == Some(&end) {
        return Ok(());
    }
    let mut updated = run.clone();
    updated.record.ended = Some(end);
    store.update(&updated)
}
