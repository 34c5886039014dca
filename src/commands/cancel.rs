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
