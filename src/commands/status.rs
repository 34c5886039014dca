//! `rayslurm status [TARGET...] [--json] [--all]`: recorded runs and their states, newest first.
//!
//! One squeue call covers every run shown. By default only recent runs are shown (the newest
//! [`RECENT_COUNT`] of the last [`RECENT_DAYS`] days, plus older ones not yet known to have
//! ended); `--all` shows every recorded run.

use std::process::ExitCode;

use anyhow::Result;
use chrono::{DateTime, FixedOffset, Local};
use serde::Serialize;

use crate::launch::snapshot::SnapshotInfo;

use crate::clusters::cluster::Cluster;
use crate::clusters::elastic::{Elastic, ElasticView};
use crate::commands::settings::runs::StatusSettings;
use crate::error::WithHint;
use crate::handoff::cluster_info::ClusterInfo;
use crate::printer::Printer;
use crate::runs::select;
use crate::runs::status::{self, JobStatus};
use crate::runs::store::{self, RunStore, StoredRun};
use crate::slurm::duration;
use crate::slurm::query;
use crate::slurm::query::QueryError;

const RECENT_COUNT: usize = 20;
const RECENT_DAYS: i64 = 7;

/// One run as `--json` prints it.
#[derive(Debug, Serialize)]
struct RunJson<'a> {
    exp_name: &'a str,
    job_id: &'a str,
    state: &'a str,
    reason: Option<&'a str>,
    nodes: u32,
    nodelist: Option<&'a str>,
    elapsed_seconds: Option<u64>,
    exit_code: Option<i32>,
    log: String,
    script: String,
    state_file: String,
    /// The run's private directory (`RAYSLURM_RUN_DIR` inside the job), if its record names one.
    run_dir: Option<String>,
    submitted_at: &'a str,
    workdir: String,
    command: &'a str,
    /// A persistent cluster (`rayslurm up`), not a command's run.
    cluster: bool,
    /// Where the state came from: squeue, final-state, sacct, record, none.
    source: &'a str,
    message: Option<&'a str>,
    /// How many times the run has run (more than 1 once requeued), where its final state says.
    attempts: Option<usize>,
    /// The copy of the workdir the run works in (`--snapshot`): path, workdir, commit, dirty.
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot: Option<&'a SnapshotInfo>,
    /// An elastic cluster's (`up --max-nodes`) Slurm jobs: the head's and each worker job.
    #[serde(skip_serializing_if = "Option::is_none")]
    elastic: Option<&'a ElasticView>,
    /// The image the run's programs run in (`--container-image`).
    #[serde(skip_serializing_if = "Option::is_none")]
    container_image: Option<&'a str>,
    /// A task of a job array (`launch --array`): the array's job id (`job_id` is the task's).
    #[serde(skip_serializing_if = "Option::is_none")]
    array_job: Option<&'a str>,
}

pub(crate) fn run(args: &StatusSettings, printer: &Printer) -> Result<ExitCode> {
    let store = RunStore::from_env()?;
    let runs = store::load_warning(&store, printer)?;
    let selected = selected(&runs, &args.targets, store.dir())?;
    let total = selected.len();
    let shown = if args.all || total == 1 || select::one_array(&selected).is_some() {
        selected
    } else {
        recent(selected, Local::now().fixed_offset())
    };

    let warn = |m: &str| printer.warn(m);
    let gathered = match status::gather(&shown, &status::ONE_SHOT_RETRIES, &warn) {
        Ok(g) => g,
        Err(e @ QueryError::Missing(_)) => {
            return Err(e).hint("run on a Slurm login node, where squeue is on PATH");
        }
        Err(e) => return Err(e.into()),
    };
    let mut remember_failed = false;
    for (run, status) in shown.iter().zip(&gathered.statuses) {
        if let Err(e) = status::remember(&store, run, status)
            && !remember_failed
        {
            remember_failed = true;
            printer.warn(&format!("could not keep a run's end in its record: {e:#}"));
        }
    }

    let elastic = elastic_views(&shown, &gathered.statuses, printer);
    if args.json {
        let rows: Vec<RunJson> = shown
            .iter()
            .zip(&gathered.statuses)
            .zip(&elastic)
            .map(|((run, status), elastic)| to_json(run, status, elastic.as_ref()))
            .collect();
        printer.result(&serde_json::to_string_pretty(&rows)?);
    } else if shown.is_empty() {
        printer.info(&format!(
            "no runs recorded (in `{}`)",
            store.dir().display()
        ));
    } else {
        printer.result(&table(&shown, &gathered.statuses));
        for ((run, status), elastic) in shown.iter().zip(&gathered.statuses).zip(&elastic) {
            if let Some(line) = cluster_line(run, status) {
                printer.result(&line);
                if let Some(view) = elastic {
                    printer.result(&view.table());
                }
            }
        }
    }
    if shown.len() < total {
        printer.info(&format!(
            "{} older runs not shown; pass --all to see every run",
            total - shown.len()
        ));
    }
    if let Some(e) = gathered.squeue_error {
        printer.warn(&format!("{e}"));
        anyhow::bail!("squeue did not answer, so runs without a final state are shown as UNKNOWN");
    }
    Ok(ExitCode::SUCCESS)
}

