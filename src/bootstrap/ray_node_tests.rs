use super::*;

#[test]
fn a_temp_root_is_always_new_and_private_and_a_taken_name_gets_a_suffix() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("rs0-42.1");
    let mut n = 0;
    let mut suffix = || {
        n += 1;
        format!("s{n}")
    };
    let made = TempRoot::create_at(&first, &mut suffix).unwrap();
    assert_eq!(made.path, first);
    let mode = std::fs::metadata(&first).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    // Taken (by an earlier run, another user or a link): never reused, a new name instead.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, tmp.path().join("rs0-42.1-s1")).unwrap();
    let again = TempRoot::create_at(&first, &mut suffix).unwrap();
    assert_eq!(again.path, tmp.path().join("rs0-42.1-s2"));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert_eq!(random_suffix().len(), 6);
    assert_ne!(random_suffix(), random_suffix());
    // An error names the path.
    let err = TempRoot::create_at(Path::new("/nonexistent/rs0-1.0"), random_suffix)
        .err()
        .unwrap();
    assert!(
        format!("{err:#}").contains("`/nonexistent/rs0-1.0`"),
        "{err:#}"
    );
    assert_eq!(
        TempRoot::first_name("42", 3)
            .file_name()
            .unwrap()
            .to_string_lossy(),
        format!("rs{}-42.3", nix::unistd::getuid())
    );
}

#[test]
fn worker_args_point_at_the_head_and_pin_resources() {
    let extra = vec!["--include-dashboard=false".to_owned()];
    let spec = RayNodeSpec {
        head_address: Some("[fd00::1]:12000"),
        ip: "fd00::2".parse().unwrap(),
        ports: ports::choose_ray("n", false, Some(13_000))
            .unwrap()
            .release(),
        num_cpus: Some(2),
        num_gpus: 0,
        memory: Some(1 << 30),
        object_store_memory: Some(100_000_000),
        extra: &extra,
    };
    let args = spec.args(Path::new("/tmp/rs0-5")).join(" ");
    assert!(
        args.starts_with("start --address=[fd00::1]:12000 --node-ip-address=fd00::2"),
        "{args}"
    );
    for part in [
        "--num-cpus=2",
        "--num-gpus=0",
        "--object-store-memory=100000000",
        "--memory=1073741824",
        "--temp-dir=/tmp/rs0-5",
        "--node-manager-port=13003",
        "--min-worker-port=13010",
    ] {
        assert!(args.contains(part), "{part} in {args}");
    }
    assert!(args.ends_with("--include-dashboard=false"));
    assert!(!args.contains("--head"));
}

#[test]
fn ray_gets_the_allocations_memory() {
    let mb = |n: u64| n << 20;
    let split = MemorySplit::of(Some(mb(1500)), None);
    assert_eq!(split.object_store, Some((mb(1500) as f64 * 0.3) as u64));
    assert_eq!(split.ray, Some(mb(1500) - split.object_store.unwrap()));
    let split = MemorySplit::of(Some(mb(1500)), Some(mb(100)));
    assert_eq!(
        (split.ray, split.object_store),
        (Some(mb(1400)), Some(mb(100)))
    );
    assert!(
        split
            .describe()
            .starts_with("Ray gets 1400 MB of memory and a 100 MB object store")
    );
    let untracked = MemorySplit::of(None, Some(mb(100)));
    assert_eq!(
        (untracked.ray, untracked.object_store),
        (None, Some(mb(100)))
    );
    assert!(untracked.describe().contains("does not track memory"));
    let too_big = MemorySplit::of(Some(mb(100)), Some(mb(100)));
    assert_eq!(too_big.ray, None);
    assert!(too_big.describe().starts_with("warning:"));
}

#[test]
fn ray_start_waits_for_its_raylet_a_third_of_the_ready_timeout_within_30_to_300_s() {
    assert_eq!(raylet_start_wait(180), 60);
    assert_eq!(raylet_start_wait(30), 30);
    assert_eq!(raylet_start_wait(3600), 300);
    assert_eq!(
        start_waits(180),
        [
            ("RAY_raylet_start_wait_time_s", "60".to_owned()),
            ("RAY_agent_register_timeout_ms", "60000".to_owned())
        ]
    );
}
