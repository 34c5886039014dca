//! `rayslurm logs TARGET [-f] [--tail N]`: print a run's log, or follow it until the job ends.

use std::process::ExitCode;

use anyhow::Result;
use nix::sys::signal::Signal;

use crate::clusters::{self, cluster::Cluster, jobs};
use crate::commands::settings::runs::LogsSettings;
use crate::error::{Hinted, UsageError, show};
use crate::printer::Printer;
use crate::runs::follow::{self, Request};
use crate::runs::log_tail::{LogTail, Start};
use crate::runs::select;
use crate::runs::status::{self, JobStatus};
use crate::runs::store::StoredRun;
use crate::slurm::query::Phase;

pub(crate) fn run(args: &LogsSettings, printer: &Printer) -> Result<ExitCode> {
    let start = args.start;
    if let Some(id) = args.job {
        return cluster_job_log(&args.target, id, start, args.follow, printer);
    }
    let (store, run) = open(&args.target, args.task, printer)?;
    if args.follow {
        let request = Request {
            record: &run.record,
            stored: Some((&store, &run)),
            start,
            cancel_on_interrupt: false,
        };
        return follow::follow(&request, printer);
    }
    // `launch` makes the log (empty, the user's alone) before it submits the job: an empty
    // log of a job that has not started (or never will) is no log.
    match std::fs::metadata(&run.record.log) {
        Err(_) => return Err(missing_log(&run, printer)),
        Ok(meta) if meta.len() == 0 && not_started(&run, printer) => {
            return Err(missing_log(&run, printer));
        }
        Ok(_) => {}
    }
    let mut tail = LogTail::new(&run.record.log, start);
    let mut out = std::io::stdout().lock();
    match tail.pump(&mut out) {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(ExitCode::from(128 + Signal::SIGPIPE as u8))
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!(
            "cannot read the log `{}`",
            run.record.log.display()
        ))),
    }
}

/// The run whose log `logs TARGET` shows: the latest of an experiment, or one task of a job
/// array (`--task N`, `JOBID_N`, or the only one).
fn open(
    target: &str,
    task: Option<u32>,
    printer: &Printer,
) -> Result<(crate::runs::store::RunStore, StoredRun)> {
    let (store, runs) = crate::runs::store::RunStore::open(printer)?;
    let selection = select::resolve(&runs, target, store.dir())?;
    let run = match selection.latest_array() {
        Some((array, tasks)) => select::task_of(array, &tasks, task, "logs")?,
        None if task.is_some() => {
            return Err(
                UsageError::new(format!("--task: {} is not a job array", show(target)))
                    .hint("--task picks one task of a run launched with --array")
                    .into(),
            );
        }
        None => selection.latest(),
    };
    Ok((store, run.clone()))
}

/// `logs CLUSTER JOB`: the job's output file; with `-f`, followed until the job ends.
fn cluster_job_log(
    name: &str,
    id: u32,
    start: Start,
    follow: bool,
    printer: &Printer,
) -> Result<ExitCode> {
    let (_, cluster) = Cluster::open(name, printer)?;
    let job = jobs::one(&cluster.run_dir, id)?.ok_or_else(|| no_such_job(&cluster, id))?;
    if follow {
        let (_, api) = cluster.connect(printer)?;
        return clusters::follow::follow(&api, cluster.name(), &job, start, printer);
    }
    let mut tail = LogTail::new(&job.log, start);
    match tail.pump(&mut std::io::stdout().lock()) {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(ExitCode::from(128 + Signal::SIGPIPE as u8))
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!(
            "cannot read the output `{}` of job {id}",
            job.log.display()
        ))),
    }
}

/// The error for a job id the cluster never had, naming the ones it has.
pub(crate) fn no_such_job(cluster: &Cluster, id: u32) -> anyhow::Error {
    let ids: Vec<String> = jobs::all(&cluster.run_dir)
        .unwrap_or_default()
        .iter()
        .map(|j| j.id.to_string())
        .collect();
    let hint = if ids.is_empty() {
        format!("cluster {} has no jobs yet", cluster.name())
    } else {
        format!(
            "its jobs are {}; `rayslurm queue {}` lists them",
            ids.join(", "),
            cluster.name()
        )
    };
    UsageError::new(format!("cluster {} has no job {id}", show(cluster.name())))
        .hint(hint)
        .into()
}

/// Why a run has no log file, as far as Slurm can tell.
/// Whether the run's job has not started: still waiting, or ended before it started.
fn not_started(run: &StoredRun, printer: &Printer) -> bool {
    status::current(run, printer).is_ok_and(|s| s.phase == Some(Phase::Pending) || s.never_ran())
}

fn missing_log(run: &StoredRun, printer: &Printer) -> anyhow::Error {
    let record = &run.record;
    let job = format!("job {} ({})", record.job_id, record.exp_name);
    let log = record.log.display();
    let follow_hint = format!(
        "`rayslurm logs -f {}` waits for the log and follows it",
        record.job_id
    );
    let status = status::current(run, printer).unwrap_or_else(|_| JobStatus::unknown());
    let hinted = |error: anyhow::Error| {
        anyhow::Error::new(Hinted {
            error,
            hint: follow_hint.clone(),
        })
    };
    match status.phase {
        Some(Phase::Pending) => hinted(anyhow::anyhow!(
            "{job} is {}: it has not started, so it has no log yet",
            status.label()
        )),
        Some(Phase::Running) => hinted(anyhow::anyhow!(
            "{job} is {} but its log `{log}` does not exist yet",
            status.label()
        )),
        Some(_) if status.never_ran() => anyhow::anyhow!(
            "{job} ended before it started ({}), so it wrote no log",
            status.label()
        ),
        Some(_) => anyhow::anyhow!(
            "the log `{log}` of {job} does not exist (the job is {}); was it moved or deleted?",
            status.label()
        ),
        None => hinted(anyhow::anyhow!("the log `{log}` of {job} does not exist")),
    }
}
