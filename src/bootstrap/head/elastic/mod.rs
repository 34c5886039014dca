//! An elastic cluster (`up --max-nodes N`): beside serving jobs, the head grows the cluster
//! with worker jobs (Slurm jobs of their own, one node each, that join its Ray: see
//! `worker/elastic.rs`) while Ray reports work it cannot place ([`ray_status`]), gives a worker
//! job back once its node has run nothing for `--worker-idle-timeout`, replaces lost ones under
//! `--replace-failed`, and carries out `rayslurm scale`. What to do is [`plan`]'s; the jobs are
//! [`jobs`]'. Every worker job is cancelled when the cluster ends, however it ends (the
//! watchdog does it if the head's bootstrap dies).

mod deadlines;
mod demand;
mod drains;
mod fit;
mod jobs;
mod plan;
mod ray_status;

use std::time::Instant;

use chrono::{Local, SecondsFormat};

use super::cluster::Head;
use crate::bootstrap::node::say;
use crate::handoff::cluster::ServeOptions;
use crate::handoff::elastic::{ScaleRequest, WorkerJobs, worker_dir, worker_sbatch_args};
use crate::handoff::run_files::{RunFiles, create_private_dir};
use crate::handoff::worker_types::{self, WorkerType};
use demand::Needs;
use drains::{DrainTo, Drains};
use jobs::{Jobs, Kind};
use plan::{Action, Inputs, Limits, TypeLimits};
use ray_status::RayStatus;

