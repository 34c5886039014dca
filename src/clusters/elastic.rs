//! An elastic cluster (`up --max-nodes N`) as the login node sees it: whether a cluster is
//! one (its record says, or its head's report of its worker jobs does), the Slurm jobs it is
//! made of (the head's and each worker job), as `status` and `scale` show them, and what
//! `scale` may ask of it.

use std::path::Path;

use anyhow::Result;
use chrono::{DateTime, Local};
use serde::Serialize;

use crate::error::{UsageError, show};
use crate::handoff::cluster_info::ClusterInfo;
use crate::handoff::elastic::{ScaleRequest, WorkerJobs};
use crate::runs::status::JobStatus;
use crate::runs::store::RunRecord;
use crate::slurm::duration;
use crate::slurm::query::Phase;

/// What the login node knows of an elastic cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Elastic {
    /// `--max-nodes`: nodes in all, the head's allocation included.
    pub(crate) max_nodes: u32,
    /// The worker jobs its head last reported (none before the head has written them).
    pub(crate) workers: Option<WorkerJobs>,
}

/// One Slurm job of an elastic cluster, as `status --json` and `scale --json` print it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ClusterJob {
    pub(crate) job_id: String,
    /// `head` (the allocation `up` submitted) or `worker` (one the head submitted).
    pub(crate) role: &'static str,
    /// A worker job's type (`worker` for a cluster given no `--worker-type`); none for the head.
    pub(crate) worker_type: Option<String>,
    /// A worker job's node; the head's nodes (a Slurm host list). `None` until placed.
    pub(crate) node: Option<String>,
    /// The head's Slurm state; a worker's `PENDING`, `STARTING`, `RUNNING` or `STOPPING`.
    pub(crate) state: String,
    /// Since when (RFC 3339): the head up (or submitted, while pending), a worker in its state.
    pub(crate) since: Option<String>,
    /// Seconds a joined worker's node has run nothing.
    pub(crate) idle_s: Option<u64>,
}

/// An elastic cluster's jobs, as `status --json` (key `elastic`) and `scale --json` print it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ElasticView {
    pub(crate) max_nodes: u32,
    /// Why the head has stopped growing the cluster (after repeated failures), if it has.
    pub(crate) paused: Option<String>,
    /// When the head last reported its worker jobs (RFC 3339), if it has.
    pub(crate) updated_at: Option<String>,
    /// Ray's pending work that no worker type can hold (not retried), each a line.
    pub(crate) unplaceable: Vec<String>,
    /// Ray's pending work a worker type could hold once the limits leave room, each a line.
    pub(crate) waiting_for_room: Vec<String>,
    /// The head's job first, then each worker job while the head's job runs.
    pub(crate) jobs: Vec<ClusterJob>,
}

impl Elastic {
    /// The cluster of `record` (with its private directory `run_dir`) as an elastic one;
    /// `None` for a cluster started without `--max-nodes`, or a run of `launch`.
    pub(crate) fn of(record: &RunRecord, run_dir: &Path) -> Result<Option<Self>> {
        if !record.cluster {
            return Ok(None);
        }
        let workers = WorkerJobs::read(run_dir)?;
        let max_nodes = record.max_nodes.or(workers.as_ref().map(|w| w.max_nodes));
        Ok(max_nodes.map(|max_nodes| Self { max_nodes, workers }))
    }

    /// The cluster's jobs: the head's, as `status` found it (`info`, what its head wrote once
    /// up), then the worker jobs its head reports, while the head's job runs (an ended head's
    /// last report is stale).
    pub(crate) fn view(
        &self,
        record: &RunRecord,
        status: &JobStatus,
        info: Option<&ClusterInfo>,
    ) -> ElasticView {
        let running = status.phase == Some(Phase::Running);
        let since = match status.phase {
            Some(Phase::Running) => info.map(|i| i.ready_at.clone()),
            Some(Phase::Pending) => Some(record.submitted_at.clone()),
            _ => None,
        };
        let mut jobs = vec![ClusterJob {
            job_id: record.job_id.clone(),
            role: "head",
            worker_type: None,
            node: status.nodelist.clone(),
            state: status.label(),
            since,
            idle_s: None,
        }];
        let workers = self.workers.as_ref().filter(|_| running);
        jobs.extend(
            workers
                .into_iter()
                .flat_map(|w| &w.jobs)
                .map(|j| ClusterJob {
                    job_id: j.job_id.clone(),
                    role: "worker",
                    worker_type: Some(j.worker_type.clone()),
                    node: j.node.clone(),
                    state: j.state.clone(),
                    since: Some(j.since.clone()),
                    idle_s: j.idle_s,
                }),
        );
        ElasticView {
            max_nodes: self.max_nodes,
            paused: workers.and_then(|w| w.paused.clone()),
            updated_at: workers.map(|w| w.updated_at.clone()),
            unplaceable: workers.map(|w| w.unplaceable.clone()).unwrap_or_default(),
            waiting_for_room: workers
                .map(|w| w.waiting_for_room.clone())
                .unwrap_or_default(),
            jobs,
        }
    }
}

