//! Ray's choice of worker types, case by case.

use super::super::ray_status::{
    Counted, Demand, Group, LabelOp, LabelTerm, Labels, Placement, PlacementKind, Report,
    Resources, Shape,
};
use super::*;

fn res(pairs: &[(&str, f64)]) -> Resources {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

fn shape(pairs: &[(&str, f64)]) -> Shape {
    Shape {
        resources: res(pairs),
        selectors: vec![vec![]],
        constraints: vec![],
    }
}

fn tasks(list: &[(&[(&str, f64)], u32)]) -> Demand {
    let tasks = list
        .iter()
        .map(|(r, count)| Counted {
            shape: shape(r),
            count: *count,
        })
        .collect();
    Demand {
        tasks,
        ..Demand::default()
    }
}

fn ty(name: &str, cpus: f64, gpus: f64, room: u32) -> TypeShape {
    let mut t =
        TypeShape::new(name, cpus, gpus, &Resources::new()).with_labels(&Labels::new(), false);
    t.room = room;
    t
}

/// The head: 2 CPUs, all taken.
fn busy_head() -> NodeNow {
    NodeNow {
        instance: "head".into(),
        type_name: "head".into(),
        available: res(&[("CPU", 0.0)]),
        total: res(&[("CPU", 2.0)]),
        labels: Labels::new(),
        waiting: false,
    }
}

fn launch(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

/// A placement group of `n` bundles `bundle`.
fn group(id: &str, strategy: &str, kind: PlacementKind, bundle: &[(&str, f64)], n: usize) -> Group {
    let c = Placement {
        kind,
        label: format!("_PG_{id}"),
        value: String::new(),
    };
    let bundles = vec![
        Shape {
            constraints: vec![c],
            ..shape(bundle)
        };
        n
    ];
    Group {
        id: id.into(),
        strategy: strategy.into(),
        state: "PENDING".into(),
        bundles,
    }
}

#[test]
fn a_gpu_task_grows_only_the_gpu_type_and_cpu_work_only_the_cpu_type() {
    let types = [ty("gpu", 8.0, 4.0, 5), ty("cpu", 8.0, 0.0, 5)];
    let gpu = fit(
        &types,
        &[busy_head()],
        &tasks(&[(&[("CPU", 1.0), ("GPU", 1.0)], 1)]),
        10,
    );
    assert_eq!(gpu.launch, launch(&[("gpu", 1)]));
    // CPU work fits either type; Ray keeps GPU nodes for GPU work.
    let cpu = fit(&types, &[busy_head()], &tasks(&[(&[("CPU", 1.0)], 3)]), 10);
    assert_eq!(cpu.launch, launch(&[("cpu", 1)]));
    // Two types equal by every other measure (each has a resource the work leaves unused):
    // not the GPU one, though it comes first.
    let mut disk = ty("cpu", 4.0, 0.0, 5);
    disk.resources.insert("disk".into(), 1.0);
    let even = [ty("gpu", 4.0, 1.0, 5), disk];
    let cpu = fit(&even, &[busy_head()], &tasks(&[(&[("CPU", 1.0)], 4)]), 10);
    assert_eq!(cpu.launch, launch(&[("cpu", 1)]));
    // A GPU node grown for GPU work takes CPU work beside it; the rest goes to a CPU node.
    let both = fit(
        &types,
        &[busy_head()],
        &tasks(&[(&[("CPU", 1.0)], 9), (&[("GPU", 2.0)], 2)]),
        10,
    );
    assert_eq!(both.launch, launch(&[("gpu", 1), ("cpu", 1)]));
    assert!(
        both.waiting.is_empty() && both.infeasible.is_empty(),
        "{both:?}"
    );
}

#[test]
fn demand_that_fits_an_idle_node_grows_nothing_and_marks_it_used() {
    let types = [ty("cpu", 4.0, 0.0, 5)];
    let idle = NodeNow {
        instance: "101".into(),
        type_name: "cpu".into(),
        available: res(&[("CPU", 4.0)]),
        total: res(&[("CPU", 4.0)]),
        labels: types[0].labels.clone(),
        waiting: false,
    };
    let other = NodeNow {
        instance: "102".into(),
        ..idle.clone()
    };
    let f = fit(
        &types,
        &[busy_head(), idle, other],
        &tasks(&[(&[("CPU", 1.0)], 3)]),
        10,
    );
    assert!(f.launch.is_empty(), "{f:?}");
    assert_eq!(f.used, BTreeSet::from(["101".to_owned()]));
}

#[test]
fn a_waiting_job_absorbs_demand_so_a_second_look_submits_nothing() {
    let types = [ty("cpu", 4.0, 0.0, 5)];
    let demand = tasks(&[(&[("CPU", 2.0)], 2)]);
    let first = fit(&types, &[busy_head()], &demand, 10);
    assert_eq!(first.launch, launch(&[("cpu", 1)]));
    // A second later: the job is submitted, Ray still reports the same demand.
    let mut nodes = vec![busy_head()];
    nodes.extend(NodeNow::waiting("201", &types[0]));
    let mut types = types;
    types[0].room -= 1;
    let second = fit(&types, &nodes, &demand, 9);
    assert!(second.launch.is_empty(), "{second:?}");
    assert_eq!(second.used, BTreeSet::from(["201".to_owned()]));
}

#[test]
fn a_strict_spread_group_larger_than_the_room_waits_whole_and_launches_nothing() {
    let types = [ty("cpu", 2.0, 0.0, 2)];
    let g = group(
        "aa",
        "STRICT_SPREAD",
        PlacementKind::AntiAffinity,
        &[("CPU", 1.0)],
        3,
    );
    let demand = Demand {
        groups: vec![g],
        ..Demand::default()
    };
    let f = fit(&types, &[busy_head()], &demand, 10);
    assert!(f.launch.is_empty(), "{f:?}");
    assert!(f.infeasible.is_empty(), "{f:?}");
    let [w] = &f.waiting[..] else { panic!("{f:?}") };
    assert_eq!(
        (w.count, w.of.as_deref()),
        (3, Some("placement group aa (STRICT_SPREAD)"))
    );
    assert!(w.why.contains("waits for room"), "{w}");
    // With room for 3, one node each.
    let types = [ty("cpu", 2.0, 0.0, 3)];
    assert_eq!(
        fit(&types, &[busy_head()], &demand, 10).launch,
        launch(&[("cpu", 3)])
    );
}

#[test]
fn a_strict_pack_group_is_summed_onto_one_node() {
    let types = [ty("small", 2.0, 0.0, 5), ty("big", 8.0, 0.0, 5)];
    let g = group(
        "bb",
        "STRICT_PACK",
        PlacementKind::Affinity,
        &[("CPU", 2.0)],
        3,
    );
    let demand = Demand {
        groups: vec![g.clone()],
        ..Demand::default()
    };
    assert_eq!(
        fit(&types, &[busy_head()], &demand, 10).launch,
        launch(&[("big", 1)])
    );
    // With small nodes only, summed it fits none; without the affinity (PACK) it takes three.
    let f = fit(&types[..1], &[busy_head()], &demand, 10);
    assert!(f.launch.is_empty() && f.infeasible.len() == 1, "{f:?}");
    let mut pack = g;
    pack.bundles.iter_mut().for_each(|b| b.constraints.clear());
    let demand = Demand {
        groups: vec![pack],
        ..Demand::default()
    };
    assert_eq!(
        fit(&types[..1], &[busy_head()], &demand, 10).launch,
        launch(&[("small", 3)])
    );
    // Too big for any one node: infeasible, naming the largest type.
    let huge = group(
        "cc",
        "STRICT_PACK",
        PlacementKind::Affinity,
        &[("CPU", 6.0)],
        2,
    );
    let f = fit(
        &types,
        &[busy_head()],
        &Demand {
            groups: vec![huge],
            ..Demand::default()
        },
        10,
    );
    assert!(f.launch.is_empty());
    assert!(f.infeasible[0].why.contains("`big`"), "{:?}", f.infeasible);
}

#[test]
fn an_on_demand_selector_never_picks_a_spot_type() {
    let mut spot =
        TypeShape::new("spot", 4.0, 0.0, &Resources::new()).with_labels(&Labels::new(), true);
    spot.room = 5;
    let types = [spot.clone(), ty("steady", 4.0, 0.0, 5)];
    let mut d = tasks(&[(&[("CPU", 1.0)], 1)]);
    d.tasks[0].shape.selectors = vec![vec![LabelTerm {
        key: MARKET_TYPE.into(),
        op: LabelOp::In,
        values: vec!["on-demand".into()],
    }]];
    assert_eq!(
        fit(&types, &[busy_head()], &d, 10).launch,
        launch(&[("steady", 1)])
    );
    // With only the spot type, it is never launched: no type has the labels.
    let f = fit(&[spot], &[busy_head()], &d, 10);
    assert!(f.launch.is_empty());
    assert!(f.infeasible[0].why.contains("labels"), "{:?}", f.infeasible);
}

#[test]
fn a_shape_no_type_can_hold_is_infeasible_with_the_largest_type_named() {
    let types = [ty("cpu", 8.0, 0.0, 5), ty("gpu", 8.0, 4.0, 5)];
    let f = fit(
        &types,
        &[busy_head()],
        &tasks(&[(&[("GPU", 8.0)], 3), (&[("CPU", 1.0)], 1)]),
        10,
    );
    assert_eq!(f.launch, launch(&[("cpu", 1)]));
    let [bad] = &f.infeasible[..] else {
        panic!("{f:?}")
    };
    assert_eq!(bad.count, 3);
    assert_eq!(
        bad.to_string(),
        "`{GPU: 8}` × 3: no worker type can hold it; the largest for it, `gpu`, has {CPU: 8, GPU: 4}"
    );
}

#[test]
fn max_new_nodes_and_each_type_s_room_are_kept() {
    // Ray's score prefers the bigger node ("big"), which has room for one; then "cpu", room 2.
    let types = [ty("cpu", 2.0, 0.0, 2), ty("big", 4.0, 0.0, 1)];
    let d = tasks(&[(&[("CPU", 2.0)], 10)]);
    let f = fit(&types, &[busy_head()], &d, 10);
    assert_eq!(f.launch, launch(&[("big", 1), ("cpu", 2)]));
    let [w] = &f.waiting[..] else { panic!("{f:?}") };
    assert_eq!(w.count, 6);
    assert!(w.why.contains("`cpu`, `big`"), "{w}");
    assert_eq!(
        fit(&types, &[busy_head()], &d, 2).launch,
        launch(&[("big", 1), ("cpu", 1)])
    );
    assert_eq!(fit(&types, &[busy_head()], &d, 0).launch, BTreeMap::new());
}

#[test]
fn a_job_of_several_nodes_brings_them_all_and_is_counted_in_nodes() {
    let mut t = ty("pair", 2.0, 0.0, 4);
    t.nodes_per_job = 2;
    let types = [t];
    let f = fit(&types, &[busy_head()], &tasks(&[(&[("CPU", 2.0)], 3)]), 10);
    // Two jobs: the first's second node takes the second task.
    assert_eq!(f.launch, launch(&[("pair", 4)]));
    assert!(f.waiting.is_empty(), "{f:?}");
    // A budget of 3 nodes: one job of 2.
    assert_eq!(
        fit(&types, &[busy_head()], &tasks(&[(&[("CPU", 2.0)], 3)]), 3).launch,
        launch(&[("pair", 2)])
    );
}

#[test]
fn the_request_resources_floor_is_packed_against_totals_and_keeps_its_nodes() {
    let types = [ty("cpu", 2.0, 0.0, 5)];
    let worker = NodeNow {
        instance: "301".into(),
        type_name: "cpu".into(),
        available: res(&[("CPU", 2.0)]),
        total: res(&[("CPU", 2.0)]),
        labels: types[0].labels.clone(),
        waiting: false,
    };
    let floor = vec![Counted {
        shape: shape(&[("CPU", 1.0)]),
        count: 6,
    }];
    let demand = Demand {
        floor,
        ..Demand::default()
    };
    // 6 CPUs: the head's 2 (busy: totals count), the worker's 2, one new node.
    let f = fit(&types, &[busy_head(), worker], &demand, 10);
    assert_eq!(f.launch, launch(&[("cpu", 1)]));
    assert_eq!(
        f.used,
        BTreeSet::from(["head".to_owned(), "301".to_owned()])
    );
    // Past the room: none of it, and it waits.
    let mut small = types.clone();
    small[0].room = 0;
    let none = fit(&small, &[busy_head()], &demand, 10);
    assert!(none.launch.is_empty());
    assert_eq!(none.waiting[0].of.as_deref(), Some("request_resources"));
}

#[test]
fn a_type_learns_its_totals_from_a_joined_node() {
    let mut t = ty("cpu", 2.0, 0.0, 5);
    let d = tasks(&[(&[("CPU", 1.0), ("memory", 4e9)], 2)]);
    // Memory unknown before a node joined: taken to fit.
    assert_eq!(
        fit(&[t.clone()], &[busy_head()], &d, 10).launch,
        launch(&[("cpu", 1)])
    );
    let total = res(&[("CPU", 4.0), ("memory", 6e9), ("node:10.0.0.1", 1.0)]);
    assert!(t.learn(&total));
    assert!(!t.learn(&total));
    assert_eq!(t.resources, res(&[("CPU", 4.0), ("memory", 6e9)]));
    // Learned: one task a node, for memory.
    assert_eq!(
        fit(&[t.clone()], &[busy_head()], &d, 10).launch,
        launch(&[("cpu", 2)])
    );
    t.learn(&res(&[("CPU", 4.0), ("memory", 2e9)]));
    let f = fit(&[t], &[busy_head()], &d, 10);
    assert!(f.launch.is_empty() && f.infeasible.len() == 1, "{f:?}");
}

#[test]
fn ray_s_own_report_fits_onto_typed_workers() {
    // The lab's line: an actor of {accel: 2}, a task for on-demand nodes, a STRICT_PACK
    // group of 2 {CPU: 1, accel: 1}, the floor of 6 CPUs and {GPU: 2}.
    let r: Report = serde_json::from_str(include_str!("../fixtures/ray_state_typed.json")).unwrap();
    let nodes: Vec<NodeNow> = r.nodes.iter().filter_map(NodeNow::joined).collect();
    assert_eq!(nodes.len(), 3);
    assert!(
        nodes
            .iter()
            .any(|n| n.instance == "head" && n.type_name == "head")
    );
    assert!(
        nodes
            .iter()
            .any(|n| n.instance == "6" && n.type_name == "gpu")
    );
    let accel = res(&[("accel", 2.0)]);
    let mut types = [
        TypeShape::new("accel", 2.0, 0.0, &accel).with_labels(&Labels::new(), false),
        TypeShape::new("gpu", 2.0, 4.0, &Resources::new()).with_labels(&Labels::new(), true),
    ];
    types.iter_mut().for_each(|t| t.room = 3);
    let f = fit(&types, &nodes, &r.demand, 10);
    // One accel node holds the whole STRICT_PACK group; another the actor and the
    // on-demand task (and the floor's spare CPUs); the floor's GPUs fit the spot GPU node.
    assert_eq!(f.launch, launch(&[("accel", 2)]), "{f:?}");
    assert!(f.used.contains("6"), "{f:?}");
    assert!(f.infeasible.is_empty() && f.waiting.is_empty(), "{f:?}");
}
