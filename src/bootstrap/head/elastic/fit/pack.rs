//! Packing requests onto the cluster (Ray's `ScheduleContext` and `_try_schedule`): the nodes
//! there are first, then new ones of the best-scored type while there is room; placement
//! groups and the floor all or nothing on a copy; and what is left, said as infeasible or
//! waiting.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::super::ray_status::{Counted, Group, PlacementKind, Shape};
use super::node::{Req, Sim, Source, best};
use super::{Fit, NodeNow, ResourcesText, TypeShape, Unmet};

#[derive(Clone)]
pub(super) struct Ctx<'a> {
    types: &'a [TypeShape],
    nodes: Vec<Sim>,
    launched: BTreeMap<String, u32>,
    budget: u32,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(types: &'a [TypeShape], nodes: &[NodeNow], max_new_nodes: u32) -> Self {
        let unlearned = |name: &str| types.iter().any(|t| t.name == name && !t.learned());
        let nodes = nodes
            .iter()
            .map(|n| {
                let unknown = n.waiting && unlearned(&n.type_name);
                let res = (&n.available, &n.total);
                Sim::new(
                    Some(n.instance.clone()),
                    &n.type_name,
                    res,
                    &n.labels,
                    unknown,
                )
            })
            .collect();
        Self {
            types,
            nodes,
            launched: BTreeMap::new(),
            budget: max_new_nodes,
        }
    }

    pub(super) fn launched(&self) -> &BTreeMap<String, u32> {
        &self.launched
    }

    pub(super) fn used(&self) -> BTreeSet<String> {
        self.nodes
            .iter()
            .filter(|n| n.used())
            .filter_map(|n| n.instance.clone())
            .collect()
    }

    /// The `request_resources` floor, against nodes' totals: all of it, or none (Ray's
    /// `_enforce_resource_constraints`). Nodes it needs are launched and then take work too.
    pub(super) fn floor(&mut self, floor: &[Counted], out: &mut Fit) {
        if floor.is_empty() {
            return;
        }
        let reqs = expand(floor);
        let mut trial = self.clone();
        if trial.pack(reqs.clone(), Source::Floor).is_empty() {
            *self = trial;
        } else {
            let shapes: Vec<Shape> = floor.iter().map(|c| c.shape.clone()).collect();
            self.unmet(&shapes, &reqs, "request_resources", out);
        }
    }

    /// Placement groups, those with more constraints and more bundles first, each all or none
    /// (Ray's `_sched_gang_resource_requests`).
    pub(super) fn groups(&mut self, groups: &[Group], out: &mut Fit) {
        let weight = |g: &Group| {
            (
                g.bundles.iter().map(|b| b.constraints.len()).sum::<usize>(),
                g.bundles.len(),
            )
        };
        let mut sorted: Vec<&Group> = groups.iter().collect();
        sorted.sort_by_key(|g| std::cmp::Reverse(weight(g)));
        for g in sorted {
            let reqs = combine_affinity(&g.bundles);
            let mut trial = self.clone();
            if trial.pack(reqs.clone(), Source::Work).is_empty() {
                *self = trial;
            } else {
                let of = format!("placement group {} ({})", g.id, g.strategy);
                self.unmet(&g.bundles, &reqs, &of, out);
            }
        }
    }

    /// Tasks and actors, one request each (Ray's `_sched_resource_requests`): what is placed
    /// stays placed, the rest is reported.
    pub(super) fn tasks(&mut self, tasks: &[Counted], out: &mut Fit) {
        let left = self.pack(expand(tasks), Source::Work);
        let mut counts: BTreeMap<usize, u32> = BTreeMap::new();
        for r in &left {
            *counts.entry(r.key).or_default() += 1;
        }
        for (key, count) in counts {
            let Some(r) = left.iter().find(|r| r.key == key) else {
                continue;
            };
            let (why, feasible) = self.why(r);
            let unmet = Unmet {
                shape: tasks[key].shape.clone(),
                count,
                of: None,
                why,
            };
            if feasible {
                out.waiting.push(unmet)
            } else {
                out.infeasible.push(unmet)
            }
        }
    }

    /// A whole group (or the floor) not placed: infeasible if one of its requests is, else
    /// waiting; each distinct bundle shape reported with its count.
    fn unmet(&self, shapes: &[Shape], reqs: &[Rc<Req>], of: &str, out: &mut Fit) {
        let blocked = reqs.iter().map(|r| self.why(r)).find(|(_, ok)| !ok);
        let (why, feasible) = blocked.unwrap_or_else(|| self.why(&reqs[0]));
        let mut seen: Vec<(&Shape, u32)> = Vec::new();
        for s in shapes {
            match seen.iter_mut().find(|(x, _)| *x == s) {
                Some((_, n)) => *n += 1,
                None => seen.push((s, 1)),
            }
        }
        let list = if feasible {
            &mut out.waiting
        } else {
            &mut out.infeasible
        };
        for (shape, count) in seen {
            let of = Some(of.to_owned());
            list.push(Unmet {
                shape: shape.clone(),
                count,
                of,
                why: why.clone(),
            });
        }
    }

    /// Why `r` is left over, and whether anything could hold it at all (then it waits).
    fn why(&self, r: &Req) -> (String, bool) {
        let fresh: Vec<(&TypeShape, Sim)> = self.types.iter().map(|t| (t, new_node(t))).collect();
        let holders: Vec<&str> = fresh
            .iter()
            .filter(|(_, n)| n.could_hold(r))
            .map(|(t, _)| t.name.as_str())
            .collect();
        if !holders.is_empty() {
            let names = holders
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return (
                format!(
                    "waits for room: no more nodes of {names} now (its max_workers, or the cluster's max nodes)"
                ),
                true,
            );
        }
        if let Some(n) = self
            .nodes
            .iter()
            .find(|n| n.instance.is_some() && n.could_hold(r))
        {
            return (
                format!(
                    "waits for node `{}` ({}) to free up",
                    n.instance.as_deref().unwrap_or("?"),
                    n.type_name
                ),
                true,
            );
        }
        if fresh.is_empty() {
            return (
                "no worker type, and no node of the cluster can hold it".to_owned(),
                false,
            );
        }
        let labelled = fresh.iter().any(|(_, n)| n.labels_meet(r));
        if !labelled {
            return (
                "no worker type has the labels it asks for".to_owned(),
                false,
            );
        }
        // The type giving the most of what it asks for.
        let share = |t: &TypeShape| -> f64 {
            r.resources
                .iter()
                .filter(|(_, v)| **v > 0.0)
                .map(|(k, v)| (t.resources.get(k).copied().unwrap_or(0.0) / v).min(1.0))
                .sum()
        };
        let largest = self
            .types
            .iter()
            .max_by(|a, b| share(a).total_cmp(&share(b)))
            .map_or(String::new(), |t| {
                format!(
                    "; the largest for it, `{}`, has {}",
                    t.name,
                    ResourcesText(&t.resources)
                )
            });
        (format!("no worker type can hold it{largest}"), false)
    }

    /// Packs `reqs` (Ray's `_try_schedule`): on the nodes there are, best first, then on new
    /// ones of the best type while there is room; returns what is left.
    fn pack(&mut self, mut reqs: Vec<Rc<Req>>, source: Source) -> Vec<Rc<Req>> {
        reqs.sort_by(|a, b| Req::order(a, b));
        let mut existing = std::mem::take(&mut self.nodes);
        let mut done = Vec::new();
        while !reqs.is_empty() {
            let Some((node, left)) = best(&reqs, &mut existing, source) else {
                break;
            };
            done.push(node);
            reqs = left;
        }
        done.append(&mut existing);
        // A job of several nodes brings them all: the rest are tried before a new job.
        let mut siblings: Vec<Sim> = Vec::new();
        let mut pool: Vec<Sim> = self
            .types
            .iter()
            .filter(|t| self.can_grow(t))
            .map(new_node)
            .collect();
        while !reqs.is_empty() {
            if let Some((node, left)) = best(&reqs, &mut siblings, source) {
                done.push(node);
                reqs = left;
                continue;
            }
            pool.retain(|n| self.can_grow(self.type_of(&n.type_name)));
            let Some((node, left)) = best(&reqs, &mut pool, source) else {
                break;
            };
            let t = self.type_of(&node.type_name);
            let per = t.nodes_per_job.max(1);
            *self.launched.entry(t.name.clone()).or_default() += per;
            self.budget -= per;
            siblings.extend((1..per).map(|_| new_node(t)));
            if self.can_grow(t) {
                pool.push(new_node(t));
            }
            done.push(node);
            reqs = left;
        }
        done.append(&mut siblings);
        self.nodes = done;
        reqs
    }

    /// Whether another job of `t` may come: its nodes within its room and the budget.
    fn can_grow(&self, t: &TypeShape) -> bool {
        let used = self.launched.get(&t.name).copied().unwrap_or(0);
        t.room.saturating_sub(used).min(self.budget) >= t.nodes_per_job.max(1)
    }

    fn type_of(&self, name: &str) -> &'a TypeShape {
        self.types
            .iter()
            .find(|t| t.name == name)
            .unwrap_or(&self.types[0])
    }
}

