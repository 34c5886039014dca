//! Unit tests of `resources:` as a task file gives them: the node shared, memory's
//! spellings, spot and recovery, infra and ports.

use crate::launch::task_file::{Value, read};

/// A task file in `dir`, named `task.yaml`, holding `text`.
fn task(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("task.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The flags a task file of these `resources:` gives, as `long=value` (a switch's value
/// as true/false).
fn flags_of(resources: &str) -> Result<Vec<String>, String> {
    let tmp = tempfile::tempdir().unwrap();
    let path = task(tmp.path(), &format!("run: x\nresources:\n  {resources}\n"));
    let read = read(&path, tmp.path()).map_err(|e| e.message)?;
    Ok(read
        .given
        .iter()
        .filter(|g| g.field.starts_with("resources"))
        .map(|g| match &g.value {
            Value::Switch(on) => format!("{}={on}", g.long),
            Value::Values(v) => format!("{}={}", g.long, v.join(",")),
        })
        .collect())
}

/// A task that asks for CPUs, memory or GPUs asks for less than a whole node: it shares
/// the node (`--no-exclusive`), as SkyPilot's Slurm jobs do; one that asks for none keeps
/// the whole node, and `rayslurm: {exclusive: true}` takes it whole again.
#[test]
fn a_task_asking_for_part_of_a_node_shares_it() {
    for resources in ["cpus: 4+", "memory: 8+", "accelerators: A100:1"] {
        let flags = flags_of(resources).unwrap();
        assert_eq!(flags[0], "exclusive=false", "{resources}: {flags:?}");
    }
    let flags = flags_of("disk_size: 100").unwrap();
    assert!(
        !flags.iter().any(|f| f.starts_with("exclusive")),
        "{flags:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = task(
        tmp.path(),
        "run: x\nresources:\n  cpus: 2\nrayslurm:\n  exclusive: true\n",
    );
    let given = read(&path, tmp.path()).unwrap().given;
    let exclusive: Vec<_> = given.iter().filter(|g| g.long == "exclusive").collect();
    // The section's own comes last, and the last given wins.
    assert_eq!(exclusive.len(), 2);
    assert_eq!(exclusive[1].value, Value::Switch(true));
}

/// `memory:` in each of SkyPilot's spellings: GB by default, its units in any case, `+`.
#[test]
fn memory_in_skypilots_spellings() {
    let mem = |m: &str| {
        flags_of(&format!("memory: {m}"))
            .map(|f| f.into_iter().find(|f| f.starts_with("mem=")).unwrap())
    };
    for (given, want) in [
        ("8", "mem=8G"),
        ("8+", "mem=8G"),
        ("64GB", "mem=64G"),
        ("64gb+", "mem=64G"),
        ("64G", "mem=64G"),
        ("1.5", "mem=1536M"),
        ("1024MB", "mem=1G"),
        ("1000MB+", "mem=1000M"),
        ("1TB", "mem=1024G"),
        ("2097152KB", "mem=2G"),
    ] {
        assert_eq!(mem(given).unwrap(), want, "{given}");
    }
    for bad in ["0", "x", "8XB", "-1GB"] {
        let err = mem(bad).unwrap_err();
        assert!(err.contains("is not an amount of memory"), "{bad}: {err}");
    }
}

/// `use_spot: true` is the site's spot partition (resolved from the config later) with
/// `--requeue`; `job_recovery` is `--requeue`, `none` nothing, `max_restarts_on_errors`
/// `--restarts-on-error`, and a restart by exit code is
/// said not to happen.
#[test]
fn spot_and_recovery_are_requeued_runs() {
    assert_eq!(
        flags_of("use_spot: true").unwrap(),
        ["use-spot=true", "requeue=true"]
    );
    assert_eq!(
        flags_of("job_recovery: FAILOVER").unwrap(),
        ["requeue=true"]
    );
    assert_eq!(
        flags_of("job_recovery: {strategy: EAGER_NEXT_REGION}").unwrap(),
        ["requeue=true"]
    );
    assert!(flags_of("job_recovery: none").unwrap().is_empty());
    let err = flags_of("job_recovery: sometimes").unwrap_err();
    assert!(err.contains("FAILOVER, EAGER_NEXT_REGION or none"), "{err}");
    let err = flags_of("job_recovery: {retries: 3}").unwrap_err();
    assert!(err.contains("job_recovery.retries"), "{err}");
    assert_eq!(
        flags_of("job_recovery: {max_restarts_on_errors: 3}").unwrap(),
        ["restarts-on-error=3", "requeue=true"]
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = task(
        tmp.path(),
        "run: x\nresources:\n  job_recovery:\n    recover_on_exit_codes: [33]\n",
    );
    let notices = read(&path, tmp.path()).unwrap().notices;
    assert!(
        notices[0].contains("within `max_restarts_on_errors`"),
        "{notices:?}"
    );
}

/// `infra:` names this Slurm cluster (`slurm`, `slurm/CLUSTER`, `slurm/CLUSTER/PARTITION`,
/// `*` for any): the partition taken, the cluster to check; a cloud is refused.
#[test]
fn infra_names_the_slurm_cluster_and_partition() {
    assert!(flags_of("infra: slurm").unwrap().is_empty());
    assert_eq!(
        flags_of("infra: slurm/lab1").unwrap(),
        ["slurm-cluster=lab1"]
    );
    assert_eq!(
        flags_of("infra: Slurm/lab1/gpu").unwrap(),
        ["slurm-cluster=lab1", "partition=gpu"]
    );
    assert_eq!(flags_of("infra: slurm/*/gpu").unwrap(), ["partition=gpu"]);
    // Another cloud is not followed (a notice): the task runs here.
    for elsewhere in ["aws", "k8s/ctx"] {
        assert!(flags_of(&format!("infra: {elsewhere}")).unwrap().is_empty());
    }
    let err = flags_of("infra: slurm/a/b/c").unwrap_err();
    assert!(err.contains("is not `slurm`, `slurm/CLUSTER`"), "{err}");
}

/// `ports:` as SkyPilot writes them, kept for the launch to print; a bad one refused.
#[test]
fn ports_are_kept_to_print() {
    let tmp = tempfile::tempdir().unwrap();
    let path = task(
        tmp.path(),
        "run: x\nresources:\n  ports:\n    - 8080\n    - 10052-10100\n",
    );
    assert_eq!(
        read(&path, tmp.path()).unwrap().ports,
        ["8080", "10052-10100"]
    );
    let path = task(tmp.path(), "run: x\nresources:\n  ports: 8081\n");
    assert_eq!(read(&path, tmp.path()).unwrap().ports, ["8081"]);
    for bad in ["0", "70000", "9-8", "http"] {
        let path = task(tmp.path(), &format!("run: x\nresources:\n  ports: {bad}\n"));
        let err = read(&path, tmp.path()).unwrap_err();
        assert!(
            err.message.contains("task.yaml:3: resources.ports"),
            "{bad}: {}",
            err.message
        );
    }
}
