//! `launch TASK.yaml --dry-run` for what a task asks of the cluster (docs/task-files.md): part
//! of a node (shared) or all of it, memory in SkyPilot's spellings, a pipeline's stages,
//! `use_spot` and `job_recovery` (the site's spot partition, requeued), `infra`, and `ports`
//! printed with their forward.

use crate::harness::shim;
use crate::launch::{launch_in, normalise};

/// A dry run of `task` (written as `task.yaml` in a fresh directory) with `args`, reading the
/// config file `config` (TOML) when given: the directory, exit code, normalised stdout and
/// stderr.
fn dry_run(
    task: &str,
    config: Option<&str>,
    args: &[&str],
) -> (tempfile::TempDir, i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("task.yaml"), task).unwrap();
    let config_path = dir.path().join("config.toml");
    std::fs::write(&config_path, config.unwrap_or_default()).unwrap();
    let mut argv = vec!["task.yaml", "--dry-run"];
    argv.extend_from_slice(args);
    // GPU types go as written where Slurm cannot be asked (tests/it/gpus/ has the site's).
    let no_slurm = crate::gpus::slurm_unreachable();
    let ran = launch_in(dir.path(), &argv)
        .env("RAYSLURM_CONFIG", &config_path)
        .shims(no_slurm.path())
        .run();
    let code = ran.output.status.code().unwrap_or(-1);
    let (out, err) = (
        normalise(&ran.stdout, dir.path()),
        normalise(&ran.stderr, dir.path()),
    );
    (dir, code, out, err)
}

/// The `#SBATCH` lines of `script` that name these options.
fn directives(script: &str, options: &[&str]) -> Vec<String> {
    script
        .lines()
        .filter(|l| {
            options
                .iter()
                .any(|o| l.starts_with(&format!("#SBATCH --{o}")))
        })
        .map(str::to_owned)
        .collect()
}

/// A task that asks for part of a node (CPUs, memory, GPUs) shares it, with what it asks
/// shown in the script; one that asks for nothing, or says `exclusive: true`, takes the whole
/// node; `exclusive: false` shares it too.
#[test]
fn a_task_asking_for_part_of_a_node_shares_it() {
    let cases: [(&str, &[&str]); 6] = [
        (
            "resources:\n  cpus: 4+\n  memory: 64GB\n",
            &["#SBATCH --cpus-per-task=4", "#SBATCH --mem=64G"],
        ),
        ("resources:\n  memory: 8+\n", &["#SBATCH --mem=8G"]),
        (
            "resources:\n  accelerators: A100:1\n",
            &["#SBATCH --gpus-per-task=A100:1"],
        ),
        ("resources:\n  disk_size: 100\n", &["#SBATCH --exclusive"]),
        (
            "resources:\n  cpus: 2\nrayslurm:\n  exclusive: true\n",
            &["#SBATCH --cpus-per-task=2", "#SBATCH --exclusive"],
        ),
        ("rayslurm:\n  exclusive: false\n", &[]),
    ];
    for (resources, want) in cases {
        let task = format!("run: hostname\n{resources}");
        let (_dir, code, script, stderr) = dry_run(&task, None, &[]);
        assert_eq!(code, 0, "{task}: {stderr}");
        assert_eq!(
            directives(&script, &["cpus-per-task", "mem", "gpus", "exclusive"]),
            want,
            "{task}"
        );
    }
    // The command line keeps its default, and overrides the file.
    let (_dir, _, script, _) = dry_run("run: x\nresources:\n  cpus: 1\n", None, &["--exclusive"]);
    assert!(script.contains("#SBATCH --exclusive\n"), "{script}");
}

