//! One node as packing sees it (Ray's `SchedulingNode`): what is left on it for each source of
//! requests, what was put there, its labels; whether a request fits, and Ray's score of a node
//! for what it took.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::rc::Rc;

use super::super::ray_status::{LabelOp, LabelTerm, Labels, Resources};

/// Resources every node has one of without saying (`node:__internal_implicit_resource_*`).
const IMPLICIT: &str = "node:__internal_implicit_resource_";
/// What a node of a type not learned yet may have any amount of.
const UNKNOWN_UNTIL_LEARNED: [&str; 2] = ["memory", "object_store_memory"];

/// Where a request comes from: work (packed against what is available), or the
/// `request_resources` floor (against totals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    Work = 0,
    Floor = 1,
}

/// One request to place: a task, an actor, a bundle (STRICT_PACK's summed), or a part of the floor.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Req {
    /// Which shape of the caller's list it is (equal keys: equal requests).
    pub(super) key: usize,
    pub(super) resources: Resources,
    pub(super) selectors: Vec<Vec<LabelTerm>>,
    /// Labels (name, value) no other node holding one of its group's bundles may have.
    pub(super) anti: Vec<(String, String)>,
    /// How many placement constraints it has (Ray sorts on it).
    pub(super) constraints: usize,
}

impl Req {
    /// Ray's packing order, the larger first: constraints, terms of the first selector,
    /// resource kinds, their sum, then the resources themselves.
    pub(super) fn order(a: &Self, b: &Self) -> Ordering {
        let terms = |r: &Self| r.selectors.first().map_or(0, Vec::len);
        let sum = |r: &Self| r.resources.values().sum::<f64>();
        let items = |x: &Self, y: &Self| {
            for ((ka, va), (kb, vb)) in x.resources.iter().zip(&y.resources) {
                let o = ka
                    .cmp(kb)
                    .then(va.partial_cmp(vb).unwrap_or(Ordering::Equal));
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.resources.len().cmp(&y.resources.len())
        };
        (b.constraints, terms(b), b.resources.len())
            .cmp(&(a.constraints, terms(a), a.resources.len()))
            .then(sum(b).partial_cmp(&sum(a)).unwrap_or(Ordering::Equal))
            .then_with(|| items(b, a))
    }
}

/// Ray's score of a node for what was put on it: label selectors met (the earlier the
/// better), not a GPU node for work without GPUs, resource kinds used, then the lowest and
/// the mean utilisation (each weighted by the amount, cubed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Score(i64, bool, usize, f64, f64);

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(
            (self.0, self.1, self.2)
                .cmp(&(other.0, other.1, other.2))
                .then(self.3.partial_cmp(&other.3).unwrap_or(Ordering::Equal))
                .then(self.4.partial_cmp(&other.4).unwrap_or(Ordering::Equal)),
        )
    }
}

#[derive(Debug, Clone)]
pub(super) struct Sim {
    /// Its job id (`head`), or none for a node this fit adds.
    pub(super) instance: Option<String>,
    pub(super) type_name: String,
    total: Resources,
    /// What is left for each [`Source`].
    left: [Resources; 2],
    /// What was put on it, by [`Source`].
    placed: [Vec<Rc<Req>>; 2],
    labels: Labels,
    /// Its type was not learned yet: `memory` and `object_store_memory` are unknown.
    unknown_memory: bool,
}

impl Sim {
    pub(super) fn new(
        instance: Option<String>,
        type_name: &str,
        (available, total): (&Resources, &Resources),
        labels: &Labels,
        unknown_memory: bool,
    ) -> Self {
        Self {
            instance,
            type_name: type_name.to_owned(),
            total: total.clone(),
            left: [available.clone(), total.clone()],
            placed: [Vec::new(), Vec::new()],
            labels: labels.clone(),
            unknown_memory,
        }
    }

    /// Whether anything (work or floor) was put on it.
    pub(super) fn used(&self) -> bool {
        self.placed.iter().any(|p| !p.is_empty())
    }

    /// Whether `req` could ever be held by this node, were it empty (anti-affinity aside).
    pub(super) fn could_hold(&self, req: &Req) -> bool {
        let labels_ok = req.selectors.is_empty() || selected(&self.labels, &[req]) > 0;
        labels_ok && self.fits(&self.total, &req.resources)
    }

    /// Whether the node's labels meet `req`'s selectors.
    pub(super) fn labels_meet(&self, req: &Req) -> bool {
        req.selectors.is_empty() || selected(&self.labels, &[req]) > 0
    }

    fn fits(&self, have: &Resources, want: &Resources) -> bool {
        want.iter().all(|(k, v)| *v <= self.amount(have, k))
    }

