//! Which worker types to grow, and by how many nodes, for the work Ray cannot place: Ray's own
//! choice (its autoscaler v2's `ResourceDemandScheduler`, re-implemented on plain data), so an
//! elastic cluster grows as `ray up`'s would. In Ray's order: the `request_resources` floor,
//! packed against nodes' totals (all of it or nothing); placement groups, each all or nothing
//! (STRICT_PACK as one summed bundle, STRICT_SPREAD one bundle a node); then tasks and
//! actors. Each is packed onto the nodes there are (a worker job not yet joined counts as
//! its type's full nodes, so a second look at the same demand submits nothing more), then onto
//! new nodes, each of the type Ray's score prefers (label selectors met, no GPU node for work
//! without GPUs, most resource kinds used, fullest), within each type's room and the
//! cluster's. What nothing could ever hold is `infeasible` (said once in `status`, never
//! retried); what waits for room is `waiting`. `min_workers` is not here: the plan adds
//! those nodes first and passes them in as waiting ones.
// Until the head's plan calls it (issue 38, item 1).

#[cfg(test)]
mod against_ray;
mod node;
mod pack;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::ray_status::{Demand, Labels, RayNode, Resources, Shape};
use pack::Ctx;

/// The label Ray gives a node from `RAY_NODE_TYPE_NAME`: its worker type.
pub(super) const NODE_GROUP: &str = "ray.io/node-group";
/// The label Ray gives a node from `RAY_NODE_MARKET_TYPE`: `spot` or `on-demand`.
pub(super) const MARKET_TYPE: &str = "ray.io/market-type";
/// The resources a node's total is learned for from Ray (v1's list, `object_store_memory` and
/// the accelerator kind Ray finds besides).
const LEARNED: [&str; 4] = ["CPU", "GPU", "memory", "object_store_memory"];
const LEARNED_PREFIX: &str = "accelerator_type:";

/// A worker type as growth sees it: what one of its nodes gives Ray, and how many more may come.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TypeShape {
    pub(super) name: String,
    /// One node's resources, as Ray is (or will be) told them.
    pub(super) resources: Resources,
    /// Its nodes' labels, [`NODE_GROUP`] and [`MARKET_TYPE`] among them.
    pub(super) labels: Labels,
    /// How many more nodes of it are allowed now (its `max_workers` less the nodes it has).
    pub(super) room: u32,
    /// Nodes a worker job of it brings: growth comes in these steps.
    pub(super) nodes_per_job: u32,
    /// Whether `resources` were read from a joined node: until then Ray's `memory` and
    /// `object_store_memory` of a node are unknown, and any amount of them is taken to fit.
    learned: bool,
}

impl TypeShape {
    /// A type before any of its nodes joined: `cpus` (`--cpus-per-task` × tasks a node),
    /// `gpus` (`--num-gpus`'s count), then `resources` (`--resources`, which overrides).
    pub(super) fn new(name: &str, cpus: f64, gpus: f64, resources: &Resources) -> Self {
        let mut all = Resources::new();
        for (key, amount) in [("CPU", cpus), ("GPU", gpus)] {
            if amount > 0.0 {
                all.insert(key.to_owned(), amount);
            }
        }
        all.extend(resources.iter().map(|(k, v)| (k.clone(), *v)));
        let labels = Labels::from([(NODE_GROUP.to_owned(), name.to_owned())]);
        Self {
            name: name.to_owned(),
            resources: all,
            labels,
            room: 0,
            nodes_per_job: 1,
            learned: false,
        }
    }

