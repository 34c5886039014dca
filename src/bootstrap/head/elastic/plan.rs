//! What an elastic cluster's head does next with its worker jobs, decided from what it knows
//! (a pure function, tested here), type by type: keep each type's `min_workers` (replacing lost
//! jobs), grow each type by the nodes Ray's pending work needs of it (worked out by the
//! demand's fit, which counts jobs still waiting as nodes to come, so that no demand is
//! submitted for twice), give back a joined job whose node has been idle past its type's
//! timeout and that the demand does not need, replace lost ones under `--replace-failed`, and
//! carry out what `rayslurm scale` asked, always within the cluster's and each type's limits.

use std::collections::BTreeMap;

use crate::handoff::elastic::ScaleRequest;

/// Where a worker job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// In Slurm's queue.
    Pending,
    /// Running, its Ray not yet joined.
    Starting,
    /// Its node is one of Ray's.
    Joined,
    /// Given back (`scancel` sent), not yet gone.
    Stopping,
    /// Going away on Slurm's word (preempted, or its time limit near): drained, or soon, and
    /// replaced where its type wants it; no longer counted among its type's nodes.
    Leaving,
}

/// A worker job as the plan sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct JobView {
    pub(super) id: String,
    /// Its worker type.
    pub(super) kind: String,
    pub(super) phase: Phase,
    /// Seconds its Ray node has run nothing (once joined).
    pub(super) idle_s: Option<u64>,
    /// Ray's pending work was placed on its node by the fit: not to be given back.
    pub(super) needed: bool,
}

/// One worker type's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TypeLimits {
    pub(super) name: String,
    pub(super) nodes_per_job: u32,
    pub(super) min_workers: u32,
    /// Nodes of this type at most, if the type has its own most.
    pub(super) max_workers: Option<u32>,
    pub(super) idle_timeout: u64,
}

/// The cluster's limits.
#[derive(Debug, Clone)]
pub(super) struct Limits {
    pub(super) max_nodes: u32,
    pub(super) head_nodes: u32,
    pub(super) max_pending: u32,
    /// The worker types, the first the one `scale +N` grows.
    pub(super) types: Vec<TypeLimits>,
}

impl Limits {
    fn of(&self, kind: &str) -> Option<&TypeLimits> {
        self.types.iter().find(|t| t.name == kind)
    }
}

