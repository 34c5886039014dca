//! A persistent cluster as the login node sees it: its run record (a cluster and an
//! experiment never share a name), and whether it is still pending, starting, up or down.

use std::path::PathBuf;

use anyhow::Result;

use super::relay;
use crate::error::{UsageError, show};
use crate::handoff::cluster_info::ClusterInfo;
use crate::handoff::port_held::PortHeld;
use crate::printer::Printer;
use crate::ray::jobs_api::JobsApi;
use crate::runs::select::close_matches;
use crate::runs::status::{self, JobStatus};
use crate::runs::store::{RunStore, StoredRun};
use crate::slurm::query::Phase;

/// Where a cluster stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    /// Its allocation waits in Slurm's queue (with Slurm's state, e.g. `PENDING (Resources)`).
    Pending(String),
    /// Allocated, Ray still starting.
    Starting,
    /// Ray is up and takes jobs.
    Up(ClusterInfo),
    /// The allocation has ended (how, as `status` says).
    Down(String),
}

/// The job's current attempt (Slurm's restart count), if Slurm says.
fn current_attempt(job_id: &str) -> Option<u32> {
    crate::slurm::query::scontrol_job(job_id)
        .ok()
        .flatten()
        .map(|j| j.restarts.unwrap_or(0))
}

/// Whether a cluster's info is of another attempt than the job's current one.
fn is_stale(info: &ClusterInfo, current: Option<u32>) -> bool {
    current.is_some_and(|c| c != info.attempt)
}

/// A recorded cluster.
#[derive(Debug)]
pub(crate) struct Cluster {
    pub(crate) run: StoredRun,
    pub(crate) run_dir: PathBuf,
}

impl Cluster {
    /// The cluster named `name` in the user's run store (a damaged record costs a warning),
    /// with the store, which keeps what becomes of it: how every cluster command starts.
    pub(crate) fn open(name: &str, printer: &Printer) -> Result<(RunStore, Self)> {
        let (store, runs) = RunStore::open(printer)?;
        let cluster = Self::find(&runs, name)?;
        Ok((store, cluster))
    }

    /// The cluster named `name` among the recorded runs (its newest record).
    pub(crate) fn find(runs: &[StoredRun], name: &str) -> Result<Self, UsageError> {
        let run = runs
            .iter()
            .filter(|r| r.record.cluster && r.record.exp_name == name)
            .max_by_key(|r| r.record.submitted());
        let Some(run) = run else {
            let names: Vec<&str> = runs
                .iter()
                .filter(|r| r.record.cluster)
                .map(|r| r.record.exp_name.as_str())
                .collect();
            let close = close_matches(name, &names);
            let mut err = UsageError::new(format!("no cluster named {}", show(name)));
            err = if close.is_empty() {
                err.hint("start one with `rayslurm up NAME`; `rayslurm status` lists clusters")
            } else {
                err.hint(format!("did you mean {}?", close.join(", ")))
            };
            return Err(err);
        };
        Self::of(run)
    }

    /// The cluster a run record is (one of `up`'s), its directory read from the record.
    pub(crate) fn of(run: &StoredRun) -> Result<Self, UsageError> {
        let name = &run.record.exp_name;
        let run_dir = run.record.files().map(|f| f.dir).ok_or_else(|| {
            UsageError::new(format!("the record of cluster {} is damaged", show(name)))
        })?;
        Ok(Self {
            run: run.clone(),
            run_dir,
        })
    }

    /// Its job's status now, as `status` shows it (Slurm asked again on a passing failure).
    pub(crate) fn status(&self, printer: &Printer) -> Result<JobStatus> {
        Ok(status::current(&self.run, printer)?)
    }

    /// What its head wrote and its Jobs API, if it is up now; a clear error otherwise.
    pub(crate) fn connect(&self, printer: &Printer) -> Result<(ClusterInfo, JobsApi)> {
        self.api(&self.status(printer)?)
    }

    pub(crate) fn name(&self) -> &str {
        &self.run.record.exp_name
    }

    /// The cluster's state, from its job's status and what its head wrote.
    pub(crate) fn state(&self, status: &JobStatus) -> Result<State> {
        match status.phase {
            Some(Phase::Pending) => Ok(State::Pending(status.label())),
            Some(Phase::Running) => Ok(match ClusterInfo::read(&self.run_dir)? {
                // Written by an earlier attempt of the job (before a requeue): its head,
                // address and token are gone; the new head has not written its own yet.
                Some(info) if is_stale(&info, current_attempt(&info.job_id)) => State::Starting,
                Some(info) => State::Up(info),
                None => State::Starting,
            }),
            _ => Ok(State::Down(status.label())),
        }
    }

    /// The cluster's Jobs API, if it is up; a clear error otherwise.
    pub(crate) fn api(&self, status: &JobStatus) -> Result<(ClusterInfo, JobsApi)> {
        let info = self.up_info(status)?;
        if let Some(held) = PortHeld::read(&self.run_dir).filter(|h| h.attempt == info.attempt) {
            anyhow::bail!(
                "cluster {} cannot be reached safely: its head found that {}; nothing was sent to the cluster (rayslurm sends the token only to a port it has checked is yours); `rayslurm down {}` still releases it",
                show(self.name()),
                held.message,
                self.name()
            );
        }
        let address = relay::address(&info, info.dashboard_port)?;
        let api = JobsApi::new(&address, info.token_file.as_deref())
            .map_err(|e| anyhow::anyhow!("cannot read the cluster's token: {e}"))?;
        Ok((info, api))
    }

    /// What its head wrote, if it is up; a clear error (a usage error) otherwise.
    pub(crate) fn up_info(&self, status: &JobStatus) -> Result<ClusterInfo> {
        let name = self.name();
        match self.state(status)? {
            State::Up(info) => Ok(info),
            State::Pending(s) => Err(UsageError::new(format!(
                "cluster {} is not up yet: its allocation is {s}",
                show(name)
            ))
            .hint(format!("wait for it with `rayslurm up {name}` (it returns once it is up), or see `rayslurm status {name}`"))
            .into()),
            State::Starting => Err(UsageError::new(format!(
                "cluster {} is starting: Ray is not up yet",
                show(name)
            ))
            .hint("try again in a few seconds")
            .into()),
            State::Down(s) => Err(UsageError::new(format!(
                "cluster {} is down ({s})",
                show(name)
            ))
            .hint(format!("start it again with `rayslurm up {name}`"))
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_attempts_info_is_stale() {
        let info: ClusterInfo = serde_json::from_value(serde_json::json!({
            "job_id": "7", "head_node": "n1", "head_ip": "10.0.0.1", "dashboard_port": 12001,
            "nodes": ["n1"], "cpus_per_node": 2, "gpus_per_node": 0, "ready_at": "",
            "token_file": null, "rayslurm_bin": "/x", "idle_timeout": null
        }))
        .unwrap();
        assert_eq!(info.attempt, 0, "an older file is the first attempt's");
        assert!(!is_stale(&info, Some(0)));
        assert!(is_stale(&info, Some(1)));
        assert!(!is_stale(&info, None), "Slurm silent: not refused for that");
    }
}