    /// With the type's own `--labels`, and [`MARKET_TYPE`] `spot` or `on-demand` (the worker's
    /// `ray start` must be given `RAY_NODE_MARKET_TYPE` the same, or selectors will not match).
    pub(super) fn with_labels(mut self, labels: &Labels, preemptible: bool) -> Self {
        self.labels
            .extend(labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        let market = if preemptible { "spot" } else { "on-demand" };
        self.labels
            .insert(MARKET_TYPE.to_owned(), market.to_owned());
        self
    }

    /// Takes what Ray reports of a joined node of this type (its total resources) as the
    /// type's, as Ray's v1 autoscaler does: CPUs, GPUs, memory and object store, and the
    /// accelerator kind. Says whether anything changed.
    pub(super) fn learn(&mut self, total: &Resources) -> bool {
        let before = (self.resources.clone(), self.learned);
        for (key, amount) in total {
            if LEARNED.contains(&key.as_str()) || key.starts_with(LEARNED_PREFIX) {
                self.resources.insert(key.clone(), *amount);
            }
        }
        self.learned = true;
        before != (self.resources.clone(), self.learned)
    }

    pub(super) fn learned(&self) -> bool {
        self.learned
    }
}

/// A node of the cluster now, for packing: a joined Ray node, or one of a worker job not yet
/// joined (then its type's full resources).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct NodeNow {
    /// Its worker job's id, `head` for the head's nodes.
    pub(super) instance: String,
    /// Its worker type's name, `head` for the head's nodes.
    pub(super) type_name: String,
    pub(super) available: Resources,
    pub(super) total: Resources,
    pub(super) labels: Labels,
    /// Submitted, not joined yet.
    pub(super) waiting: bool,
}

impl NodeNow {
    /// A node of Ray's report, unless it is dead or draining (it takes no more work). The
    /// head's nodes have no job id nor type (both `head`); a worker started without
    /// `RAY_CLOUD_INSTANCE_ID` is `node:<Ray node id>`, of type `` without `RAY_NODE_TYPE_NAME`.
    pub(super) fn joined(node: &RayNode) -> Option<Self> {
        if !node.schedulable() {
            return None;
        }
        let head = node.is_head();
        let or = |s: &str, default: String| if s.is_empty() { default } else { s.to_owned() };
        let (instance, type_name) = match head {
            true => ("head".to_owned(), "head".to_owned()),
            false => (format!("node:{}", node.node_id), String::new()),
        };
        Some(Self {
            instance: or(&node.instance_id, instance),
            type_name: or(&node.ray_node_type_name, type_name),
            available: node.available.clone(),
            total: node.total.clone(),
            labels: node.labels.clone(),
            waiting: false,
        })
    }

    /// The nodes of worker job `job_id` of type `t`, submitted and not joined yet.
    pub(super) fn waiting(job_id: &str, t: &TypeShape) -> Vec<Self> {
        let one = Self {
            instance: job_id.to_owned(),
            type_name: t.name.clone(),
            available: t.resources.clone(),
            total: t.resources.clone(),
            labels: t.labels.clone(),
            waiting: true,
        };
        vec![one; t.nodes_per_job.max(1) as usize]
    }
}

/// What to do for Ray's demand now.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Fit {
    /// Nodes to add, by worker type (whole jobs: a multiple of its `nodes_per_job`).
    pub(super) launch: BTreeMap<String, u32>,
    /// The instances (job ids, `head`) some demand or the floor was packed onto: not idle.
    pub(super) used: BTreeSet<String>,
    /// Demand nothing could ever hold: no worker type (nor node there is) can.
    pub(super) infeasible: Vec<Unmet>,
    /// Demand a worker type could hold, with no room for another node of it now.
    pub(super) waiting: Vec<Unmet>,
}

/// Requests of one shape that were not placed, and why.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Unmet {
    pub(super) shape: Shape,
    pub(super) count: u32,
    /// `placement group ID (STRATEGY)` or `request_resources` for a bundle of either.
    pub(super) of: Option<String>,
    pub(super) why: String,
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` × {}",
            ResourcesText(&self.shape.resources),
            self.count
        )?;
        if let Some(of) = &self.of {
            write!(f, " ({of})")?;
        }
        write!(f, ": {}", self.why)
    }
}

/// Resources as a user reads them: `{CPU: 1, GPU: 0.5}`.
pub(super) struct ResourcesText<'a>(pub(super) &'a Resources);

impl fmt::Display for ResourcesText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        write!(f, "{{{}}}", items.join(", "))
    }
}

/// Ray's choice for `demand` on the cluster of `nodes`, growing `types` within their room and
/// by at most `max_new_nodes` nodes in all.
pub(super) fn fit(
    types: &[TypeShape],
    nodes: &[NodeNow],
    demand: &Demand,
    max_new_nodes: u32,
) -> Fit {
    let mut ctx = Ctx::new(types, nodes, max_new_nodes);
    let mut out = Fit::default();
    ctx.floor(&demand.floor, &mut out);
    ctx.groups(&demand.groups, &mut out);
    ctx.tasks(&demand.tasks, &mut out);
    out.launch = ctx.launched().clone();
    out.used = ctx.used();
    out
}