pub(super) struct Elastic {
    jobs: Jobs,
    /// Ray's reports; none if its helper could not start (then only `scale` grows).
    status: Option<RayStatus>,
    limits: Limits,
    last_tick: Option<Instant>,
    /// When the report last acted on came.
    last_report: Option<Instant>,
    /// The worker types as Ray's demand is fitted onto them.
    shapes: Vec<fit::TypeShape>,
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
        let types = worker_types::read(&run_dir)
            .map_err(|e| format!("{e:#}"))?
            .unwrap_or_else(|| vec![WorkerType::plain()]);
        let serve = &args.cluster.serve;
        let limits = limits_of(&types, max_nodes, alloc.nodes.len() as u32, serve);
        let kinds: Vec<Kind> = types
            .into_iter()
            .map(|spec| Kind {
                options: worker_sbatch_args(&exp, &run_dir, &head_job, &spec),
                script: spec.script.clone().unwrap_or_else(|| script.clone()),
                spec,
            })
            .collect();
        let file = WorkerJobs {
            head_job: alloc.job_id.clone(),
            attempt: alloc.restart_count,
            max_nodes,
            head_nodes: limits.head_nodes,
            jobs: Vec::new(),
            paused: None,
            unplaceable: Vec::new(),
            waiting_for_room: Vec::new(),
            updated_at: Local::now().to_rfc3339_opts(SecondsFormat::Secs, false),
        };
        let drains = Drains::new(Some(DrainTo {
            address: ray.address.clone(),
            auth: ray.auth.clone(),
            mark: head.started.mark.clone(),
        }));
        let mut jobs = Jobs::new(run_dir, kinds, file, serve.replace_failed, drains);
        jobs.write(node);
        let status = RayStatus::start(ray, &head.started.mark, node)
            .map_err(|e| say(node, format!("warning: cannot ask Ray for its demand ({e}); only `rayslurm scale` grows the cluster")))
            .ok();
        say(
            node,
            format!(
                "elastic: up to {max_nodes} nodes; worker types: {}",
                described(&limits)
            ),
        );
        Ok(Some(Self {
            jobs,
            status,
            limits,
            last_tick: None,
            last_report: None,
            shapes: Vec::new(),
        }))
    }

    /// Takes a `scale` request, notes worker jobs whose node has just joined and the answers
    /// to idle drains, and, as soon as Ray has reported again (on a change, at least every
    /// [`ray_status::HEARTBEAT`]), or for a request, acts on the plan; Slurm is asked how the
    /// jobs stand every [`ray_status::HEARTBEAT`] and for a request.
    pub(super) fn tick(&mut self, node: &str) {
        let request = self.take_request(node);
        let mut changed = self.jobs.note_joined(node);
        let settled = self.jobs.drains.settle();
        for id in &settled.kept {
            say(
                node,
                format!("keeping worker job {id}: Ray has work on its node again"),
            );
        }
        if !settled.cancel.is_empty() {
            self.jobs.cancel(&settled.cancel, node, "idle, drained");
            changed = true;
        }
        if changed {
            self.jobs.write(node);
        }
        let latest = self.status.as_ref().and_then(RayStatus::latest);
        let fresh = latest
            .as_ref()
            .is_some_and(|(at, _)| self.last_report.is_none_or(|seen| *at > seen));
        let slurm_due = self
            .last_tick
            .is_none_or(|t| t.elapsed() >= ray_status::HEARTBEAT);
        if request.is_none() && !fresh && !slurm_due && !changed {
            return;
        }
        self.last_report = latest.as_ref().map(|(at, _)| *at);
        let report = latest.map(|(_, r)| r);
        // Slurm is asked every HEARTBEAT (and for a request); Ray's reports, as they come.
        if slurm_due || request.is_some() {
            self.last_tick = Some(Instant::now());
            self.jobs.poll(report.as_ref(), node);
        }
        let mut jobs = self.jobs.views();
        let needs = match &report {
            Some(r) => {
                demand::learn(&mut self.shapes, &self.jobs.kinds, r);
                demand::needs(&self.shapes, &self.limits, &jobs, r)
            }
            None => Needs::default(),
        };
        for j in &mut jobs {
            j.needed = needs.used.contains(&j.id);
        }
        self.say_unplaceable(&needs, node);
        let now = Inputs {
            jobs,
            want: needs.want,
            replacements: self.jobs.replacements.clone(),
            paused: self.jobs.paused.is_some(),
            request: request.clone(),
        };
        for action in plan::plan(&self.limits, &now) {
            match action {
                Action::Submit(kind, n) => self.jobs.submit(&kind, n, node),
                Action::Cancel(ids) if request.is_some() => {
                    self.jobs.cancel(&ids, node, "rayslurm scale");
                }
                Action::Cancel(ids) => {
                    let now = self.jobs.drains.idle(node, &ids);
                    if !now.is_empty() {
                        self.jobs.cancel(&now, node, "idle");
                    }
                }
            }
        }
        self.jobs.write(node);
    }

    /// The `scale` request left for the head, if any, with the type it names.
    fn take_request(&mut self, node: &str) -> Option<(ScaleRequest, Option<String>)> {
        match ScaleRequest::take(&self.jobs.run_dir)? {
            Ok((change, kind)) => {
                let named = kind
                    .as_deref()
                    .map_or(String::new(), |k| format!(" --worker-type {k}"));
                say(node, format!("rayslurm scale {change}{named} asked"));
                self.jobs.resume();
                Some((change, kind))
            }
            Err(why) => {
                say(
                    node,
                    format!("warning: a scale request was not taken: {why}"),
                );
                None
            }
        }
    }

    /// Says in the log the work no worker type can hold, once each, and keeps it with the work
    /// that waits for room in `workers.json` for `status`.
    fn say_unplaceable(&mut self, needs: &Needs, node: &str) {
        for line in &needs.unplaceable {
            if !self.jobs.file.unplaceable.contains(line) {
                say(node, format!("warning: Ray's pending work {line}"));
            }
        }
        self.jobs.file.unplaceable.clone_from(&needs.unplaceable);
        self.jobs.file.waiting_for_room.clone_from(&needs.waiting);
    }

    /// Gives every worker job back: the cluster ends.
    pub(super) fn stop(mut self, node: &str) {
        self.jobs.stop_all(node);
    }
}

/// The cluster's limits, and each type's.
fn limits_of(
    types: &[WorkerType],
    max_nodes: u32,
    head_nodes: u32,
    serve: &ServeOptions,
) -> Limits {
    Limits {
        max_nodes,
        head_nodes,
        max_pending: serve.max_pending_workers.max(1),
        types: types
            .iter()
            .map(|t| TypeLimits {
                name: t.name.clone(),
                nodes_per_job: t.nodes_per_job.max(1),
                min_workers: t.min_workers,
                max_workers: t.max_workers,
                idle_timeout: u64::from(t.idle_timeout.unwrap_or(serve.worker_idle_timeout)),
            })
            .collect(),
    }
}

/// The worker types as the log says them.
fn described(limits: &Limits) -> String {
    let types: Vec<String> = limits
        .types
        .iter()
        .map(|t| {
            format!(
                "{} ({} to {} nodes, given back after {} s idle)",
                t.name,
                t.min_workers,
                t.max_workers.map_or("any".to_owned(), |m| m.to_string()),
                t.idle_timeout
            )
        })
        .collect();
    types.join(", ")
}
