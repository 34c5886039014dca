//! Ray's cluster YAML without a cluster: `up cluster.yaml --dry-run` shows the head's script,
//! a cloud's YAML is refused at its line with nothing written or submitted, and `down`,
//! `exec`, `submit`, ... take the file for its `cluster_name`.

use std::path::Path;

use crate::gpus::slurm_unreachable;
use crate::harness::{rayslurm, shim};
use crate::launch::{normalise, state};

/// A head alone (Ray's `max_workers: 0`): every field that becomes one of `up`'s own flags.
const HEAD_ONLY: &str = "cluster_name: rayhead\nmax_workers: 0\nidle_timeout_minutes: 2\nprovider:\n  type: slurm\n  time: '10'\n  account: proj\nsetup_commands: [echo common]\nhead_setup_commands: [echo head]\nworker_setup_commands: [echo never]\nhead_node_type: head\navailable_node_types:\n  head:\n    resources: {CPU: 2, accel: 1}\n    node_config: {partition: lab, cpus_per_task: 2, mem: 2G}\n";

fn up_dry(dir: &Path, args: &[&str]) -> crate::harness::Run {
    let mut argv = vec!["up"];
    argv.extend_from_slice(args);
    rayslurm(argv)
        .cwd(dir)
        .env("RAYSLURM_STATE_DIR", state(dir))
        .env("RAYSLURM_CONFIG", "/dev/null")
}

#[test]
fn up_of_a_ray_cluster_yaml_dry_run_shows_the_heads_script_with_the_typed_flags_winning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cluster.yaml"), HEAD_ONLY).unwrap();
    let no_slurm = slurm_unreachable();
    let ran = up_dry(dir.path(), &["cluster.yaml", "--dry-run", "--time", "20"])
        .env("RAYSLURM_ACCOUNT", "from-the-variable")
        .env("RAYSLURM_QOS", "qos-of-the-variable")
        .shims(no_slurm.path())
        .expect_status(0)
        .run();
    let script = normalise(&ran.stdout, dir.path());
    for line in [
        "#SBATCH --job-name=rayhead",
        "#SBATCH --partition=lab",
        // The file's over the variable's, as a task file's; the variable where the file is silent.
        "#SBATCH --account=proj",
        "#SBATCH --qos=qos-of-the-variable",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --mem=2G",
        // Typed, over the file's `time: '10'`.
        "#SBATCH --time=20",
        "--setup 'set -e\necho common\necho head' \\",
        r#"--ray-head-args '--num-cpus=2 '\''--resources={"accel":1}'\''' \"#,
    ] {
        assert!(script.contains(line), "{line}: {script}");
    }
    assert!(!script.contains("echo never"), "{script}");
}

#[test]
fn a_cloud_ray_yaml_is_refused_at_its_line_and_nothing_is_written_or_submitted() {
    let dir = tempfile::tempdir().unwrap();
    let cloud = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/ray_yaml/cloud-cluster.yaml");
    std::fs::copy(&cloud, dir.path().join("cloud-cluster.yaml")).unwrap();
    let shims = tempfile::tempdir().unwrap();
    let called = dir.path().join("sbatch-called");
    shim(
        shims.path(),
        "sbatch",
        &format!("touch {}; exit 1", called.display()),
    );
    up_dry(dir.path(), &["cloud-cluster.yaml"])
        .shims(shims.path())
        .expect_status(2)
        .expect_stderr_contains("error: cloud-cluster.yaml:15: provider.type: aws: rayslurm runs Ray on Slurm, not on `aws`'s machines; write `provider: {type: slurm}`")
        .expect_stderr_contains("nothing was submitted")
        .run();
    assert!(!called.exists(), "sbatch ran");
    assert!(
        !state(dir.path()).join("jobs").exists(),
        "a run was written"
    );
    // Its Slurm type written, the next field is refused at its own line.
    let text = std::fs::read_to_string(&cloud)
        .unwrap()
        .replace("type: aws", "type: slurm")
        .replace(
            "    region: eu-central-1\n    cache_stopped_nodes: true\n",
            "",
        );
    std::fs::write(dir.path().join("c.yaml"), text).unwrap();
    up_dry(dir.path(), &["c.yaml"])
        .shims(shims.path())
        .expect_status(2)
        .expect_stderr_contains("error: c.yaml:17: auth: rayslurm logs in to no node")
        .run();
    assert!(!called.exists(), "sbatch ran");
}

#[test]
fn the_commands_of_a_cluster_take_its_yaml_for_its_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cluster.yaml"), HEAD_ONLY).unwrap();
    std::fs::write(dir.path().join("s.py"), "print(1)\n").unwrap();
    for args in [
        &["down", "cluster.yaml"][..],
        &["exec", "cluster.yaml", "--", "true"],
        &["dashboard", "cluster.yaml"],
        &["queue", "cluster.yaml"],
        &["submit", "cluster.yaml", "s.py", "--x"],
        &["rsync-up", "cluster.yaml", "s.py", "s.py"],
        &["attach", "cluster.yaml"],
    ] {
        rayslurm(args.iter().copied())
            .cwd(dir.path())
            .env("RAYSLURM_STATE_DIR", state(dir.path()))
            .expect_status(2)
            // `dashboard` takes a run's name too.
            .expect_stderr_contains("`rayhead`")
            .expect_stderr_lacks("cluster.yaml")
            .run();
    }
    rayslurm(["down", "missing.yaml"])
        .cwd(dir.path())
        .expect_status(2)
        .expect_stderr_contains("cannot read Ray's cluster YAML `missing.yaml`")
        .run();
    // A task file is not Ray's YAML: it goes after the cluster's name.
    std::fs::write(dir.path().join("task.yaml"), "run: python x.py\n").unwrap();
    rayslurm(["up", "task.yaml", "--dry-run"])
        .cwd(dir.path())
        .env("RAYSLURM_STATE_DIR", state(dir.path()))
        .expect_status(2)
        .expect_stderr_contains("`task.yaml` is not Ray's cluster YAML")
        .expect_stderr_contains("`rayslurm up NAME task.yaml`")
        .run();
    // A Ray YAML is not a task file: it names its cluster.
    rayslurm(["up", "other", "cluster.yaml", "--dry-run"])
        .cwd(dir.path())
        .env("RAYSLURM_STATE_DIR", state(dir.path()))
        .expect_status(2)
        .expect_stderr_contains("`cluster.yaml` is Ray's cluster YAML, not a task file")
        .run();
}