/// The runs the targets name, in the store's order (newest first), each once; every run
/// without targets.
fn selected<'a>(
    runs: &'a [StoredRun],
    targets: &[String],
    store_dir: &std::path::Path,
) -> Result<Vec<&'a StoredRun>> {
    if targets.is_empty() {
        return Ok(runs.iter().collect());
    }
    let mut named = Vec::new();
    for target in targets {
        named.extend(select::resolve(runs, target, store_dir)?.runs);
    }
    Ok(runs
        .iter()
        .filter(|run| named.iter().any(|n| std::ptr::eq(*n, *run)))
        .collect())
}

/// A live cluster's line under the table: its state, nodes, jobs and time left.
fn cluster_line(run: &StoredRun, status: &JobStatus) -> Option<String> {
    if !run.record.cluster || status.phase != Some(crate::slurm::query::Phase::Running) {
        return None;
    }
    let runs = std::slice::from_ref(run);
    let cluster = Cluster::find(runs, &run.record.exp_name).ok()?;
    let name = cluster.name();
    let Ok((info, api)) = cluster.api(status) else {
        return Some(format!("cluster {name}: starting"));
    };
    let jobs = api.jobs().unwrap_or_default();
    let count = |s: &str| jobs.iter().filter(|j| j.status == s).count();
    Some(format!(
        "cluster {name}: up, {} node(s), {} job(s) running, {} pending, time left {}",
        info.nodes.len(),
        count("RUNNING"),
        count("PENDING"),
        query::time_left(&run.record.job_id).unwrap_or_else(|| "?".to_owned())
    ))
}

/// Each run's Slurm jobs if it is an elastic cluster, else `None` (a head's report that cannot
/// be read costs a warning).
fn elastic_views(
    runs: &[&StoredRun],
    statuses: &[JobStatus],
    printer: &Printer,
) -> Vec<Option<ElasticView>> {
    runs.iter()
        .zip(statuses)
        .map(|(run, status)| {
            let dir = run.record.run_dir()?;
            let elastic = Elastic::of(&run.record, &dir)
                .map_err(|e| printer.warn(&format!("{e:#}")))
                .ok()??;
            let info = ClusterInfo::read(&dir).ok().flatten();
            Some(elastic.view(&run.record, status, info.as_ref()))
        })
        .collect()
}

/// The runs shown by default: the newest of the last days, and any older run whose end is
/// not known yet (it may still be running).
fn recent(runs: Vec<&StoredRun>, now: DateTime<FixedOffset>) -> Vec<&StoredRun> {
    let cutoff = now - chrono::Duration::days(RECENT_DAYS);
    let mut newest = 0;
    runs.into_iter()
        .filter(|run| {
            let fresh =
                run.record.submitted().is_some_and(|t| t >= cutoff) && newest < RECENT_COUNT;
            if fresh {
                newest += 1;
                return true;
            }
            run.record.ended.is_none() && !run.record.state_file.exists()
        })
        .collect()
}

fn to_json<'a>(
    run: &'a StoredRun,
    status: &'a JobStatus,
    elastic: Option<&'a ElasticView>,
) -> RunJson<'a> {
    let r = &run.record;
    RunJson {
        exp_name: &r.exp_name,
        job_id: &r.job_id,
        state: &status.state,
        reason: status.reason.as_deref(),
        nodes: status.nodes.unwrap_or(r.num_nodes),
        nodelist: status.nodelist.as_deref(),
        elapsed_seconds: status.elapsed,
        exit_code: status.exit_code,
        log: r.log.display().to_string(),
        script: r.script.display().to_string(),
        state_file: r.state_file.display().to_string(),
        run_dir: r.run_dir().map(|d| d.display().to_string()),
        submitted_at: &r.submitted_at,
        workdir: r.workdir.display().to_string(),
        command: &r.command,
        cluster: r.cluster,
        source: status.source.as_str(),
        message: status.message.as_deref(),
        attempts: status.attempts,
        snapshot: r.snapshot.as_ref(),
        elastic,
        container_image: r.container_image.as_deref(),
        array_job: r.array_job.as_deref(),
    }
}

/// The most a NAME cell takes; a longer name is cut, with `…`, so that one long name does not
/// push every other column.
const NAME_WIDTH: usize = 32;

