use super::*;

fn kind(name: &str, min: u32, max: Option<u32>, idle: u64) -> TypeLimits {
    TypeLimits {
        name: name.into(),
        nodes_per_job: 1,
        min_workers: min,
        max_workers: max,
        idle_timeout: idle,
    }
}

fn limits(max_nodes: u32, types: Vec<TypeLimits>) -> Limits {
    Limits {
        max_nodes,
        head_nodes: 1,
        max_pending: 2,
        types,
    }
}

fn job(id: &str, kind: &str, phase: Phase, idle_s: Option<u64>) -> JobView {
    JobView {
        id: id.into(),
        kind: kind.into(),
        phase,
        idle_s,
        needed: false,
    }
}

fn want(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
    pairs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
}

#[test]
fn each_type_grows_by_what_the_demand_needs_of_it_within_the_limits() {
    let l = limits(
        8,
        vec![kind("cpu", 0, Some(4), 60), kind("gpu", 0, Some(1), 60)],
    );
    let mut now = Inputs {
        want: want(&[("gpu", 3)]),
        ..Inputs::default()
    };
    assert_eq!(
        plan(&l, &now),
        [Action::Submit("gpu".into(), 1)],
        "gpu's most is 1"
    );
    now.want = want(&[("cpu", 5), ("gpu", 0)]);
    assert_eq!(
        plan(&l, &now),
        [Action::Submit("cpu".into(), 2)],
        "at most 2 jobs wait at once"
    );
    now.jobs = vec![job("9", "cpu", Phase::Pending, None)];
    assert_eq!(plan(&l, &now), [Action::Submit("cpu".into(), 1)]);
    now.paused = true;
    assert_eq!(plan(&l, &now), [], "paused");
}

#[test]
fn the_cluster_most_counts_every_types_nodes() {
    let l = limits(3, vec![kind("cpu", 0, None, 60), kind("gpu", 0, None, 60)]);
    let now = Inputs {
        jobs: vec![job("9", "gpu", Phase::Joined, Some(0))],
        want: want(&[("cpu", 4)]),
        ..Inputs::default()
    };
    assert_eq!(plan(&l, &now), [Action::Submit("cpu".into(), 1)]);
}

#[test]
fn min_workers_are_kept_and_replaced_beyond_the_waiting_limit() {
    let l = limits(8, vec![kind("spot", 3, Some(4), 60)]);
    let mut now = Inputs::default();
    assert_eq!(plan(&l, &now), [Action::Submit("spot".into(), 3)]);
    now.jobs = vec![
        job("9", "spot", Phase::Joined, Some(500)),
        job("10", "spot", Phase::Joined, Some(500)),
    ];
    assert_eq!(
        plan(&l, &now),
        [Action::Submit("spot".into(), 1)],
        "a lost one is replaced; idle ones at the minimum are kept"
    );
}

#[test]
fn an_idle_node_goes_after_its_types_timeout_unless_the_demand_needs_it() {
    let l = limits(8, vec![kind("cpu", 1, None, 60), kind("gpu", 0, None, 300)]);
    let mut now = Inputs {
        jobs: vec![
            job("9", "cpu", Phase::Joined, Some(61)),
            job("10", "cpu", Phase::Joined, Some(100)),
            job("11", "gpu", Phase::Joined, Some(200)),
        ],
        ..Inputs::default()
    };
    assert_eq!(
        plan(&l, &now),
        [Action::Cancel(vec!["10".into()])],
        "the idlest cpu one; one cpu node is its minimum; gpu's timeout is longer"
    );
    now.jobs[1].needed = true;
    assert_eq!(plan(&l, &now), [Action::Cancel(vec!["9".into()])]);
}

#[test]
fn lost_jobs_are_replaced_by_type() {
    let l = limits(8, vec![kind("cpu", 0, None, 60), kind("gpu", 0, None, 60)]);
    let now = Inputs {
        replacements: want(&[("gpu", 1)]),
        ..Inputs::default()
    };
    assert_eq!(plan(&l, &now), [Action::Submit("gpu".into(), 1)]);
}

#[test]
fn scale_adds_to_the_type_named_removes_and_sets_within_the_limits() {
    let l = limits(
        3,
        vec![kind("cpu", 0, None, 60), kind("gpu", 0, Some(1), 60)],
    );
    let mut now = Inputs {
        request: Some((ScaleRequest::Add(5), None)),
        paused: true,
        ..Inputs::default()
    };
    assert_eq!(
        plan(&l, &now),
        [Action::Submit("cpu".into(), 2)],
        "at most 3 nodes"
    );
    now.request = Some((ScaleRequest::Add(5), Some("gpu".into())));
    assert_eq!(
        plan(&l, &now),
        [Action::Submit("gpu".into(), 1)],
        "gpu's most"
    );
    now.jobs = vec![
        job("9", "cpu", Phase::Joined, Some(50)),
        job("10", "cpu", Phase::Joined, Some(90)),
        job("11", "gpu", Phase::Pending, None),
    ];
    now.request = Some((ScaleRequest::Remove(2), None));
    assert_eq!(
        plan(&l, &now),
        [Action::Cancel(vec!["11".into(), "10".into()])]
    );
    now.request = Some((ScaleRequest::To(1), None));
    assert_eq!(
        plan(&l, &now),
        [Action::Cancel(vec!["11".into(), "10".into(), "9".into()])]
    );
    now.jobs.clear();
    now.request = Some((ScaleRequest::To(9), None));
    assert_eq!(plan(&l, &now), [Action::Submit("cpu".into(), 2)]);
    now.request = Some((ScaleRequest::Remove(1), None));
    assert_eq!(plan(&l, &now), []);
}

#[test]
fn a_leaving_job_counts_for_nothing_so_its_replacement_fits() {
    let l = limits(3, vec![kind("spot", 1, Some(1), 60)]);
    let now = Inputs {
        jobs: vec![job("9", "spot", Phase::Leaving, Some(0))],
        ..Inputs::default()
    };
    assert_eq!(plan(&l, &now), [Action::Submit("spot".into(), 1)]);
}