impl ElasticView {
    /// The jobs as aligned columns under a summary line, each line indented, and why growing
    /// is paused, if it is: what `status` shows under a live elastic cluster's line.
    pub(crate) fn table(&self) -> String {
        let workers = self.jobs.iter().filter(|j| j.role == "worker").count();
        let mut lines = vec![match &self.updated_at {
            Some(at) => format!(
                "  elastic, up to {} nodes: {workers} worker job(s), as the head saw them at {}",
                self.max_nodes,
                clock(at)
            ),
            None => format!(
                "  elastic, up to {} nodes: no worker job reported yet",
                self.max_nodes
            ),
        }];
        let mut rows =
            vec![["JOBID", "ROLE", "TYPE", "NODE", "STATE", "SINCE", "IDLE"].map(str::to_owned)];
        for j in &self.jobs {
            rows.push([
                j.job_id.clone(),
                j.role.to_owned(),
                j.worker_type.clone().unwrap_or_else(|| "-".to_owned()),
                j.node.clone().unwrap_or_else(|| "-".to_owned()),
                j.state.clone(),
                j.since.as_deref().map_or_else(|| "-".to_owned(), clock),
                j.idle_s.map_or_else(|| "-".to_owned(), duration::format),
            ]);
        }
        lines.extend(aligned(&rows).into_iter().map(|l| format!("  {l}")));
        if let Some(why) = &self.paused {
            lines.push(format!("  growing is paused: {why}"));
        }
        for (title, work) in [
            (
                "Ray's pending work that no worker type can hold (not retried)",
                &self.unplaceable,
            ),
            (
                "Ray's pending work waiting for room (--max-nodes, --max-workers)",
                &self.waiting_for_room,
            ),
        ] {
            if !work.is_empty() {
                lines.push(format!("  {title}:"));
                lines.extend(work.iter().map(|w| format!("    {w}")));
            }
        }
        lines.join("\n")
    }
}

/// An RFC 3339 time as a local clock time, as `queue` shows times; the text itself if it is
/// not one.
fn clock(at: &str) -> String {
    DateTime::parse_from_rfc3339(at).map_or_else(
        |_| at.to_owned(),
        |t| t.with_timezone(&Local).format("%H:%M:%S").to_string(),
    )
}

/// Rows as columns two spaces apart, the last column unpadded.
fn aligned<const N: usize>(rows: &[[String; N]]) -> Vec<String> {
    let widths: Vec<usize> = (0..N)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c + 1 == N {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<width$}  ", width = widths[c]));
                }
            }
            line
        })
        .collect()
}

