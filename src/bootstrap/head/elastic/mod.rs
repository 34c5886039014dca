//! An elastic cluster (`up --max-nodes N`): beside serving jobs, the head grows the cluster
//! with worker jobs (Slurm jobs of their own, one node each, that join its Ray: see
//! `worker/elastic.rs`) while Ray reports work it cannot place ([`ray_status`]), gives a worker
//! job back once its node has run nothing for `--worker-idle-timeout`, replaces lost ones under
//! `--replace-failed`, and carries out `rayslurm scale`. What to do is [`plan`]'s; the jobs are
//! [`jobs`]'. Every worker job is cancelled when the cluster ends, however it ends (the
//! watchdog does it if the head's bootstrap dies).

mod fit;
mod jobs;
mod plan;
mod ray_status;

use std::time::Instant;

use chrono::{Local, SecondsFormat};

use super::cluster::Head;
use crate::bootstrap::node::say;
use crate::handoff::elastic::{ScaleRequest, WorkerJobs, worker_dir, worker_sbatch_args};
use crate::handoff::run_files::{RunFiles, create_private_dir};
use jobs::Jobs;
use plan::{Action, Inputs, Limits};
use ray_status::RayStatus;

pub(super) struct Elastic {
    jobs: Jobs,
    /// Ray's reports; none if its helper could not start (then only `scale` grows).
    status: Option<RayStatus>,
    limits: Limits,
    last_tick: Option<Instant>,
    /// When the report last acted on came.
    last_report: Option<Instant>,
}

impl Elastic {
    /// The cluster's elastic part, if `--max-nodes` asks for one.
    pub(super) fn start(head: &Head) -> Result<Option<Self>, String> {
        let (args, alloc, node) = (head.args, head.alloc, head.node());
        let Some(max_nodes) = args.cluster.serve.max_nodes else {
            return Ok(None);
        };
        let ray = head.ray.as_ref().ok_or("an elastic cluster needs Ray")?;
        let run_dir = args
            .run_dir
            .clone()
            .ok_or("an elastic cluster needs a run directory")?;
        let script = args
            .state_file
            .as_deref()
            .and_then(RunFiles::from_state_file)
            .map(|f| f.script)
            .ok_or("an elastic cluster needs its run's script")?;
        create_private_dir(&worker_dir(&run_dir)).map_err(|e| format!("{e:#}"))?;
        let exp = std::env::var("SLURM_JOB_NAME").unwrap_or_else(|_| "rayslurm".to_owned());
        let head_job = format!("{}.{}", alloc.job_id, alloc.restart_count);
        let options = worker_sbatch_args(&exp, &run_dir, &head_job);
        let limits = Limits {
            max_nodes,
            head_nodes: alloc.nodes.len() as u32,
            max_pending: args.cluster.serve.max_pending_workers.max(1),
            idle_timeout: u64::from(args.cluster.serve.worker_idle_timeout),
        };
        let file = WorkerJobs {
            head_job: alloc.job_id.clone(),
            attempt: alloc.restart_count,
            max_nodes,
            head_nodes: limits.head_nodes,
            jobs: Vec::new(),
            paused: None,
            updated_at: Local::now().to_rfc3339_opts(SecondsFormat::Secs, false),
        };
        let mut jobs = Jobs::new(
            run_dir,
            script,
            options,
            file,
            args.cluster.serve.replace_failed,
        );
        jobs.write(node);
        let status = RayStatus::start(ray, &head.started.mark, node)
            .map_err(|e| say(node, format!("warning: cannot ask Ray for its demand ({e}); only `rayslurm scale` grows the cluster")))
            .ok();
        say(
            node,
            format!(
                "elastic: up to {max_nodes} nodes, worker jobs given back after {} s idle",
                limits.idle_timeout
            ),
        );
        Ok(Some(Self {
            jobs,
            status,
            limits,
            last_tick: None,
            last_report: None,
        }))
    }

    /// Takes a `scale` request, notes worker jobs whose node has just joined, and, as soon as
    /// Ray has reported again (every [`ray_status::EVERY`]), for a request, or every
    /// [`ray_status::EVERY`] anyway, brings the jobs up to date and acts on the plan.
    pub(super) fn tick(&mut self, node: &str) {
        let request = match ScaleRequest::take(&self.jobs.run_dir) {
            Some(Ok(r)) => {
                say(node, format!("rayslurm scale {r} asked"));
                self.jobs.resume();
                Some(r)
            }
            Some(Err(why)) => {
                say(
                    node,
                    format!("warning: a scale request was not taken: {why}"),
                );
                None
            }
            None => None,
        };
        if self.jobs.note_joined(node) {
            self.jobs.write(node);
        }
        let latest = self.status.as_ref().and_then(RayStatus::latest);
        let fresh = latest
            .as_ref()
            .is_some_and(|(at, _)| self.last_report.is_none_or(|seen| *at > seen));
        let due = self
            .last_tick
            .is_none_or(|t| t.elapsed() >= ray_status::HEARTBEAT);
        if request.is_none() && !fresh && !due {
            return;
        }
        self.last_tick = Some(Instant::now());
        self.last_report = latest.as_ref().map(|(at, _)| *at);
        let report = latest.map(|(_, r)| r);
        self.jobs.poll(report.as_ref(), node);
        let now = Inputs {
            jobs: self.jobs.views(),
            demand: report.as_ref().map_or(0, ray_status::Report::demand_count),
            replacements: self.jobs.replacements,
            paused: self.jobs.paused.is_some(),
            since_submit: self.jobs.last_submit.map(|t| t.elapsed()),
            request,
        };
        for action in plan::plan(&self.limits, &now) {
            match action {
                Action::Submit(n) => self.jobs.submit(n, node),
                Action::Cancel(ids) => {
                    let why = if request.is_some() {
                        "rayslurm scale"
                    } else {
                        "idle"
                    };
                    self.jobs.cancel(&ids, node, why);
                }
            }
        }
        self.jobs.write(node);
    }

    /// Gives every worker job back: the cluster ends.
    pub(super) fn stop(mut self, node: &str) {
        self.jobs.stop_all(node);
    }
}
