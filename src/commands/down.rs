//! `rayslurm down CLUSTER`: stops the cluster's running and pending jobs (Ray gives their
//! commands SIGTERM first, then the stop grace), then its allocation (the bootstrap stops Ray
//! on every node), and confirms the allocation is gone.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use crate::clusters::cluster::{Cluster, State};
use crate::commands::settings::clusters::DownSettings;
use crate::printer::Printer;
use crate::ray::jobs_api::JobsApi;
use crate::runs::cancel::{self, Cancelled};
use crate::runs::status;

pub(crate) fn run(args: &DownSettings, printer: &Printer) -> Result<ExitCode> {
    let (store, cluster) = Cluster::open(&args.cluster, printer)?;
    let name = cluster.name().to_owned();
    let warn = |m: &str| printer.warn(m);
    let status = cluster.status(printer)?;
    if let State::Up(_) = cluster.state(&status)?
        && let Err(e) = cluster
            .api(&status)
            .and_then(|(_, api)| stop_jobs(&api, &name, printer))
    {
        // Ray's dashboard may have died, be too slow, or its port be another user's: the
        // allocation goes all the same, and the bootstrap stops Ray, the jobs' commands with it.
        printer.warn(&format!(
            "could not stop the jobs of cluster {name} through Ray's Jobs API ({e:#}): cancelling its allocation, which stops them with Ray"
        ));
    }
    let status = match cancel::cancel(&cluster.run.record, &warn)? {
        Cancelled::Stopped(status) => {
            printer.info(&format!(
                "cluster {name} is down: its job {} is {}",
                cluster.run.record.job_id,
                status.label()
            ));
            status
        }
        Cancelled::AlreadyEnded(status) | Cancelled::IdReused(status) => {
            printer.info(&format!(
                "cluster {name} was already down ({})",
                status.label()
            ));
            status
        }
    };
    if let Err(e) = status::remember(&store, &cluster.run, &status) {
        printer.warn(&format!(
            "could not keep the cluster's end in its record: {e:#}"
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks Ray to stop the cluster's running and pending jobs, and waits up to a minute for the
/// running ones.
fn stop_jobs(api: &JobsApi, name: &str, printer: &Printer) -> Result<()> {
    let stopped = api.stop_all(Duration::from_secs(60))?;
    if stopped.active > 0 {
        printer.info(&format!(
            "stopped {} job(s) of cluster {name} ({} running, waited for)",
            stopped.active, stopped.running
        ));
    }
    Ok(())
}