/// Whether `change` can be asked of cluster `name`, whose head has `head_nodes` nodes of its
/// own and which grows to `max_nodes` in all: `=N` within those bounds, `+N` and `-N` not 0.
pub(crate) fn check_change(
    name: &str,
    change: ScaleRequest,
    head_nodes: u32,
    max_nodes: u32,
) -> Result<(), UsageError> {
    match change {
        ScaleRequest::Add(0) | ScaleRequest::Remove(0) => Err(UsageError::new(format!(
            "`{change}` changes nothing"
        ))
        .hint("give a count of at least 1, e.g. `+1`")),
        ScaleRequest::To(n) if n > max_nodes => Err(UsageError::new(format!(
            "`{change}` is more than cluster {}'s --max-nodes {max_nodes}",
            show(name)
        ))
        .hint(format!(
            "ask for at most `={max_nodes}`; a larger cluster needs `rayslurm up` with a larger --max-nodes"
        ))),
        ScaleRequest::To(n) if n < head_nodes => Err(UsageError::new(format!(
            "`{change}` is fewer than the {head_nodes} node(s) of cluster {}'s own allocation, which stay",
            show(name)
        ))
        .hint(format!("`={head_nodes}` gives back every worker job"))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::elastic::WorkerJob;
    use crate::handoff::run_files::RunFiles;

    fn record(max_nodes: Option<u32>) -> RunRecord {
        let files = RunFiles::for_stem(Path::new("/nonexistent"), "lab_1");
        let at = DateTime::parse_from_rfc3339("2026-11-25T18:00:00+00:00").unwrap();
        let mut r = RunRecord::new("lab", "7", &files, at, Path::new("/w"), ":", 1);
        r.cluster = true;
        r.max_nodes = max_nodes;
        r
    }

    fn workers() -> WorkerJobs {
        WorkerJobs {
            head_job: "7".into(),
            attempt: 0,
            max_nodes: 4,
            head_nodes: 1,
            jobs: vec![
                WorkerJob {
                    job_id: "9".into(),
                    worker_type: "worker".into(),
                    state: "RUNNING".into(),
                    node: Some("node2".into()),
                    since: "2026-11-25T19:00:00+00:00".into(),
                    idle_s: Some(75),
                },
                WorkerJob {
                    job_id: "10".into(),
                    worker_type: "worker".into(),
                    state: "PENDING".into(),
                    node: None,
                    since: "2026-11-25T19:01:00+00:00".into(),
                    idle_s: None,
                },
            ],
            paused: Some("3 worker jobs failed in a row".into()),
            unplaceable: Vec::new(),
            waiting_for_room: Vec::new(),
            updated_at: "2026-11-25T19:02:00+00:00".into(),
        }
    }

    fn running() -> JobStatus {
        JobStatus {
            state: "RUNNING".into(),
            phase: Some(Phase::Running),
            nodelist: Some("node1".into()),
            ..JobStatus::unknown()
        }
    }

    #[test]
    fn a_cluster_is_elastic_by_its_record_or_its_heads_report() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Elastic::of(&record(None), dir.path()).unwrap(), None);
        let e = Elastic::of(&record(Some(8)), dir.path()).unwrap().unwrap();
        assert_eq!((e.max_nodes, e.workers), (8, None));
        workers().write(dir.path()).unwrap();
        let e = Elastic::of(&record(None), dir.path()).unwrap().unwrap();
        assert_eq!(e.max_nodes, 4);
        let mut run = record(Some(8));
        run.cluster = false;
        assert_eq!(Elastic::of(&run, dir.path()).unwrap(), None, "a run");
    }

    #[test]
    fn the_view_lists_the_head_then_the_workers_while_the_head_runs() {
        let e = Elastic {
            max_nodes: 4,
            workers: Some(workers()),
        };
        let v = e.view(&record(Some(4)), &running(), None);
        let ids: Vec<(&str, &str)> = v.jobs.iter().map(|j| (j.role, j.job_id.as_str())).collect();
        assert_eq!(ids, [("head", "7"), ("worker", "9"), ("worker", "10")]);
        assert_eq!(v.jobs[0].node.as_deref(), Some("node1"));
        assert_eq!(v.paused.as_deref(), Some("3 worker jobs failed in a row"));
        let ended = JobStatus {
            state: "COMPLETED".into(),
            phase: Some(Phase::Ended),
            ..JobStatus::unknown()
        };
        let v = e.view(&record(Some(4)), &ended, None);
        assert_eq!(v.jobs.len(), 1, "an ended head's report is stale");
        assert_eq!((v.paused, v.updated_at), (None, None));
    }

    #[test]
    fn the_table_aligns_the_jobs_and_says_why_growing_is_paused() {
        let e = Elastic {
            max_nodes: 4,
            workers: Some(workers()),
        };
        let text = e.view(&record(Some(4)), &running(), None).table();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("  elastic, up to 4 nodes: 2 worker job(s)"),
            "{text}"
        );
        assert_eq!(
            lines[1],
            "  JOBID  ROLE    TYPE    NODE   STATE    SINCE     IDLE"
        );
        assert!(
            lines[2].starts_with("  7      head    -       node1  RUNNING  -         -"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("  9      worker  worker  node2  RUNNING  "),
            "{text}"
        );
        assert!(lines[3].ends_with("  1:15"), "{text}");
        assert!(
            lines[4].starts_with("  10     worker  worker  -      PENDING  "),
            "{text}"
        );
        assert_eq!(
            lines[5],
            "  growing is paused: 3 worker jobs failed in a row"
        );
        let none = Elastic {
            max_nodes: 4,
            workers: None,
        };
        let text = none.view(&record(Some(4)), &running(), None).table();
        assert!(text.contains("no worker job reported yet"), "{text}");
        assert_eq!(text.lines().count(), 3, "{text}");
    }

    #[test]
    fn a_change_is_checked_against_the_clusters_bounds() {
        let check = |text: &str| check_change("lab", ScaleRequest::parse(text).unwrap(), 2, 8);
        for ok in ["+1", "-3", "=2", "=8", "+20"] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        for (bad, said) in [
            ("+0", "changes nothing"),
            ("-0", "changes nothing"),
            ("=9", "more than cluster `lab`'s --max-nodes 8"),
            ("=1", "fewer than the 2 node(s)"),
        ] {
            let err = check(bad).unwrap_err();
            assert!(err.message.contains(said), "{bad}: {}", err.message);
        }
    }
}