/// What the head knows now.
#[derive(Debug, Clone, Default)]
pub(super) struct Inputs {
    pub(super) jobs: Vec<JobView>,
    /// Nodes of each type Ray's pending work needs beyond the nodes there are and to come.
    pub(super) want: BTreeMap<String, u32>,
    /// Lost worker jobs that `--replace-failed` wants back, by type.
    pub(super) replacements: BTreeMap<String, u32>,
    /// Growing is paused after repeated failures.
    pub(super) paused: bool,
    /// `rayslurm scale`, and the type it names (none: the first).
    pub(super) request: Option<(ScaleRequest, Option<String>)>,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Action {
    /// Submit this many jobs of this type.
    Submit(String, u32),
    Cancel(Vec<String>),
}

/// Room the cluster's and the type's limits leave for the type's jobs, and for waiting ones.
struct Room {
    /// Nodes the cluster may still add.
    nodes: u32,
    /// Jobs that may still wait in the queue.
    waiting: u32,
}

pub(super) fn plan(limits: &Limits, now: &Inputs) -> Vec<Action> {
    let live: Vec<&JobView> = now
        .jobs
        .iter()
        .filter(|j| !matches!(j.phase, Phase::Stopping | Phase::Leaving))
        .collect();
    let nodes_of = |kind: &str| -> u32 {
        let npj = limits.of(kind).map_or(1, |t| t.nodes_per_job);
        live.iter().filter(|j| j.kind == kind).count() as u32 * npj
    };
    let nodes: u32 =
        limits.head_nodes + limits.types.iter().map(|t| nodes_of(&t.name)).sum::<u32>();
    if let Some((request, kind)) = &now.request {
        return asked(*request, kind.as_deref(), limits, &live, nodes);
    }
    let waiting = live
        .iter()
        .filter(|j| matches!(j.phase, Phase::Pending | Phase::Starting))
        .count() as u32;
    let mut room = Room {
        nodes: limits.max_nodes.saturating_sub(nodes),
        waiting: limits.max_pending.saturating_sub(waiting),
    };
    let mut actions = Vec::new();
    for t in &limits.types {
        let have = nodes_of(&t.name);
        if now.paused {
            break;
        }
        // The minimum is kept however many jobs wait: it is the user's floor.
        let below_min = t.min_workers.saturating_sub(have);
        let wanted = now.want.get(&t.name).copied().unwrap_or(0)
            + now.replacements.get(&t.name).copied().unwrap_or(0);
        let type_room = t.max_workers.map_or(u32::MAX, |m| m.saturating_sub(have));
        let jobs_for = |nodes: u32| nodes.div_ceil(t.nodes_per_job.max(1));
        let floor = jobs_for(below_min.min(type_room).min(room.nodes));
        let grow = jobs_for(wanted.saturating_sub(below_min))
            .min(type_room.saturating_sub(floor * t.nodes_per_job) / t.nodes_per_job.max(1))
            .min(room.nodes.saturating_sub(floor * t.nodes_per_job) / t.nodes_per_job.max(1))
            .min(room.waiting.saturating_sub(floor));
        let n = floor + grow;
        if n > 0 {
            actions.push(Action::Submit(t.name.clone(), n));
            room.nodes = room.nodes.saturating_sub(n * t.nodes_per_job);
            room.waiting = room.waiting.saturating_sub(n);
        }
    }
    let idle = idle_jobs(limits, &live, &nodes_of);
    if !idle.is_empty() {
        actions.insert(0, Action::Cancel(idle));
    }
    actions
}

/// Joined jobs idle past their type's timeout that the demand does not need, as long as their
/// type keeps its minimum.
fn idle_jobs(limits: &Limits, live: &[&JobView], nodes_of: &dyn Fn(&str) -> u32) -> Vec<String> {
    let mut out = Vec::new();
    for t in &limits.types {
        let mut spare = nodes_of(&t.name).saturating_sub(t.min_workers) / t.nodes_per_job.max(1);
        let mut idle: Vec<&&JobView> = live
            .iter()
            .filter(|j| {
                j.kind == t.name
                    && j.phase == Phase::Joined
                    && !j.needed
                    && j.idle_s.is_some_and(|s| s >= t.idle_timeout)
            })
            .collect();
        idle.sort_by_key(|j| std::cmp::Reverse(j.idle_s));
        for j in idle {
            if spare == 0 {
                break;
            }
            spare -= 1;
            out.push(j.id.clone());
        }
    }
    out
}

/// `rayslurm scale`: `+N` and `=N` grow the type named (else the first) within the limits;
/// `-N` gives back waiting jobs first (newest first), then joined ones, idlest first, of any type.
fn asked(
    request: ScaleRequest,
    kind: Option<&str>,
    limits: &Limits,
    live: &[&JobView],
    nodes: u32,
) -> Vec<Action> {
    let room = limits.max_nodes.saturating_sub(nodes);
    let remove = |n: u32| {
        let mut order: Vec<&&JobView> = live.iter().collect();
        order.sort_by_key(|j| {
            (
                j.phase == Phase::Joined,
                std::cmp::Reverse(j.idle_s.unwrap_or(0)),
            )
        });
        let waiting_newest_first = order
            .iter()
            .filter(|j| j.phase != Phase::Joined)
            .rev()
            .chain(order.iter().filter(|j| j.phase == Phase::Joined));
        let ids: Vec<String> = waiting_newest_first
            .take(n as usize)
            .map(|j| j.id.clone())
            .collect();
        if ids.is_empty() {
            Vec::new()
        } else {
            vec![Action::Cancel(ids)]
        }
    };
    let Some(t) = kind.map_or(limits.types.first(), |k| limits.of(k)) else {
        return Vec::new();
    };
    let have = live.iter().filter(|j| j.kind == t.name).count() as u32 * t.nodes_per_job;
    let type_room = t.max_workers.map_or(u32::MAX, |m| m.saturating_sub(have));
    let add = |n: u32| {
        let jobs = n.min(room).min(type_room) / t.nodes_per_job.max(1);
        if jobs == 0 {
            Vec::new()
        } else {
            vec![Action::Submit(t.name.clone(), jobs)]
        }
    };
    match request {
        ScaleRequest::Add(n) => add(n),
        ScaleRequest::Remove(n) => remove(n),
        ScaleRequest::To(total) => {
            let total = total.clamp(limits.head_nodes, limits.max_nodes);
            if total >= nodes {
                add(total - nodes)
            } else {
                remove(nodes - total)
            }
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