fn shortened(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let kept: String = text.chars().take(width - 1).collect();
    format!("{kept}…")
}

/// Aligned columns; the log path last, so a long one does not push the others.
fn table(runs: &[&StoredRun], statuses: &[JobStatus]) -> String {
    let header = ["NAME", "JOBID", "STATE", "NODES", "ELAPSED", "EXIT", "LOG"].map(str::to_owned);
    let mut rows = vec![header];
    for (run, status) in runs.iter().zip(statuses) {
        let r = &run.record;
        rows.push([
            shortened(&r.exp_name, NAME_WIDTH),
            r.job_id.clone(),
            status.label(),
            status.nodes.unwrap_or(r.num_nodes).to_string(),
            status
                .elapsed
                .map_or_else(|| "-".to_owned(), duration::format),
            status
                .exit_code
                .map_or_else(|| "-".to_owned(), |c| c.to_string()),
            r.log.display().to_string(),
        ]);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut lines: Vec<String> = rows
        .iter()
        .map(|row| {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c + 1 == columns {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<width$}  ", width = widths[c]));
                }
            }
            line
        })
        .collect();
    // What the bootstrap (or the lack of a final state) says, first line only, under the table.
    // A requeued run's attempts are named there too.
    for (run, status) in runs.iter().zip(statuses) {
        let first = status.message.as_deref().and_then(|m| m.lines().next());
        let attempts = status.attempts.filter(|a| *a > 1);
        let job = &run.record.job_id;
        match (attempts, first) {
            (Some(n), Some(m)) if !m.starts_with("attempt ") => {
                lines.push(format!("job {job} ({n} attempts): {m}"));
            }
            (Some(n), None) => lines.push(format!("job {job}: {n} attempts")),
            (_, Some(m)) => lines.push(format!("job {job}: {m}")),
            (None, None) => {}
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use chrono::TimeZone;

    use super::*;
    use crate::handoff::run_files::RunFiles;
    use crate::runs::store::{RecordedEnd, RunRecord};

    fn run(job: &str, days_ago: i64, ended: bool) -> StoredRun {
        let at = now() - chrono::Duration::days(days_ago);
        let files = RunFiles::for_stem(Path::new("/nonexistent"), job);
        let mut record = RunRecord::new("x", job, &files, at, Path::new("/w"), "true", 1);
        record.ended = ended.then(|| RecordedEnd {
            state: "COMPLETED".into(),
            exit_code: Some(0),
            elapsed_seconds: Some(1),
            nodelist: None,
            source: crate::runs::status::Source::Squeue,
        });
        StoredRun {
            path: PathBuf::from(job),
            record,
        }
    }

    fn now() -> DateTime<FixedOffset> {
        FixedOffset::east_opt(0)
            .unwrap()
            .with_ymd_and_hms(2026, 11, 22, 12, 0, 0)
            .unwrap()
    }

    #[test]
    fn recent_keeps_new_runs_and_old_unfinished_ones() {
        let mut runs: Vec<StoredRun> = (0..25)
            .map(|i| run(&format!("{}", 100 - i), 0, true))
            .collect();
        runs.push(run("50", 30, true));
        runs.push(run("49", 30, false));
        let refs: Vec<&StoredRun> = runs.iter().collect();
        let shown: Vec<&str> = recent(refs, now())
            .iter()
            .map(|r| r.record.job_id.as_str())
            .collect();
        assert_eq!(shown.len(), RECENT_COUNT + 1);
        assert_eq!(shown[0], "100");
        assert_eq!(*shown.last().unwrap(), "49");
    }

    #[test]
    fn table_aligns_columns() {
        let runs = [run("7", 0, true)];
        let refs: Vec<&StoredRun> = runs.iter().collect();
        let status = JobStatus::from_record(runs[0].record.ended.as_ref().unwrap());
        let text = table(&refs, &[status]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "NAME  JOBID  STATE      NODES  ELAPSED  EXIT  LOG"
        );
        assert_eq!(
            lines[1],
            "x     7      COMPLETED  1      0:01     0     /nonexistent/7.log"
        );
    }

    #[test]
    fn a_long_name_is_cut_and_messages_follow_the_table() {
        let mut long = run("8", 0, true);
        long.record.exp_name = "n".repeat(100);
        let runs = [long];
        let refs: Vec<&StoredRun> = runs.iter().collect();
        let status = JobStatus {
            message: Some("ended without a final state\nmore".to_owned()),
            ..JobStatus::from_record(runs[0].record.ended.as_ref().unwrap())
        };
        let text = table(&refs, &[status]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].starts_with(&format!("{}…  8", "n".repeat(31))),
            "{text}"
        );
        assert_eq!(lines[2], "job 8: ended without a final state");
        assert_eq!(lines.len(), 3);
    }
}