    fn amount(&self, have: &Resources, key: &str) -> f64 {
        match have.get(key) {
            Some(v) => *v,
            None if key.starts_with(IMPLICIT) => 1.0,
            None if self.unknown_memory && UNKNOWN_UNTIL_LEARNED.contains(&key) => f64::INFINITY,
            None => 0.0,
        }
    }

    /// Puts `req` on the node if it fits there (Ray's `_try_schedule_one`).
    fn take(&mut self, req: &Rc<Req>, source: Source) -> bool {
        if !self.labels_meet(req) {
            return false;
        }
        if req.anti.iter().any(|(l, v)| self.labels.get(l) == Some(v)) {
            return false;
        }
        let s = source as usize;
        if !self.fits(&self.left[s], &req.resources) {
            return false;
        }
        for (k, v) in &req.resources {
            if *v == 0.0 {
                continue;
            }
            let now = self.amount(&self.left[s], k);
            if now.is_finite() {
                self.left[s].insert(k.clone(), now - v);
            }
        }
        self.placed[s].push(Rc::clone(req));
        for (l, v) in &req.anti {
            self.labels.insert(l.clone(), v.clone());
        }
        true
    }

    /// Puts as many of `reqs` on the node as fit, in order, none taken back (Ray's
    /// `try_schedule`); returns those left and the node's score.
    pub(super) fn try_all(&mut self, reqs: &[Rc<Req>], source: Source) -> (Vec<Rc<Req>>, Score) {
        let mut left = Vec::new();
        let mut failed = BTreeSet::new();
        for r in reqs {
            if failed.contains(&r.key) {
                left.push(Rc::clone(r));
                continue;
            }
            let labels = self.labels.len();
            if self.take(r, source) {
                if self.labels.len() > labels {
                    failed.clear();
                }
            } else {
                failed.insert(r.key);
                left.push(Rc::clone(r));
            }
        }
        (left, self.score(source))
    }

    fn score(&self, source: Source) -> Score {
        let placed = &self.placed[source as usize];
        let left = &self.left[source as usize];
        let kinds: BTreeSet<&String> = placed
            .iter()
            .flat_map(|r| {
                r.resources
                    .iter()
                    .filter(|(_, v)| **v > 0.0)
                    .map(|(k, _)| k)
            })
            .collect();
        let matching = kinds
            .iter()
            .filter(|k| self.total.contains_key(**k))
            .count();
        let utils: Vec<f64> = self
            .total
            .iter()
            .filter(|(_, v)| **v != 0.0)
            .filter_map(|(k, v)| left.get(k).map(|a| v * ((v - a) / v).powi(3)))
            .collect();
        let gpu_node = self.total.get("GPU").is_some_and(|g| *g > 0.0);
        let gpu_ok = !gpu_node || placed.iter().any(|r| r.resources.contains_key("GPU"));
        let refs: Vec<&Req> = placed.iter().map(AsRef::as_ref).collect();
        let min = utils.iter().copied().reduce(f64::min).unwrap_or(0.0);
        let mean = if utils.is_empty() {
            0.0
        } else {
            utils.iter().sum::<f64>() / utils.len() as f64
        };
        Score(selected(&self.labels, &refs), gpu_ok, matching, min, mean)
    }
}

/// How well `labels` meet the selectors of the first of `reqs` with one met: the number of
/// its selectors less the met one's place (the first counts most), 0 if none is met.
fn selected(labels: &Labels, reqs: &[&Req]) -> i64 {
    for r in reqs {
        let n = r.selectors.len() as i64;
        if let Some(i) = r
            .selectors
            .iter()
            .position(|s| s.iter().all(|t| meets(labels, t)))
        {
            return n - i as i64;
        }
    }
    0
}

fn meets(labels: &Labels, term: &LabelTerm) -> bool {
    let has = labels
        .get(&term.key)
        .is_some_and(|v| term.values.contains(v));
    match term.op {
        LabelOp::In => has,
        LabelOp::NotIn => !has,
        LabelOp::Unknown => false,
    }
}

/// Of `nodes`, the one that takes the most of `reqs` by Ray's score (the first on a tie),
/// taken out of `nodes`, with what it took and the requests left (Ray's `_sched_best_node`).
pub(super) fn best(
    reqs: &[Rc<Req>],
    nodes: &mut Vec<Sim>,
    source: Source,
) -> Option<(Sim, Vec<Rc<Req>>)> {
    let mut top: Option<(usize, Sim, Vec<Rc<Req>>, Score)> = None;
    for (i, node) in nodes.iter().enumerate() {
        let mut trial = node.clone();
        let (left, score) = trial.try_all(reqs, source);
        if left.len() == reqs.len() {
            continue;
        }
        if top.as_ref().is_none_or(|(_, _, _, s)| score > *s) {
            top = Some((i, trial, left, score));
        }
    }
    let (i, sim, left, _) = top?;
    nodes.remove(i);
    Some((sim, left))
}