fn new_node(t: &TypeShape) -> Sim {
    Sim::new(
        None,
        &t.name,
        (&t.resources, &t.resources),
        &t.labels,
        !t.learned(),
    )
}

fn req(key: usize, s: &Shape) -> Req {
    let anti = s
        .constraints
        .iter()
        .filter(|c| c.kind == PlacementKind::AntiAffinity)
        .map(|c| (c.label.clone(), c.value.clone()))
        .collect();
    Req {
        key,
        resources: s.resources.clone(),
        selectors: s.selectors.clone(),
        anti,
        constraints: s.constraints.len(),
    }
}

/// One request for each of `count`, keyed by the shape's place in the list.
fn expand(counted: &[Counted]) -> Vec<Rc<Req>> {
    counted
        .iter()
        .enumerate()
        .flat_map(|(key, c)| {
            let r = Rc::new(req(key, &c.shape));
            std::iter::repeat_n(r, c.count as usize)
        })
        .collect()
}

/// A group's bundles as requests, those with the same affinity (STRICT_PACK) and selectors
/// summed into one (Ray's `combine_requests_with_affinity`).
fn combine_affinity(bundles: &[Shape]) -> Vec<Rc<Req>> {
    let mut out = Vec::new();
    let mut packs: Vec<((&str, &str), Req)> = Vec::new();
    for (key, b) in bundles.iter().enumerate() {
        let affinity = b
            .constraints
            .iter()
            .find(|c| c.kind == PlacementKind::Affinity);
        let Some(a) = affinity else {
            out.push(Rc::new(req(key, b)));
            continue;
        };
        let label = (a.label.as_str(), a.value.as_str());
        match packs
            .iter_mut()
            .find(|(l, p)| *l == label && p.selectors == b.selectors)
        {
            Some((_, p)) => {
                for (k, v) in &b.resources {
                    *p.resources.entry(k.clone()).or_default() += v;
                }
            }
            None => {
                let mut p = req(bundles.len() + packs.len(), b);
                p.constraints = 1;
                packs.push((label, p));
            }
        }
    }
    out.extend(packs.into_iter().map(|(_, p)| Rc::new(p)));
    out
}
