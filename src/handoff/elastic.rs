//! An elastic cluster (`up --max-nodes N`): the head grows it with worker jobs (Slurm jobs of
//! their own that join its Ray) and gives them back when idle. What the two sides exchange,
//! all in the run's private directory: the worker jobs the head has now ([`WorkerJobs`], in
//! `workers.json`, read by `status` and by the head's watchdog), what `rayslurm scale` asks for
//! ([`ScaleRequest`], in `scale-request`), and where each worker job says its node joined.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::run_files::{NotPrivate, read_private_json};
use super::worker_types::WorkerType;
use crate::sys::staged_file::Staged;

const WORKERS_FILE: &str = "workers.json";

/// In the run's private directory: what `rayslurm scale` asks the head, one line.
pub(crate) const SCALE_REQUEST: &str = "scale-request";

/// The variable the head sets on a worker job it submits (its own job id and attempt,
/// `JOB.RESTART`): the run's script then starts a worker of that attempt, not a head.
pub(crate) const ELASTIC_WORKER: &str = "RAYSLURM_ELASTIC_WORKER";

/// Where worker job `job_id` writes its log and, once its node joined, its IP.
pub(crate) fn worker_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("workers")
}

/// The options a job of worker type `kind` is submitted with, before its script (the type's
/// own, or else the run's, whose `#SBATCH` lines they override, so that it has the head's
/// partition, account, resources and environment: then one node): a name and a log of its own,
/// never requeued (the head replaces it), the variable that makes the script start a worker of
/// attempt `head` (`JOB.RESTART`), and Ray's name for the type (`ray.io/node-group`) and its
/// market (`ray.io/market-type`: `spot` for a preemptible type, else `on-demand`). `up` submits the same with
/// `--test-only` to check them before the cluster starts.
pub(crate) fn worker_sbatch_args(
    exp_name: &str,
    run_dir: &Path,
    head: &str,
    kind: &WorkerType,
) -> Vec<String> {
    let mut export = format!(
        "--export=ALL,{ELASTIC_WORKER}={head},{RAY_NODE_TYPE_NAME}={}",
        kind.name
    );
    // Ray sets no market of its own: an `on-demand` label selector needs it said.
    let market = if kind.preemptible {
        "spot"
    } else {
        "on-demand"
    };
    export.push_str(&format!(",{RAY_NODE_MARKET_TYPE}={market}"));
    let mut args = vec![format!("--job-name={exp_name}-{}", kind.name)];
    if kind.script.is_none() {
        args.push("--nodes=1".to_owned());
    }
    args.extend([
        format!("--output={}/%j.log", worker_dir(run_dir).display()),
        "--open-mode=append".to_owned(),
        "--no-requeue".to_owned(),
        export,
    ]);
    args
}

/// Ray's variable naming a node's type (its `ray.io/node-group` label and the node type the
/// autoscaler state reports).
pub(crate) const RAY_NODE_TYPE_NAME: &str = "RAY_NODE_TYPE_NAME";

/// Ray's variable naming a node's instance: a worker job's node is its Slurm job id.
pub(crate) const RAY_CLOUD_INSTANCE_ID: &str = "RAY_CLOUD_INSTANCE_ID";

/// Ray's variable naming a node's market (`spot` on a preemptible type: `ray.io/market-type`).
pub(crate) const RAY_NODE_MARKET_TYPE: &str = "RAY_NODE_MARKET_TYPE";

/// What `rayslurm scale` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScaleRequest {
    /// `+N`: N more worker jobs now.
    Add(u32),
    /// `-N`: N worker jobs fewer now (pending ones first, then the idlest).
    Remove(u32),
    /// `=N`: N nodes in all, the head's own allocation included.
    To(u32),
}

impl ScaleRequest {
    /// `+2`, `-1` or `=4`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let number = |rest: &str| {
            rest.parse::<u32>().map_err(|_| {
                format!("`{text}` is not a change of size: write +N (add), -N (remove) or =N (in all), e.g. +2")
            })
        };
        match text.split_at_checked(1) {
            Some(("+", rest)) => number(rest).map(Self::Add),
            Some(("-", rest)) => number(rest).map(Self::Remove),
            Some(("=", rest)) => number(rest).map(Self::To),
            _ => Err(format!(
                "`{text}` is not a change of size: write +N (add), -N (remove) or =N (in all), e.g. +2"
            )),
        }
    }

    /// Leaves the request for the head (a private file, replaced whole), with the worker type
    /// it grows, if one is named.
    pub(crate) fn write(&self, run_dir: &Path, kind: Option<&str>) -> Result<()> {
        let mut file = Staged::new(run_dir, "scale", 0o600)?;
        let line = match kind {
            Some(k) => format!("{self} {k}\n"),
            None => format!("{self}\n"),
        };
        file.write_all(line.as_bytes())?;
        file.replace(&run_dir.join(SCALE_REQUEST))
    }

    /// Takes the request left for the head, if any, with the worker type it names: it is read
    /// once and removed. One that is not the user's own private file is removed unread.
    pub(crate) fn take(run_dir: &Path) -> Option<Result<(Self, Option<String>), String>> {
        let path = run_dir.join(SCALE_REQUEST);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let text = if NotPrivate::of(&meta).is_none() {
            std::fs::read_to_string(&path).ok()
        } else {
            None
        };
        let _ = std::fs::remove_file(&path);
        Some(
            text.ok_or_else(|| format!("`{}` is not your private file", path.display()))
                .and_then(|t| {
                    let mut words = t.split_whitespace();
                    let change = Self::parse(words.next().unwrap_or_default())?;
                    Ok((change, words.next().map(str::to_owned)))
                }),
        )
    }
}

