//! `rayslurm queue CLUSTER [--json]`: a cluster's jobs (id, name, submitted, started, duration,
//! status, exit code) as Ray reports them, and the cluster's nodes, CPUs and GPUs (free and in
//! all) and the time left in its allocation.

use std::collections::HashMap;
use std::process::ExitCode;

use anyhow::Result;
use chrono::{DateTime, Local, TimeZone};
use serde::Serialize;

use crate::clusters::cluster::Cluster;
use crate::clusters::jobs::{self, JobRecord};
use crate::commands::settings::clusters::QueueSettings;
use crate::launch::snapshot::SnapshotInfo;
use crate::printer::Printer;
use crate::ray::jobs_api::JobInfo;
use crate::slurm::{duration, query};

/// One job as `--json` prints it.
#[derive(Serialize)]
struct JobRow<'a> {
    id: u32,
    name: &'a str,
    status: &'a str,
    submitted_at: &'a str,
    started_at: Option<String>,
    duration_seconds: Option<u64>,
    exit_code: Option<i32>,
    command: &'a str,
    log: String,
    /// `exec --snapshot`: the copy the job starts in, with its git commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot: Option<&'a SnapshotInfo>,
}

/// The cluster as `--json` prints it.
#[derive(Serialize)]
struct ClusterRow<'a> {
    name: &'a str,
    job_id: &'a str,
    nodes: &'a [String],
    cpus: Option<f64>,
    cpus_free: Option<f64>,
    gpus: f64,
    gpus_free: f64,
    time_left: Option<String>,
    jobs: Vec<JobRow<'a>>,
}

fn rfc3339_of_ms(ms: u64) -> Option<String> {
    let t: DateTime<Local> = Local
        .timestamp_millis_opt(i64::try_from(ms).ok()?)
        .single()?;
    Some(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false))
}

fn row<'a>(job: &'a JobRecord, info: Option<&'a JobInfo>) -> JobRow<'a> {
    // Ray stamps a job's start when it is submitted; a pending job has not started.
    let started = info
        .filter(|i| i.status != "PENDING")
        .and_then(|i| i.start_time)
        .filter(|t| *t > 0);
    let now_ms = u64::try_from(Local::now().timestamp_millis()).unwrap_or(0);
    let ended = info.and_then(|i| i.end_time).filter(|t| *t > 0);
    JobRow {
        id: job.id,
        name: &job.name,
        status: info.map_or("UNKNOWN", |i| i.status.as_str()),
        submitted_at: &job.submitted_at,
        started_at: started.and_then(rfc3339_of_ms),
        duration_seconds: started.map(|s| ended.unwrap_or(now_ms).saturating_sub(s) / 1000),
        exit_code: info.and_then(|i| i.driver_exit_code),
        command: &job.command,
        log: job.log.display().to_string(),
        snapshot: job.snapshot.as_ref(),
    }
}

pub(crate) fn run(args: &QueueSettings, printer: &Printer) -> Result<ExitCode> {
    let (_, cluster) = Cluster::open(&args.cluster, printer)?;
    let (info, api) = cluster.connect(printer)?;
    let records = jobs::all(&cluster.run_dir)?;
    let known: HashMap<String, JobInfo> = api
        .jobs()?
        .into_iter()
        .filter_map(|j| Some((j.submission_id.clone()?, j)))
        .collect();
    let rows: Vec<JobRow> = records
        .iter()
        .map(|j| row(j, known.get(&j.submission_id)))
        .collect();
    let n = info.nodes.len() as f64;
    let cpus = info.cpus_per_node.map(|c| f64::from(c) * n);
    let gpus = f64::from(info.gpus_per_node) * n;
    let running = |pick: fn(&JobRecord) -> Option<f64>, default: f64| -> f64 {
        records
            .iter()
            .filter(|j| {
                known
                    .get(&j.submission_id)
                    .is_some_and(|i| i.status == "RUNNING")
            })
            .map(|j| pick(j).unwrap_or(default))
            .sum()
    };
    // A job with no --num-cpus holds Ray's default for an entrypoint: none.
    let cpus_free = cpus.map(|c| (c - running(|j| j.num_cpus, 0.0)).max(0.0));
    let gpus_free = (gpus - running(|j| j.num_gpus, 0.0)).max(0.0);
    let cluster_row = ClusterRow {
        name: cluster.name(),
        job_id: &cluster.run.record.job_id,
        nodes: &info.nodes,
        cpus,
        cpus_free,
        gpus,
        gpus_free,
        time_left: query::time_left(&cluster.run.record.job_id),
        jobs: rows,
    };
    if args.json {
        printer.result(&serde_json::to_string_pretty(&cluster_row)?);
        return Ok(ExitCode::SUCCESS);
    }
    printer.result(&table(&cluster_row));
    Ok(ExitCode::SUCCESS)
}

fn table(c: &ClusterRow) -> String {
    let amount = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v}")
        }
    };
    let mut lines = vec![format!(
        "cluster {} (job {}): {} node(s) {}; CPUs {} free of {}; GPUs {} free of {}; time left {}",
        c.name,
        c.job_id,
        c.nodes.len(),
        c.nodes.join(","),
        c.cpus_free.map_or_else(|| "?".to_owned(), amount),
        c.cpus.map_or_else(|| "?".to_owned(), amount),
        amount(c.gpus_free),
        amount(c.gpus),
        c.time_left.as_deref().unwrap_or("?")
    )];
    let mut rows = vec![
        [
            "ID",
            "NAME",
            "SUBMITTED",
            "STARTED",
            "DURATION",
            "STATUS",
            "EXIT",
        ]
        .map(str::to_owned),
    ];
    let clock = |t: &str| {
        DateTime::parse_from_rfc3339(t)
            .map(|d| d.with_timezone(&Local).format("%H:%M:%S").to_string())
            .unwrap_or_else(|_| "-".to_owned())
    };
    for j in &c.jobs {
        rows.push([
            j.id.to_string(),
            j.name.to_owned(),
            clock(j.submitted_at),
            j.started_at
                .as_deref()
                .map_or_else(|| "-".to_owned(), clock),
            j.duration_seconds
                .map_or_else(|| "-".to_owned(), duration::format),
            j.status.to_owned(),
            j.exit_code
                .map_or_else(|| "-".to_owned(), |c| c.to_string()),
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|k| rows.iter().map(|r| r[k].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(k, cell)| format!("{cell:<w$}", w = widths[k]))
            .collect();
        lines.push(cells.join("  ").trim_end().to_owned());
    }
    lines.join("\n")
}
