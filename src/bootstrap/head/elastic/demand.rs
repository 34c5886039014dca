//! Ray's pending work against the cluster's nodes and worker types: the inputs of [`fit`] built
//! from Ray's report (its nodes, each joined worker known by its job: `RAY_CLOUD_INSTANCE_ID`)
//! and the head's jobs (a job still waiting counts as the nodes of its type to come, and so does
//! each job a type's `min_workers` still lacks), and what came of it: the nodes each type needs,
//! the jobs whose nodes have work placed on them, and the work that waits or that no type can
//! hold (said in the log once, and in `status`).

use std::collections::{BTreeMap, BTreeSet};

use super::fit::{self, NodeNow, TypeShape};
use super::jobs::Kind;
use super::plan::{JobView, Limits, Phase};
use super::ray_status::Report;

/// What the demand asks of the cluster now.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Needs {
    /// Nodes of each type to add.
    pub(super) want: BTreeMap<String, u32>,
    /// Jobs whose nodes Ray's work is placed on: not idle, whatever Ray's idle time says.
    pub(super) used: BTreeSet<String>,
    /// Work no worker type can hold, each as a line for `status`.
    pub(super) unplaceable: Vec<String>,
    /// Work a type could hold once the cluster's or the type's most allow, each as a line.
    pub(super) waiting: Vec<String>,
}

/// The types as the fit sees them, each learning its nodes' real totals from the first that
/// joined (kept across calls in `shapes`). Before then, a type that does not say its CPUs
/// (`--cpus-per-task`, `--resources`) is taken to have the head's: the same job but for the
/// type's options.
pub(super) fn learn(shapes: &mut Vec<TypeShape>, kinds: &[Kind], report: &Report) {
    if shapes.is_empty() {
        let head_cpus = report
            .nodes
            .iter()
            .find(|n| n.is_head())
            .and_then(|n| n.total.get("CPU").copied())
            .unwrap_or(1.0);
        *shapes = kinds
            .iter()
            .map(|k| {
                let r = &k.spec.resources;
                TypeShape::new(
                    &k.spec.name,
                    r.get("CPU").copied().unwrap_or(head_cpus),
                    r.get("GPU").copied().unwrap_or(0.0),
                    r,
                )
                .with_labels(&k.spec.labels, k.spec.preemptible)
            })
            .collect();
    }
    for node in &report.nodes {
        if let Some(shape) = shapes
            .iter_mut()
            .find(|s| s.name == node.ray_node_type_name)
            && !shape.learned()
        {
            shape.learn(&node.total);
        }
    }
}

/// Fits Ray's demand onto the cluster: `jobs` as the plan sees them, the cluster's `limits`.
pub(super) fn needs(
    shapes: &[TypeShape],
    limits: &Limits,
    jobs: &[JobView],
    report: &Report,
) -> Needs {
    let live: Vec<&JobView> = jobs
        .iter()
        .filter(|j| !matches!(j.phase, Phase::Stopping | Phase::Leaving))
        .collect();
    let joined: BTreeSet<&str> = report
        .nodes
        .iter()
        .map(|n| n.instance_id.as_str())
        .collect();
    let mut nodes: Vec<NodeNow> = report.nodes.iter().filter_map(NodeNow::joined).collect();
    let mut types = shapes.to_vec();
    let mut live_nodes = 0;
    for t in &mut types {
        let Some(l) = limits.types.iter().find(|l| l.name == t.name) else {
            continue;
        };
        let mine: Vec<&&JobView> = live.iter().filter(|j| j.kind == t.name).collect();
        for j in &mine {
            if !joined.contains(j.id.as_str()) {
                nodes.extend(NodeNow::waiting(&j.id, t));
            }
        }
        let have = mine.len() as u32 * t.nodes_per_job;
        // The jobs the type's minimum still lacks come anyway: the demand may use them.
        for k in 0..l
            .min_workers
            .saturating_sub(have)
            .div_ceil(t.nodes_per_job.max(1))
        {
            nodes.extend(NodeNow::waiting(&format!("min:{}:{k}", t.name), t));
        }
        let counted = have.max(l.min_workers);
        live_nodes += counted;
        t.room = l
            .max_workers
            .map_or(u32::MAX, |m| m.saturating_sub(counted));
    }
    let budget = limits
        .max_nodes
        .saturating_sub(limits.head_nodes + live_nodes);
    let fit = fit::fit(&types, &nodes, &report.demand, budget);
    Needs {
        want: fit.launch.clone(),
        used: fit.used.clone(),
        unplaceable: fit.infeasible.iter().map(ToString::to_string).collect(),
        waiting: fit.waiting.iter().map(ToString::to_string).collect(),
    }
}