impl fmt::Display for ScaleRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Add(n) => write!(f, "+{n}"),
            Self::Remove(n) => write!(f, "-{n}"),
            Self::To(n) => write!(f, "={n}"),
        }
    }
}

/// The worker jobs of an elastic cluster, as its head last saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WorkerJobs {
    /// The head's job and attempt these belong to.
    pub(crate) head_job: String,
    pub(crate) attempt: u32,
    /// Nodes in all at most (`--max-nodes`), the head's allocation included.
    pub(crate) max_nodes: u32,
    /// Nodes of the head's own allocation.
    pub(crate) head_nodes: u32,
    pub(crate) jobs: Vec<WorkerJob>,
    /// Why growing is paused (after repeated failures), if it is.
    pub(crate) paused: Option<String>,
    /// Ray's pending work that no worker type can hold (not retried), each a line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) unplaceable: Vec<String>,
    /// Ray's pending work a worker type could hold once `--max-nodes` or the type's
    /// `--max-workers` leaves room, each a line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) waiting_for_room: Vec<String>,
    /// When the head wrote this (RFC 3339).
    pub(crate) updated_at: String,
}

/// One worker job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WorkerJob {
    pub(crate) job_id: String,
    /// Its worker type (`worker`: a cluster given no `--worker-type`).
    #[serde(default = "plain_type")]
    pub(crate) worker_type: String,
    /// `PENDING` (in Slurm's queue), `STARTING` (running, its Ray not yet joined), `RUNNING`
    /// (joined), or `STOPPING` (given back).
    pub(crate) state: String,
    /// Its node, once Slurm placed it.
    pub(crate) node: Option<String>,
    /// Since when it is in that state (RFC 3339).
    pub(crate) since: String,
    /// Seconds its Ray node has run nothing, once joined (Ray's own count).
    pub(crate) idle_s: Option<u64>,
}

fn plain_type() -> String {
    super::worker_types::PLAIN.to_owned()
}

impl WorkerJobs {
    pub(crate) fn path(run_dir: &Path) -> PathBuf {
        run_dir.join(WORKERS_FILE)
    }

    pub(crate) fn write(&self, run_dir: &Path) -> Result<()> {
        let mut file = Staged::new(run_dir, "workers", 0o600)?;
        file.write_json(self)?;
        file.replace(&Self::path(run_dir))
    }

    /// The worker jobs, if the cluster is elastic and its head wrote them; a file that is
    /// not the user's own private file is not read.
    pub(crate) fn read(run_dir: &Path) -> Result<Option<Self>> {
        read_private_json(&Self::path(run_dir))
    }

    /// The ids of the jobs not yet ended, for `scancel`.
    pub(crate) fn live_ids(&self) -> Vec<String> {
        self.jobs.iter().map(|j| j.job_id.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_request_is_a_sign_and_a_count() {
        assert_eq!(ScaleRequest::parse("+2"), Ok(ScaleRequest::Add(2)));
        assert_eq!(ScaleRequest::parse("-1\n"), Ok(ScaleRequest::Remove(1)));
        assert_eq!(ScaleRequest::parse("=4"), Ok(ScaleRequest::To(4)));
        for bad in ["2", "+", "+x", "*3", "", "+-1"] {
            let err = ScaleRequest::parse(bad).unwrap_err();
            assert!(err.contains("+N (add), -N (remove) or =N"), "{bad}: {err}");
        }
        assert_eq!(ScaleRequest::To(4).to_string(), "=4");
    }

    #[test]
    fn a_request_is_taken_once_and_a_foreign_one_is_dropped() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ScaleRequest::take(dir.path()), None);
        ScaleRequest::Add(3).write(dir.path(), None).unwrap();
        assert_eq!(
            ScaleRequest::take(dir.path()),
            Some(Ok((ScaleRequest::Add(3), None)))
        );
        ScaleRequest::To(4).write(dir.path(), Some("gpu")).unwrap();
        assert_eq!(
            ScaleRequest::take(dir.path()),
            Some(Ok((ScaleRequest::To(4), Some("gpu".to_owned()))))
        );
        assert_eq!(ScaleRequest::take(dir.path()), None);
        let path = dir.path().join(SCALE_REQUEST);
        std::fs::write(&path, "+9\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(ScaleRequest::take(dir.path()), Some(Err(_))));
        assert!(!path.exists());
    }

    #[test]
    fn worker_jobs_written_then_read() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(WorkerJobs::read(dir.path()).unwrap(), None);
        let jobs = WorkerJobs {
            head_job: "7".into(),
            attempt: 0,
            max_nodes: 3,
            head_nodes: 1,
            jobs: vec![WorkerJob {
                job_id: "9".into(),
                worker_type: "worker".into(),
                state: "RUNNING".into(),
                node: Some("node2".into()),
                since: "2026-11-25T19:00:00+00:00".into(),
                idle_s: Some(12),
            }],
            paused: None,
            unplaceable: Vec::new(),
            waiting_for_room: Vec::new(),
            updated_at: "2026-11-25T19:00:10+00:00".into(),
        };
        jobs.write(dir.path()).unwrap();
        assert_eq!(WorkerJobs::read(dir.path()).unwrap(), Some(jobs.clone()));
        assert_eq!(jobs.live_ids(), ["9"]);
    }
}