/// A file of several YAML documents is a pipeline: a dry run shows every stage's script,
/// each named PIPELINE-STAGE, and says which stage each waits for.
#[test]
fn a_pipeline_dry_run_shows_every_stage() {
    let task = "name: pipe\n---\nname: prep\nrun: echo prep\n---\nname: train\nresources:\n  memory: 1GB\nrun: echo train\n---\nrun: echo eval\n";
    let (_dir, code, scripts, stderr) = dry_run(task, None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let mut shown = directives(
        &scripts,
        &["job-name", "mem", "dependency", "kill-on-invalid-dep"],
    );
    shown.extend(
        stderr
            .lines()
            .filter(|l| l.starts_with("pipeline ") || l.starts_with("dry run: wrote"))
            .map(crate::harness::filter_stamps),
    );
    insta::assert_snapshot!("pipeline_dry_run", shown.join("\n"));
    // The stages are checked before anything is written: a bad one refuses the whole file.
    let bad = "name: pipe\n---\nrun: a\n---\nrun: b\nresources:\n  instance_type: p4d\n";
    let (dir, code, _, stderr) = dry_run(bad, None, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with("error: task.yaml:7: resources.instance_type: "),
        "{stderr}"
    );
    assert!(!dir.path().join(".state").exists());
    // A name typed would name every stage alike.
    let (_dir, code, _, stderr) = dry_run(task, None, &["--exp-name", "x"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("two stages of the pipeline `task.yaml` are both named `x`"),
        "{stderr}"
    );
    // `up` runs one task, not a pipeline.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.yaml"), "run: a\n---\nrun: b\n").unwrap();
    crate::harness::rayslurm(["up", "c1", "p.yaml", "--dry-run"])
        .cwd(dir.path())
        .expect_status(2)
        .expect_stderr_contains("only `launch` runs a pipeline")
        .run();
}

/// `use_spot: true` runs in the partition (and/or with the QOS) the site's config names as
/// preemptible, requeued when preempted; without one it is refused naming both keys.
#[test]
fn use_spot_takes_the_sites_spot_partition_or_names_the_keys() {
    let task = "run: x\nresources:\n  use_spot: true\n";
    let config = "[launch]\nspot_partition = \"labspot\"\nspot_qos = \"low\"\n";
    let (_dir, code, script, stderr) = dry_run(task, Some(config), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        directives(&script, &["partition", "qos", "requeue"]),
        [
            "#SBATCH --partition=labspot",
            "#SBATCH --qos=low",
            "#SBATCH --requeue"
        ]
    );
    // The command line's partition wins over the site's spot partition.
    let (_dir, _, script, _) = dry_run(task, Some(config), &["--partition", "lab"]);
    assert!(script.contains("#SBATCH --partition=lab\n"), "{script}");
    let (dir, code, _, stderr) = dry_run(task, Some("[launch]\npartition = \"lab\"\n"), &[]);
    assert_eq!(code, 2, "{stderr}");
    for needle in [
        "error: task.yaml:3: resources.use_spot: ",
        "`spot_partition = \"NAME\"`",
        "`spot_qos = \"NAME\"`",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    assert!(!dir.path().join(".state").exists());
}

/// `job_recovery` is a requeued run; `max_restarts_on_errors: N` restarts a command that
/// fails, N times at most (the bootstrap's `--restarts-on-error N`).
#[test]
fn job_recovery_requeues_the_run() {
    let task = "run: x\nresources:\n  job_recovery:\n    strategy: FAILOVER\n    max_restarts_on_errors: 3\n";
    let (_dir, code, script, stderr) = dry_run(task, None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(script.contains("#SBATCH --requeue\n"), "{script}");
    assert!(script.contains("--restarts-on-error 3"), "{script}");
    let (_dir, _, script, _) = dry_run("run: x\nresources:\n  job_recovery: none\n", None, &[]);
    assert!(!script.contains("#SBATCH --requeue"), "{script}");
}

/// `infra: slurm/CLUSTER/PARTITION` takes the partition on this cluster, and refuses another
/// cluster, saying which this is (Slurm's `ClusterName`, from `scontrol show config`).
#[test]
fn infra_takes_the_partition_and_refuses_another_cluster() {
    let shims = tempfile::tempdir().unwrap();
    shim(
        shims.path(),
        "scontrol",
        "[ \"$1 $2\" = 'show config' ] || exit 1\necho 'ClusterName             = labone'",
    );
    // The dry runs ask Slurm (`sbatch --test-only`), which would take them.
    shim(
        shims.path(),
        "sbatch",
        "[ \"$1\" = --test-only ] || exit 1\necho 'sbatch: Job 1 to start' >&2",
    );
    let run = |infra: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("task.yaml"),
            format!("run: x\nresources:\n  infra: {infra}\n"),
        )
        .unwrap();
        let ran = launch_in(dir.path(), &["task.yaml", "--dry-run"])
            .shims(shims.path())
            .run();
        (
            ran.output.status.code().unwrap_or(-1),
            ran.stdout,
            ran.stderr,
        )
    };
    let (code, script, stderr) = run("slurm/labone/gpu");
    assert_eq!(code, 0, "{stderr}");
    assert!(script.contains("#SBATCH --partition=gpu\n"), "{script}");
    let (code, script, _) = run("slurm");
    assert_eq!(code, 0);
    assert!(!script.contains("#SBATCH --partition"), "{script}");
    let (code, _, stderr) = run("slurm/other/gpu");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with("error: task.yaml:3: resources.infra: names the Slurm cluster `other`, but this is `labone`"),
        "{stderr}"
    );
    // Another cloud is not followed, and says so: the task runs on this cluster.
    let (code, _, stderr) = run("aws/us-east-1");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("`resources.infra: aws/us-east-1` is not followed: launched with rayslurm, the task runs on this Slurm cluster, as `sky launch --infra slurm` runs it"),
        "{stderr}"
    );
}

