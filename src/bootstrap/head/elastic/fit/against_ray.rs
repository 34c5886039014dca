//! [`fit`] against Ray's own scheduler: random scenarios (worker types with labels and room,
//! tasks with label selectors, placement groups of every strategy, a budget of new nodes) are
//! given to both, Ray's being its autoscaler v2's `ResourceDemandScheduler` in the lab's Ray
//! venv (`against_ray.py`); the nodes launched by type and the tasks and groups left must agree.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::super::ray_status::{
    Counted, Demand, Group, LabelOp, LabelTerm, Labels, Placement, PlacementKind, Resources, Shape,
};
use super::*;
use crate::sys::test_skip;

const SCRIPT: &str = include_str!("against_ray.py");
const SCENARIOS: usize = 300;

/// A small seeded generator: the same scenarios every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }

    /// Some of `keys` (at least the last), each with one of `amounts`.
    fn resources(&mut self, keys: &[&str], amounts: &[f64]) -> Resources {
        let mut out = Resources::new();
        for (i, k) in keys.iter().enumerate() {
            if self.below(2) == 0 || (out.is_empty() && i == keys.len() - 1) {
                out.insert((*k).to_owned(), self.pick(amounts));
            }
        }
        out
    }

    fn selectors(&mut self) -> Vec<Vec<LabelTerm>> {
        let term = |op| LabelTerm {
            key: MARKET_TYPE.into(),
            op,
            values: vec!["on-demand".into()],
        };
        match self.below(4) {
            0 => vec![vec![term(LabelOp::In)]],
            1 => vec![vec![term(LabelOp::NotIn)]],
            _ => vec![vec![]],
        }
    }

    fn scenario(&mut self) -> (Vec<TypeShape>, Demand, u32) {
        let types = (0..1 + self.below(3))
            .map(|i| {
                let mut res = self.resources(&["CPU", "GPU", "accel"], &[1.0, 2.0, 4.0, 8.0]);
                res.entry("CPU".into()).or_insert(2.0);
                let spot = self.below(3) == 0;
                let mut t = TypeShape::new(&format!("t{i}"), 0.0, 0.0, &res)
                    .with_labels(&Labels::new(), spot);
                t.room = self.below(5) as u32;
                t
            })
            .collect();
        let tasks = (0..self.below(4))
            .map(|_| {
                let resources = self.resources(&["CPU", "GPU", "accel"], &[0.5, 1.0, 2.0, 3.0]);
                let shape = Shape {
                    resources,
                    selectors: self.selectors(),
                    constraints: vec![],
                };
                Counted {
                    shape,
                    count: 1 + self.below(6) as u32,
                }
            })
            .collect();
        let groups = (0..self.below(3))
            .map(|g| self.group(&format!("g{g}")))
            .collect();
        (
            types,
            Demand {
                tasks,
                groups,
                floor: vec![],
            },
            1 + self.below(8) as u32,
        )
    }

    fn group(&mut self, id: &str) -> Group {
        let strategy = self.pick(&["STRICT_PACK", "STRICT_SPREAD", "PACK"]);
        let kind = match strategy {
            "STRICT_PACK" => Some(PlacementKind::Affinity),
            "STRICT_SPREAD" => Some(PlacementKind::AntiAffinity),
            _ => None,
        };
        let constraint = kind.map(|kind| Placement {
            kind,
            label: format!("_PG_{id}"),
            value: String::new(),
        });
        let bundles = (0..1 + self.below(3))
            .map(|_| Shape {
                resources: self.resources(&["CPU", "GPU"], &[1.0, 2.0]),
                selectors: vec![vec![]],
                constraints: constraint.iter().cloned().collect(),
            })
            .collect();
        Group {
            id: id.into(),
            strategy: strategy.into(),
            state: "PENDING".into(),
            bundles,
        }
    }
}

fn shape_json(s: &Shape) -> Value {
    let op = |t: &LabelTerm| if t.op == LabelOp::In { "in" } else { "not_in" };
    let term = |t: &LabelTerm| json!({"key": t.key, "op": op(t), "values": t.values});
    let kind = |c: &Placement| {
        if c.kind == PlacementKind::Affinity {
            "affinity"
        } else {
            "anti_affinity"
        }
    };
    json!({
        "resources": s.resources,
        "selectors": s.selectors.iter().map(|sel| sel.iter().map(term).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "constraints": s.constraints.iter().map(|c| json!({"kind": kind(c), "label": c.label})).collect::<Vec<_>>(),
    })
}

fn scenario_json(types: &[TypeShape], d: &Demand, budget: u32) -> Value {
    json!({
        "types": types.iter().map(|t| json!({"name": t.name, "resources": t.resources, "labels": t.labels, "room": t.room})).collect::<Vec<_>>(),
        "tasks": d.tasks.iter().map(|c| json!({"shape": shape_json(&c.shape), "count": c.count})).collect::<Vec<_>>(),
        "groups": d.groups.iter().map(|g| json!({"id": g.id, "strategy": g.strategy, "bundles": g.bundles.iter().map(shape_json).collect::<Vec<_>>()})).collect::<Vec<_>>(),
        "budget": budget,
    })
}

/// What `fit` chose, in the terms Ray's answer has.
fn ours(f: &Fit) -> Value {
    let unmet = || f.infeasible.iter().chain(&f.waiting);
    let tasks: u32 = unmet().filter(|u| u.of.is_none()).map(|u| u.count).sum();
    let groups: BTreeSet<&String> = unmet().filter_map(|u| u.of.as_ref()).collect();
    json!({"launch": f.launch, "tasks_left": tasks, "groups_left": groups.len()})
}

#[test]
fn fit_chooses_the_nodes_ray_s_own_scheduler_chooses() {
    let venv =
        std::env::var("RAYSLURM_LAB_VENV").unwrap_or_else(|_| "/opt/rayslurm-lab/venv".into());
    let python = std::path::Path::new(&venv).join("bin/python");
    if !python.exists() {
        let why = format!("no Ray venv at {venv} (tests/cluster/cluster.sh up makes it)");
        test_skip::skip(&test_skip::this_test(), &why, None);
        return;
    }
    let mut seeded = Lcg(38);
    let cases: Vec<(Value, Value)> = (0..SCENARIOS)
        .map(|_| {
            let (types, demand, budget) = seeded.scenario();
            (
                scenario_json(&types, &demand, budget),
                ours(&fit(&types, &[], &demand, budget)),
            )
        })
        .collect();
    let mut child = Command::new(&python)
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = cases.iter().map(|(s, _)| format!("{s}\n")).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{python:?}: {:?}", out.status);
    let theirs: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(theirs.len(), cases.len());
    let differ: Vec<String> = cases
        .iter()
        .zip(&theirs)
        .filter(|((_, o), t)| o != *t)
        .map(|((s, o), t)| format!("scenario {s}\n  fit: {o}\n  Ray: {t}"))
        .collect();
    // Ray launched something in a fair share of them, so this compares choices, not nothing.
    let grown = theirs
        .iter()
        .filter(|t| t["launch"].as_object().is_some_and(|m| !m.is_empty()))
        .count();
    assert!(grown > SCENARIOS / 4, "{grown} of {SCENARIOS}");
    assert!(
        differ.is_empty(),
        "{} of {SCENARIOS} differ:\n{}",
        differ.len(),
        differ[..differ.len().min(3)].join("\n")
    );
}
