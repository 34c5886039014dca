//! `rayslurm cancel TARGET`: cancel a run (the latest of an experiment) and confirm it stopped.

use std::process::ExitCode;

use anyhow::Result;

use crate::clusters::{cluster::Cluster, jobs, target::Target};
use crate::commands::logs::no_such_job;
use crate::commands::settings::runs::CancelSettings;
use crate::error::{UsageError, show};
use crate::printer::Printer;
use crate::runs::cancel::{self, Cancelled, Signalled};
use crate::runs::status;
use crate::runs::store::{RunStore, StoredRun};

pub(crate) fn run(args: &CancelSettings, printer: &Printer) -> Result<ExitCode> {
    if args.job.is_some() || args.all {
        return cancel_cluster_jobs(args, printer);
    }
    let (store, Target::Run(run)) = Target::open(&args.target, printer)? else {
        return Err(UsageError::new(format!(
            "{} is a cluster: cancel takes one of its jobs",
            show(&args.target)
        ))
        .hint(format!(
            "`rayslurm cancel {0} JOB` or `--all` cancels its jobs; `rayslurm down {0}` stops the cluster",
            args.target
        ))
        .into());
    };
    if let Some(array) = &run.record.array_job
        && args.target != run.record.job_id
    {
        return cancel_array(args, &store, array, printer);
    }
    let job = format!("job {} ({})", run.record.job_id, run.record.exp_name);
    if let Some(signal) = args.signal {
        let warn = |m: &str| printer.warn(m);
        return match cancel::signal(&run.record, signal, &warn)? {
            Signalled::Sent => {
                printer.info(&format!(
                    "sent {signal} to the command of {job}; the run goes on"
                ));
                Ok(ExitCode::SUCCESS)
            }
            Signalled::NotRunning(status) => Err(UsageError::new(format!(
                "{job} is {}, so its command cannot be signalled",
                status.label()
            ))
            .hint("a signal reaches the command only while the job runs")
            .into()),
        };
    }
    if let Some(end) = &run.record.ended {
        printer.info(&format!(
            "{job} already ended ({}); nothing to cancel",
            end.state
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let warn = |m: &str| printer.warn(m);
    let (status, cancelled, why) = match cancel::cancel(&run.record, &warn)? {
        Cancelled::Stopped(status) => (status, true, String::new()),
        Cancelled::AlreadyEnded(status) => (status, false, String::new()),
        Cancelled::IdReused(status) => (
            status,
            false,
            format!(
                " (Slurm has given job id {} to a newer job, which was left alone)",
                run.record.job_id
            ),
        ),
    };
    if let Err(e) = status::remember(&store, &run, &status) {
        printer.warn(&format!(
            "could not keep the run's end in its record: {e:#}"
        ));
    }
    if cancelled {
        printer.result(&run.record.job_id);
        printer.info(&format!("cancelled {job}: it is {}", status.label()));
    } else {
        printer.info(&format!(
            "{job} already ended ({}); nothing to cancel{why}",
            status.label()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `cancel NAME` or `cancel JOBID` of a job array: every task (one `scancel JOBID`), each
/// task's end kept in its record. `cancel JOBID_N` cancels one task as any other run.
fn cancel_array(
    args: &CancelSettings,
    store: &RunStore,
    array: &str,
    printer: &Printer,
) -> Result<ExitCode> {
    if args.signal.is_some() {
        return Err(UsageError::new(format!(
            "{} is job array {array}: --signal goes to one task's command",
            show(&args.target)
        ))
        .hint(format!(
            "name the task: `rayslurm cancel {array}_N --signal SIG`"
        ))
        .into());
    }
    let runs = store.load()?.runs;
    let tasks: Vec<&StoredRun> = runs
        .iter()
        .filter(|r| r.record.array_job.as_deref() == Some(array))
        .collect();
    let warn = |m: &str| printer.warn(m);
    let (sent, statuses) = cancel::cancel_array(array, &tasks, &warn)?;
    for (run, status) in tasks.iter().zip(&statuses) {
        if let Err(e) = status::remember(store, run, status) {
            printer.warn(&format!(
                "could not keep the end of {} in its record: {e:#}",
                run.record.job_id
            ));
        }
    }
    let states: Vec<String> = tasks
        .iter()
        .zip(&statuses)
        .map(|(run, status)| format!("{} {}", run.record.job_id, status.label()))
        .collect();
    let exp = tasks.first().map_or("", |r| r.record.exp_name.as_str());
    if sent {
        printer.result(array);
        printer.info(&format!(
            "cancelled job array {array} ({exp}, {} tasks): {}",
            tasks.len(),
            states.join(", ")
        ));
    } else {
        printer.info(&format!(
            "job array {array} ({exp}) already ended; nothing to cancel: {}",
            states.join(", ")
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `cancel CLUSTER JOB` / `cancel CLUSTER --all`: asks Ray to stop the job(s) (SIGTERM, then
/// SIGKILL after the cluster's stop grace), pending ones included.
fn cancel_cluster_jobs(args: &CancelSettings, printer: &Printer) -> Result<ExitCode> {
    let (_, cluster) = Cluster::open(&args.target, printer)?;
    let (_, api) = cluster.connect(printer)?;
    let records = jobs::all(&cluster.run_dir)?;
    let chosen: Vec<_> = match args.job {
        Some(id) => vec![
            records
                .iter()
                .find(|j| j.id == id)
                .ok_or_else(|| no_such_job(&cluster, id))?,
        ],
        None => records.iter().collect(),
    };
    for job in chosen {
        let info = api.job(&job.submission_id)?;
        if info.ended() {
            if args.job.is_some() {
                printer.info(&format!(
                    "job {} ({}) already ended ({})",
                    job.id, job.name, info.status
                ));
            }
            continue;
        }
        api.stop(&job.submission_id)?;
        printer.result(&job.id.to_string());
        printer.info(&format!(
            "cancelled job {} ({}) on cluster {}: it was {}",
            job.id,
            job.name,
            cluster.name(),
            info.status
        ));
    }
    Ok(ExitCode::SUCCESS)
}