/// `ports:` are printed with the `rayslurm forward` command that forwards them from the run's
/// head node to the login node, and the `ssh -L` line that reaches them there from a laptop.
#[test]
fn ports_are_printed_with_their_forward() {
    let task = "run: x\nresources:\n  ports:\n    - 8080\n    - 9000-9001\n";
    let (_dir, code, _, stderr) = dry_run(task, None, &[]);
    assert_eq!(code, 0, "{stderr}");
    for needle in [
        "ports 8080, 9000-9001 are served on the run's head node",
        "\n  rayslurm forward task 8080 9000-9001\n",
        "\n  then from a laptop: ssh -N -L 8080:localhost:8080 -L 9000:localhost:9000 -L 9001:localhost:9001 ",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
}

/// What SkyPilot's example files hold for other clouds or for SkyPilot itself runs here, each
/// with a notice: a cloud's placement (as `sky launch --infra slurm` runs such a file), the
/// network tier, autostop, a `service:` (`sky launch` runs the task once), SkyPilot's
/// `config:`; a task of `setup` alone ends after every node's setup; an `image_id` that names a
/// registry's image without `docker:`, or holds one under `docker` beside machine images, is
/// the run's container image.
#[test]
fn what_other_clouds_and_skypilot_itself_hold_runs_here_with_a_notice() {
    let task = "run: x\nresources:\n  cloud: gcp\n  zone: us-central1-a\n  network_tier: best\n  autostop: 10\nservice:\n  replicas: 2\nconfig:\n  kubernetes:\n    pod_config: {}\n";
    let (_dir, code, _, stderr) = dry_run(task, None, &[]);
    assert_eq!(code, 0, "{stderr}");
    for said in [
        "task.yaml: `resources.cloud: gcp` is not followed: launched with rayslurm, the task runs on this Slurm cluster",
        "task.yaml: `resources.zone: us-central1-a` is not followed",
        "task.yaml: `resources.network_tier` needs nothing here",
        "task.yaml: `resources.autostop` is a cluster's idle timeout (`rayslurm up`): a `launch` job ends with its command",
        "task.yaml: `service` needs nothing here: `launch` runs the task once, as `sky launch` does",
        "task.yaml: `config` needs nothing here: SkyPilot's own settings",
    ] {
        assert!(stderr.contains(said), "{said}\n{stderr}");
    }
    // Setup alone: every node's setup, then the run ends.
    let (_dir, code, script, stderr) = dry_run("setup: pip list\n", None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("`run` needs nothing here: there is none: the run ends once every node's setup has succeeded"),
        "{stderr}"
    );
    assert!(script.contains("--command true"), "{script}");
    // A registry's image without `docker:`, and a `docker` image beside machine images.
    for (image_id, want) in [
        (
            "rocm/pytorch:latest",
            "is taken as a container image (`docker:rocm/pytorch:latest`)",
        ),
        (
            "{us-east-1: ami-1, docker: 'ubuntu:22.04'}",
            "its `docker` image is taken; the cloud's machine images beside it are not followed",
        ),
    ] {
        let task = format!("run: x\nresources:\n  image_id: {image_id}\n");
        let (_dir, code, script, stderr) = dry_run(&task, None, &["--container-runtime", "pyxis"]);
        assert_eq!(code, 0, "{image_id}: {stderr}");
        assert!(stderr.contains(want), "{image_id}: {stderr}");
        assert!(script.contains("--container-image"), "{image_id}: {script}");
    }
}
