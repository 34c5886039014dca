//! `rayslurm scale CLUSTER CHANGE`: asks an elastic cluster's head for more or fewer worker
//! jobs (`+N`, `-N`, `=N`) by leaving the request in the run's private directory, waits until
//! the head has taken it (the file is gone), and prints the cluster's jobs as the head then
//! reports them.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::clusters::cluster::Cluster;
use crate::clusters::elastic::{self, Elastic};
use crate::commands::settings::clusters::ScaleSettings;
use crate::error::{UsageError, show};
use crate::handoff::elastic::{SCALE_REQUEST, WorkerJobs};
use crate::handoff::worker_types::{self, WorkerType};
use crate::printer::Printer;

/// How often the request's file and the head's report are looked at.
const POLL: Duration = Duration::from_millis(200);

/// How long, once the request is taken, to wait for the head's report of what it did.
const REPORT_WAIT: Duration = Duration::from_secs(5);

pub(crate) fn run(args: &ScaleSettings, printer: &Printer) -> Result<ExitCode> {
    let (_, cluster) = Cluster::open(&args.cluster, printer)?;
    let name = cluster.name().to_owned();
    let run_dir = cluster.run_dir.clone();
    let Some(before) = Elastic::of(&cluster.run.record, &run_dir)? else {
        return Err(UsageError::new(format!(
            "cluster {} is not elastic: it was started without --max-nodes, so it has no worker jobs to add or remove",
            show(&name)
        ))
        .hint(format!(
            "start an elastic cluster with `rayslurm up {name} -n 1 --max-nodes N` (after `rayslurm down {name}`)"
        ))
        .into());
    };
    elastic::check_change(
        &name,
        args.change,
        cluster.run.record.num_nodes,
        before.max_nodes,
    )?;
    if let Some(kind) = &args.worker_type {
        check_type(&name, kind, &run_dir)?;
    }
    let status = cluster.status(printer)?;
    let info = cluster.up_info(&status)?;
    let reported = before.workers.map(|w| w.updated_at);
    args.change.write(&run_dir, args.worker_type.as_deref())?;
    printer.info(&format!(
        "asked the head of cluster {name} for `{}`; waiting for it to take the request",
        args.change
    ));
    let request = run_dir.join(SCALE_REQUEST);
    if !wait_until(args.timeout, POLL, || !request.exists()) {
        // Withdrawn, so that a head that comes back later does not act on a request the user
        // was told had failed.
        let _ = std::fs::remove_file(&request);
        anyhow::bail!(
            "the head of cluster {name} did not take the request within {} s, so it was withdrawn; see `rayslurm status {name}` and the cluster's log `{}`",
            args.timeout.as_secs(),
            cluster.run.record.log.display()
        );
    }
    let newer = |w: &WorkerJobs| Some(&w.updated_at) != reported.as_ref();
    wait_until(REPORT_WAIT, POLL, || {
        WorkerJobs::read(&run_dir).is_ok_and(|w| w.is_some_and(|w| newer(&w)))
    });
    let now = Elastic::of(&cluster.run.record, &run_dir)?.unwrap_or(Elastic {
        max_nodes: before.max_nodes,
        workers: None,
    });
    let view = now.view(&cluster.run.record, &status, Some(&info));
    if args.json {
        printer.result(&serde_json::to_string_pretty(&view)?);
    } else {
        printer.info(&format!(
            "the head of cluster {name} took `{}`",
            args.change
        ));
        printer.result(&view.table());
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `done` came true within `limit`, asked every `poll` (and once more at the end).
fn wait_until(limit: Duration, poll: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(poll.min(limit.saturating_sub(start.elapsed())));
    }
}

/// A type `scale --worker-type` names must be one of the cluster's.
fn check_type(name: &str, kind: &str, run_dir: &std::path::Path) -> Result<()> {
    let known: Vec<String> = worker_types::read(run_dir)?
        .unwrap_or_else(|| vec![WorkerType::plain()])
        .into_iter()
        .map(|t| t.name)
        .collect();
    if known.iter().any(|k| k == kind) {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "cluster {} has no worker type {}",
        show(name),
        show(kind)
    ))
    .hint(format!("its worker types: {}", known.join(", ")))
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_ends_when_done_or_at_the_limit() {
        let mut calls = 0;
        assert!(wait_until(
            Duration::from_secs(5),
            Duration::from_millis(1),
            || {
                calls += 1;
                calls == 3
            }
        ));
        assert_eq!(calls, 3);
        let start = Instant::now();
        assert!(!wait_until(
            Duration::from_millis(50),
            Duration::from_millis(10),
            || false
        ));
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert!(start.elapsed() < Duration::from_secs(2));
    }
}
