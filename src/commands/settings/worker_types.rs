//! `up --worker-type`: each worker type resolved into a job of its own, the cluster's flags with
//! the type's on top, through the same resolution as the cluster's own job (so that a type's
//! partition, time, memory or GPUs are checked as `launch`'s are), and what the head is told
//! of it: its counts, what Ray is told of its nodes, its labels.

use std::collections::BTreeMap;

use crate::cli::worker_type::{WorkerTypeArg, WorkerTypeOptions};
use crate::cli::{ClusterArgs, ContainerArgs, JobArgs};
use crate::error::UsageError;
use crate::handoff::worker_types::WorkerType;
use crate::launch::config::{LaunchConfig, Sources, WorkerTypeLaunch};
use crate::launch::worker_type::ray_start_words;
use crate::sys::quote::shell_quote;

/// The cluster's own flags, which every type starts from.
pub(super) struct ClusterFlags<'a> {
    pub(super) job: &'a JobArgs,
    pub(super) container: &'a ContainerArgs,
    pub(super) cluster: &'a ClusterArgs,
}

/// Every type, resolved; `head` is the cluster's own job, resolved.
pub(super) fn resolve(
    types: &[WorkerTypeArg],
    flags: &ClusterFlags,
    head: &LaunchConfig,
    src: &Sources,
) -> Result<Vec<WorkerTypeLaunch>, UsageError> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for t in types {
        if seen.contains(&&t.name) {
            return Err(
                UsageError::new(format!("worker type {} is given twice", t.name))
                    .hint("give each --worker-type a name of its own"),
            );
        }
        seen.push(&t.name);
        out.push(resolve_one(t, flags, head, src).map_err(|e| named(e, &t.name))?);
    }
    Ok(out)
}

/// An error about a type's options says which type.
fn named(mut e: UsageError, name: &str) -> UsageError {
    if !e.message.contains(&format!("worker type {name}")) {
        e.message = format!("worker type {name}: {}", e.message);
    }
    e
}

fn resolve_one(
    t: &WorkerTypeArg,
    flags: &ClusterFlags,
    head: &LaunchConfig,
    src: &Sources,
) -> Result<WorkerTypeLaunch, UsageError> {
    let o = &t.options;
    if let Some(n) = o.num_nodes.filter(|n| *n > 1) {
        return Err(UsageError::new(format!(
            "--num-nodes {n}: a worker job is one node (its node joins the head's Ray on its own)"
        ))
        .hint(format!(
            "count nodes with --max-workers (and --min-workers) instead, e.g. `--max-workers {n}`"
        )));
    }
    let job_args = job_flags(flags.job, o);
    let job = super::job::resolve_job(&job_args, &head.job.exp_name, &head.job.command, src)?;
    let mut cluster_args = flags.cluster.clone();
    if let Some(setup) = &o.setup {
        cluster_args.setup = Some(setup.clone());
    }
    cluster_args.ray_args = ray_args(flags.cluster.ray_args.as_deref(), o)?;
    // A worker's nodes all join the head's Ray: the head's --min-nodes is the head's own.
    cluster_args.min_nodes = None;
    let shared = super::cluster::resolve(&cluster_args, job.request.num_nodes, src)?;
    let mut container_args = flags.container.clone();
    if let Some(image) = &o.container_image {
        container_args.container_image = Some(image.clone());
    }
    let container = super::container::resolve(&container_args, src)?;
    let mut config = head.clone();
    config.worker_types = Vec::new();
    config.cluster.program = shared.program;
    config.cluster.nodes = shared.nodes;
    // No time warning: the head drains a worker before its end (its time warning would come at
    // once to a job shorter than the cluster's stop grace).
    config.cluster.nodes.stop_grace = 0;
    config.cluster.ray = shared.ray;
    config.cluster.container = container;
    let spec = WorkerType {
        name: t.name.clone(),
        nodes_per_job: job.request.num_nodes,
        min_workers: o.min_workers.unwrap_or(0),
        max_workers: o.max_workers,
        idle_timeout: o.idle_timeout,
        preemptible: o.preemptible,
        rollover: o.rollover,
        resources: ray_resources(&job.request, o),
        labels: o.labels.clone().unwrap_or_default(),
        script: None,
    };
    config.job = job.request;
    Ok(WorkerTypeLaunch {
        spec,
        config: Box::new(config),
    })
}

/// The cluster's job flags with the type's on top. A type's job is one node unless it says
/// otherwise, and never names the head's nodes.
fn job_flags(head: &JobArgs, o: &WorkerTypeOptions) -> JobArgs {
    let mut job = head.clone();
    let set = |slot: &mut Option<String>, value: &Option<String>| {
        if value.is_some() {
            slot.clone_from(value);
        }
    };
    set(&mut job.partition, &o.partition);
    set(&mut job.account, &o.account);
    set(&mut job.qos, &o.qos);
    set(&mut job.time, &o.time);
    set(&mut job.constraint, &o.constraint);
    job.num_nodes = o.num_nodes.unwrap_or(1);
    job.node = None;
    if o.cpus_per_task.is_some() {
        job.cpus_per_task = o.cpus_per_task;
    }
    if o.mem.is_some() || o.mem_per_cpu.is_some() {
        job.mem.clone_from(&o.mem);
        job.mem_per_cpu.clone_from(&o.mem_per_cpu);
    }
    if let Some(gpus) = &o.num_gpus {
        job.num_gpus = gpus.clone();
        job.num_gpus_from = None;
    }
    if o.exclusive || o.no_exclusive {
        job.exclusive = o.exclusive;
        job.no_exclusive = o.no_exclusive;
    }
    if !o.sbatch_args.is_empty() {
        job.sbatch_args.clone_from(&o.sbatch_args);
    }
    job
}

/// What Ray is told of the type's nodes beyond what Slurm gives them (`--resources`,
/// `--labels`: `worker_type::ray_start_words`), after the cluster's own `--ray-args`.
fn ray_args(cluster: Option<&str>, o: &WorkerTypeOptions) -> Result<Option<String>, UsageError> {
    let resources = o.resources.clone().unwrap_or_default();
    for key in ["CPU", "GPU", "memory", "object_store_memory"] {
        if let Some(amount) = resources.get(key).filter(|a| a.fract() != 0.0) {
            return Err(UsageError::new(format!(
                "--resources gives {key} = {amount}: Ray takes a whole number of it for a node"
            ))
            .hint(format!("write a whole number, e.g. {}", amount.floor())));
        }
    }
    let labels = o.labels.as_ref().map(|l| {
        l.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    });
    let words = ray_start_words(&resources, labels.as_deref());
    if words.is_empty() {
        return Ok(cluster.map(str::to_owned));
    }
    let own: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
    let own = own.join(" ");
    Ok(Some(match cluster {
        Some(c) if !c.trim().is_empty() => format!("{c} {own}"),
        _ => own,
    }))
}

/// What Ray will be told of each node of the type, as far as it is known before one joins:
/// its CPUs where `--cpus-per-task` gives them, its GPUs, and `--resources` (which wins).
fn ray_resources(
    job: &crate::launch::config::JobRequest,
    o: &WorkerTypeOptions,
) -> BTreeMap<String, f64> {
    let mut r = BTreeMap::new();
    if let Some(c) = job.cpus_per_task {
        r.insert("CPU".to_owned(), f64::from(c * job.tasks_per_node));
    }
    r.insert("GPU".to_owned(), f64::from(job.num_gpus));
    for (k, v) in o.resources.iter().flatten() {
        r.insert(k.clone(), *v);
    }
    r
}
