//! `launch TASK.yaml` (docs/task-files.md): the seeds' task files as written, what each field
//! becomes, the command line over the file, and refusals as `FILE:LINE: FIELD: why` with
//! nothing written or submitted.

use std::path::{Path, PathBuf};

use crate::gpus::slurm_unreachable;
use crate::launch::{jobs, launch_in, normalise, run_dir, state};

/// The seeds' task files, kept unmodified.
fn seeds() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seeds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    files
}

/// A dry run of `task` (YAML text, written as `task.yaml` in a fresh directory) with `args`:
/// the normalised script, or the run that failed.
fn dry_run_task(task: &str, args: &[&str]) -> (tempfile::TempDir, crate::harness::Ran) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("task.yaml"), task).unwrap();
    let mut argv = vec!["task.yaml", "--dry-run"];
    argv.extend_from_slice(args);
    // GPU types go as written where Slurm cannot be asked (tests/it/gpus/ has the site's).
    let no_slurm = slurm_unreachable();
    let ran = launch_in(dir.path(), &argv)
        .env("RAYSLURM_CONFIG", "/dev/null")
        .shims(no_slurm.path())
        .run();
    (dir, ran)
}

#[test]
fn the_seeds_task_files_pass_a_dry_run_as_written() {
    for file in seeds() {
        let dir = tempfile::tempdir().unwrap();
        if file.to_string_lossy().ends_with("-cluster.yaml") {
            up_seed_cluster(&file, dir.path());
            continue;
        }
        let no_slurm = slurm_unreachable();
        let ran = launch_in(dir.path(), &[file.to_str().unwrap(), "--dry-run"])
            .env("RAYSLURM_CONFIG", "/dev/null")
            .shims(no_slurm.path())
            .expect_status(0)
            .run();
        let script = normalise(&ran.stdout, dir.path());
        assert!(script.contains("#SBATCH --nodes=2"), "{file:?}: {script}");
        assert!(script.contains("#SBATCH --gpus-per-task="), "{file:?}");
        assert!(script.contains("  --per-node \\"), "{file:?}");
        assert!(
            script.contains("SKYPILOT") || script.contains("# Run"),
            "{file:?}"
        );
    }
}

/// Seed 003's `cluster.yaml` is `up`'s (`sky launch -c mycluster cluster.yaml`). Its
/// `workdir: ...` stands for the user's directory: refused, naming the line, where no directory
/// of that name exists; taken where one does.
fn up_seed_cluster(file: &Path, dir: &Path) {
    let no_slurm = slurm_unreachable();
    let up = || {
        crate::harness::rayslurm(["up", "mycluster", file.to_str().unwrap(), "--dry-run"])
            .cwd(dir)
            .env("RAYSLURM_STATE_DIR", state(dir))
            .shims(no_slurm.path())
    };
    up().expect_status(2)
        .expect_stderr_contains("003-cluster.yaml:5: workdir: ")
        .run();
    std::fs::create_dir(dir.join("...")).unwrap();
    let ran = up().expect_status(0).run();
    let script = normalise(&ran.stdout, dir);
    for line in [
        "#SBATCH --job-name=mycluster\n",
        "#SBATCH --nodes=4\n",
        "#SBATCH --gpus-per-task=H100:8\n",
        "#SBATCH --chdir=[DIR]/...\n",
        "  --setup '# Install dependencies.\n...\n' \\\n",
    ] {
        assert!(script.contains(line), "{file:?}: {line}: {script}");
    }
}

const TASK: &str = "name: tf-test
num_nodes: 2
resources:
  accelerators: A100:8
  cpus: 4+
  memory: 32
  disk_size: 256
envs:
  MODEL: small
  STEPS: 10
secrets:
  TOKEN: s3cret
setup: |
  echo setting up
run: |
  echo run $MODEL
rayslurm:
  time: \"1:00:00\"
  partition: lab
  sbatch_arg: [--comment=from-file]
";

#[test]
fn each_field_becomes_its_flag() {
    let (dir, ran) = dry_run_task(TASK, &[]);
    assert_eq!(ran.output.status.code().unwrap_or(-1), 0, "{}", ran.stderr);
    let script = normalise(&ran.stdout, dir.path());
    for line in [
        "#SBATCH --job-name=tf-test",
        "#SBATCH --nodes=2",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --mem=32G",
        "#SBATCH --gpus-per-task=A100:8",
        "#SBATCH --time=1:00:00",
        "#SBATCH --partition=lab",
        "#SBATCH --comment=from-file",
        "export MODEL=small",
        "export STEPS=10",
        // A secret: in the private script only.
        "export TOKEN='***'",
        "  --per-node \\",
        "  --setup 'echo setting up",
        "  --command 'echo run $MODEL",
    ] {
        assert!(script.contains(line), "{line}: {script}");
    }
    assert!(!script.contains("s3cret"), "{script}");
    assert_eq!(
        ran.stderr
            .matches("resources.disk_size` needs nothing here")
            .count(),
        1,
        "{}",
        ran.stderr
    );
}

#[test]
fn the_command_line_overrides_the_file() {
    let (dir, ran) = dry_run_task(
        TASK,
        &[
            "-n",
            "3",
            "--time",
            "5",
            "--env",
            "MODEL=big",
            "--exp-name",
            "mine",
        ],
    );
    assert_eq!(ran.output.status.code().unwrap_or(-1), 0, "{}", ran.stderr);
    let script = normalise(&ran.stdout, dir.path());
    for line in [
        "#SBATCH --job-name=mine",
        "#SBATCH --nodes=3",
        "#SBATCH --time=5",
        "export MODEL=big",
        "export STEPS=10",
    ] {
        assert!(script.contains(line), "{line}: {script}");
    }
    assert!(!script.contains("MODEL=small"), "{script}");
}

#[test]
fn ray_job_runs_the_command_on_the_head_of_a_ray_cluster() {
    let (dir, ran) = dry_run_task(
        "num_nodes: 2\nrun: python -c 'import ray'\nrayslurm:\n  ray_job: true\n",
        &[],
    );
    assert_eq!(ran.output.status.code().unwrap_or(-1), 0, "{}", ran.stderr);
    let script = normalise(&ran.stdout, dir.path());
    assert!(!script.contains("--per-node"), "{script}");
    assert!(script.contains("#SBATCH --job-name=task"), "{script}");
}

/// YAML 1.2's booleans only: `N`, `Y`, `ON`, `NO` are the names of variables, as SkyPilot's
/// files mean them (YAML 1.1 read them as `false` and `true`: `export false=8`).
#[test]
fn env_names_that_yaml_1_1_would_read_as_booleans_stay_names() {
    let task = "run: echo $N\nenvs:\n  N: 8\n  Y: yes\n  ON: 1\n  NO: x\n";
    let (dir, ran) = dry_run_task(task, &[]);
    assert_eq!(ran.output.status.code().unwrap_or(-1), 0, "{}", ran.stderr);
    let script = normalise(&ran.stdout, dir.path());
    for line in ["export N=8", "export Y=yes", "export ON=1", "export NO=x"] {
        assert!(script.contains(line), "{line}: {script}");
    }
    assert!(
        !script.contains("export true") && !script.contains("export false"),
        "{script}"
    );
}

/// `rayslurm: {exclusive: false}` shares the node (`--no-exclusive`); the command line's
/// `--exclusive` still wins.
#[test]
fn a_switch_that_is_on_by_default_is_turned_off_by_false() {
    let task = "run: echo hi\nrayslurm:\n  exclusive: false\n";
    for (args, exclusive) in [(&[][..], false), (&["--exclusive"][..], true)] {
        let (dir, ran) = dry_run_task(task, args);
        assert_eq!(ran.output.status.code().unwrap_or(-1), 0, "{}", ran.stderr);
        let script = normalise(&ran.stdout, dir.path());
        assert_eq!(
            script.contains("#SBATCH --exclusive"),
            exclusive,
            "{args:?}: {script}"
        );
    }
    let (dir, ran) = dry_run_task("run: echo hi\nrayslurm:\n  exclusive: true\n", &[]);
    assert!(normalise(&ran.stdout, dir.path()).contains("#SBATCH --exclusive"));
}

/// A key without a value in the file takes this shell's value with `--env KEY` (SkyPilot's
/// way to pass a secret), as a plain launch's `--env KEY` does; unset, it is refused.
#[test]
fn an_env_named_alone_takes_its_value_from_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("task.yaml"),
        "run: echo $KEY\nenvs:\n  KEY:\n",
    )
    .unwrap();
    let with = |args: &[&str], value: Option<&str>| {
        let mut run =
            crate::launch::launch_in(dir.path(), args).env("RAYSLURM_CONFIG", "/dev/null");
        run = match value {
            Some(v) => run.env("KEY", v),
            None => run.env_remove("KEY"),
        };
        run.run()
    };
    let ran = with(
        &["task.yaml", "--dry-run", "--env", "KEY"],
        Some("from-shell"),
    );
    assert_eq!(ran.output.status.code().unwrap_or(-1), 0, "{}", ran.stderr);
    assert!(normalise(&ran.stdout, dir.path()).contains("export KEY=from-shell"));
    let plain = [
        "--dry-run",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--env",
        "KEY",
    ];
    let ran = with(&plain, Some("v 2"));
    assert!(
        normalise(&ran.stdout, dir.path()).contains("export KEY='v 2'"),
        "{}",
        ran.stderr
    );
    let ran = with(&plain, None);
    assert_eq!(ran.output.status.code().unwrap_or(-1), 2);
    assert!(
        ran.stderr
            .contains("--env KEY takes its value from this shell, and KEY is not set here"),
        "{}",
        ran.stderr
    );
}

#[test]
fn an_env_without_a_value_comes_from_the_command_line() {
    let task = "run: echo $KEY\nenvs:\n  KEY:\n";
    let (_dir, ran) = dry_run_task(task, &[]);
    assert_eq!(ran.output.status.code().unwrap_or(-1), 2);
    assert!(
        ran.stderr.contains("task.yaml:3: envs.KEY: has no value"),
        "{}",
        ran.stderr
    );
    let (dir, ran) = dry_run_task(task, &["--env", "KEY=v"]);
    assert_eq!(ran.output.status.code().unwrap_or(-1), 0, "{}", ran.stderr);
    assert!(normalise(&ran.stdout, dir.path()).contains("export KEY=v"));
}

#[test]
fn bad_task_files_name_the_line_and_field_and_submit_nothing() {
    let cases = [
        (
            "run: x\nimage_id: docker:ubuntu\n",
            "task.yaml:2: image_id: ",
        ),
        (
            "run: x\nresources:\n  use_spot: true\n",
            "task.yaml:3: resources.use_spot: ",
        ),
        (
            "run: x\nresources:\n  accelerators: A100:0.5\n",
            "task.yaml:3: resources.accelerators: ",
        ),
        (
            "run: x\nresources:\n  accelerators: {A100: many}\n",
            "task.yaml:3: resources.accelerators: `A100:many` is not a GPU count",
        ),
        (
            "run: x\nresources:\n  memory: lots\n",
            "task.yaml:3: resources.memory: ",
        ),
        (
            "run: x\nfile_mounts:\n  /data: s3://bucket\n",
            "task.yaml:3: file_mounts./data: buckets",
        ),
        ("run: x\nnum_nodes: 0\n", "task.yaml:2: num_nodes: "),
        ("run: x\nname: a/b\n", "task.yaml:2: name: "),
        (
            "run: x\ndepends_on:\n  b: [a]\n",
            "task.yaml:2: depends_on: a graph of tasks goes in a pipeline's first document",
        ),
        (
            "run: x\nnum_node: 2\n",
            "task.yaml:2: num_node: not a task field",
        ),
        (
            "run: x\nworkdir: /nonexistent/dir\n",
            "task.yaml:2: workdir: ",
        ),
        (
            "run: x\nrayslurm:\n  partion: lab\n",
            "task.yaml:3: rayslurm.partion: `launch` has no option `--partion`",
        ),
        (
            "run: x\nrayslurm:\n  time: 2 hours\n",
            "task.yaml:3: rayslurm.time: ",
        ),
        (
            "run: x\nrayslurm:\n  num_nodes: many\n",
            "task.yaml:3: rayslurm.num_nodes: ",
        ),
        (
            "run: x\nrayslurm:\n  requeue: 3\n",
            "task.yaml:3: rayslurm.requeue: `--requeue` is a switch",
        ),
        (
            "run: x\nrayslurm:\n  time: true\n",
            "task.yaml:3: rayslurm.time: `--time` takes a value",
        ),
        ("run: [unclosed\n", "task.yaml:1:6: not valid YAML"),
    ];
    for (task, needle) in cases {
        let (dir, ran) = dry_run_task(task, &[]);
        assert_eq!(
            ran.output.status.code().unwrap_or(-1),
            2,
            "{task}: {}",
            ran.stderr
        );
        assert!(ran.stderr.starts_with("error: "), "{}", ran.stderr);
        assert!(ran.stderr.contains(needle), "{needle}: {}", ran.stderr);
        assert!(!state(dir.path()).exists(), "{task}: wrote the state tree");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{task}: wrote a file");
    }
}

/// Regression: YAML that did not parse was reported at line 0, though the parser knew where.
#[test]
fn invalid_yaml_is_reported_at_its_line_and_column() {
    let (_dir, ran) = dry_run_task("name: x\nsetup: |\n  echo hi\nrun: [echo, hi\n", &[]);
    assert_eq!(ran.output.status.code(), Some(2), "{}", ran.stderr);
    insta::assert_snapshot!("error_invalid_yaml", ran.transcript());
    let (_dir, ran) = dry_run_task("name: x\nrun: echo\n  bad: indent\n", &[]);
    assert!(
        ran.stderr
            .starts_with("error: task.yaml:3:6: not valid YAML: mapping values"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_missing_task_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    launch_in(dir.path(), &["nope.yaml", "--dry-run"])
        .expect_status(2)
        .expect_stderr_contains("cannot read task file `nope.yaml`")
        .run();
}

#[test]
fn up_reads_a_task_file_for_the_clusters_nodes_and_setup() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cluster.yaml"),
        "num_nodes: 3\nresources:\n  accelerators: H100:8\nsetup: echo hi\nrun: never run by up\nrayslurm:\n  idle_timeout: 30m\n",
    )
    .unwrap();
    let ran = run_offline(
        dir.path(),
        &["up", "mycl", "cluster.yaml", "--dry-run", "-n", "2"],
        0,
    );
    let script = normalise(&ran.stdout, dir.path());
    for line in [
        "#SBATCH --job-name=mycl",
        "#SBATCH --nodes=2",
        "#SBATCH --gpus-per-task=H100:8",
        "  --setup 'echo hi' \\",
        "  --idle-timeout 1800 \\",
    ] {
        assert!(script.contains(line), "{line}: {script}");
    }
    assert!(!script.contains("never run by up"), "{script}");
    assert!(!script.contains("--per-node"), "{script}");
    // A cluster runs in the directory it is started from, workdir or not.
    assert!(!script.contains("--snapshot"), "{script}");
    assert!(!ran.stderr.contains(NO_WORKDIR), "{}", ran.stderr);
}

/// A task file's `file_mounts` given to `up`: placed on every node of the cluster with no
/// workdir of its own (`--file-mounts-only`, without the empty workdir `launch` gets); one
/// relative to a workdir is refused at its line, nothing written.
#[test]
fn up_places_a_task_files_file_mounts_and_refuses_a_relative_one_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let run = |code: i32| {
        run_offline(
            dir.path(),
            &["up", "mycl", "cluster.yaml", "--dry-run"],
            code,
        )
    };
    std::fs::write(
        dir.path().join("cluster.yaml"),
        "resources: {cpus: 1}\nfile_mounts:\n  ~/cfg: ./data\n  /inputs: ./data\n",
    )
    .unwrap();
    let ran = run(0);
    let script = normalise(&ran.stdout, dir.path());
    for line in ["  --file-mounts-only \\", "  --snapshot "] {
        assert!(script.contains(line), "{line}: {script}");
    }
    for said in [
        "to `~/cfg` under your home on each node",
        "to `/inputs` shown on each node in a private view of its filesystem",
    ] {
        assert!(ran.stderr.contains(said), "{said}: {}", ran.stderr);
    }
    assert!(!ran.stderr.contains(NO_WORKDIR), "{}", ran.stderr);
    std::fs::write(
        dir.path().join("cluster.yaml"),
        "resources: {cpus: 1}\nfile_mounts:\n  /inputs: ./data\n  data: ./data\n",
    )
    .unwrap();
    let jobs = || std::fs::read_dir(state(dir.path()).join("jobs")).map_or(0, Iterator::count);
    let before = jobs();
    let ran = run(2);
    assert!(
        ran.stderr.contains("cluster.yaml:4: file_mounts.data: a cluster's nodes have no workdir for the relative destination `data`: write `~/data`"),
        "{}",
        ran.stderr
    );
    assert_eq!(jobs(), before, "nothing written");
}

/// A file with nothing to run (SkyPilot starts a cluster of it and keeps it): `launch` says to
/// `up` it, submitting nothing; `up` takes its `autostop` as the cluster's idle timeout, and
/// SkyPilot's forms of it (`true` is 5 minutes, `{idle_minutes: N}`) alike.
#[test]
fn a_file_with_nothing_to_run_is_a_cluster_of_up_whose_autostop_is_its_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], code: i32| run_offline(dir.path(), args, code);
    for (autostop, timeout) in [
        ("\n    idle_minutes: 7", "420"),
        (" true", "300"),
        (" 90s", "90"),
    ] {
        std::fs::write(
            dir.path().join("dev.yaml"),
            format!("resources:\n  autostop:{autostop}\n"),
        )
        .unwrap();
        let ran = run(&["up", "dev", "dev.yaml", "--dry-run"], 0);
        let want = format!("  --idle-timeout {timeout} \\");
        assert!(ran.stdout.contains(&want), "{want}: {}", ran.stdout);
    }
    let jobs = || std::fs::read_dir(state(dir.path()).join("jobs")).map_or(0, Iterator::count);
    let before = jobs();
    let ran = run(&["launch", "dev.yaml", "--dry-run"], 2);
    for needle in [
        "error: `dev.yaml` has nothing to run (no `run:` or `setup:`)",
        "`rayslurm up NAME dev.yaml`",
    ] {
        assert!(ran.stderr.contains(needle), "{needle}: {}", ran.stderr);
    }
    assert_eq!(jobs(), before, "nothing written");
}

/// `rayslurm ARGS` in `dir` with a state directory of its own there, no config file and Slurm
/// unreachable, expected to exit `code`.
fn run_offline(dir: &Path, args: &[&str], code: i32) -> crate::harness::Ran {
    let no_slurm = slurm_unreachable();
    crate::harness::rayslurm(args.iter().copied())
        .cwd(dir)
        .env("RAYSLURM_STATE_DIR", state(dir))
        .env("RAYSLURM_CONFIG", "/dev/null")
        .shims(no_slurm.path())
        .expect_status(code)
        .run()
}

/// What a launch without a workdir says on stderr.
const NO_WORKDIR: &str = "no workdir: on each node, setup and command start in a new, empty directory of its own in the node's /tmp";

/// A task without `workdir:` gets `--empty-workdir`: the script copies the run's (empty)
/// snapshot to each node's disk, where setup and run start, as SkyPilot's nodes each start in
/// a directory of their own.
#[test]
fn a_task_without_a_workdir_starts_each_node_in_an_empty_directory_of_its_own() {
    let task = "num_nodes: 2\nsetup: git clone /srv/repo code\nrun: cd code && ls\n";
    let (dir, ran) = dry_run_task(task, &[]);
    assert_eq!(ran.output.status.code(), Some(0), "{}", ran.stderr);
    let script = normalise(&ran.stdout, dir.path());
    assert!(
        regex::Regex::new(r"(?m)^  --snapshot \[STATE\]/jobs/task_\S+\.d/snapshot \\$")
            .unwrap()
            .is_match(&script),
        "{script}"
    );
    assert!(script.contains("  --per-node \\"), "{script}");
    assert!(ran.stderr.contains(NO_WORKDIR), "{}", ran.stderr);
    assert!(!ran.stderr.contains("snapshot of"), "{}", ran.stderr);
    // A dry run writes no snapshot, not even an empty one.
    let made = std::fs::read_dir(jobs(dir.path()))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".d"))
        .count();
    assert_eq!(made, 0);
}

/// Where the nodes start: in their own copy of a `workdir:` (or of `--workdir`/`--snapshot`
/// typed), in an empty directory, or, as the file's own section may say, in the submission
/// directory itself.
#[test]
fn the_file_or_the_command_line_says_where_the_nodes_start() {
    let cases: [(&str, &[&str], bool); 7] = [
        ("run: ls\n", &[], true),
        ("run: ls\nrayslurm:\n  ray_job: true\n", &[], true),
        ("run: ls\nworkdir: .\n", &[], false),
        ("run: ls\n", &["--workdir", "."], false),
        ("run: ls\n", &["--snapshot"], false),
        ("run: ls\nrayslurm:\n  snapshot: true\n", &[], false),
        ("run: ls\nrayslurm:\n  empty_workdir: false\n", &[], false),
    ];
    for (task, args, empty) in cases {
        let (_dir, ran) = dry_run_task(task, args);
        assert_eq!(ran.output.status.code(), Some(0), "{task}: {}", ran.stderr);
        assert_eq!(ran.stderr.contains(NO_WORKDIR), empty, "{task} {args:?}");
        let snapshot = ran.stdout.contains("  --snapshot ");
        let in_place = task.contains("empty_workdir: false");
        assert_eq!(snapshot, !in_place, "{task} {args:?}: {}", ran.stdout);
    }
    // Without a task file nothing changes: setup and command run in the submission directory.
    let dir = tempfile::tempdir().unwrap();
    launch_in(
        dir.path(),
        &[
            "--dry-run",
            "--exp-name=x",
            "--per-node",
            "--setup=make",
            "--command=ls",
        ],
    )
    .env("RAYSLURM_CONFIG", "/dev/null")
    .expect_status(0)
    .expect_stdout_lacks("--snapshot")
    .expect_stderr_lacks(NO_WORKDIR)
    .run();
}

/// Submitted, the empty snapshot is a private directory of the run's, and the run's record
/// names no snapshot (there is no code in it).
#[test]
fn a_submitted_task_without_a_workdir_gets_an_empty_private_snapshot() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let shims = dir.path().join(".shims");
    std::fs::create_dir(&shims).unwrap();
    crate::harness::shim(&shims, "sbatch", "echo 4343");
    // `status` asks Slurm of the job: still waiting.
    crate::harness::shim(
        &shims,
        "squeue",
        "echo \"4343|PENDING|Resources|0:00|1|$(date +%Y-%m-%dT%H:%M:%S)|\"",
    );
    std::fs::write(dir.path().join("code.py"), "not copied").unwrap();
    std::fs::write(dir.path().join("task.yaml"), "name: empty\nrun: ls\n").unwrap();
    launch_in(dir.path(), &["task.yaml"])
        .env("RAYSLURM_CONFIG", "/dev/null")
        .shims(&shims)
        .expect_status(0)
        .expect_stdout("4343\n")
        .expect_stderr_contains(NO_WORKDIR)
        .run();
    let snap = run_dir(dir.path()).join("snapshot");
    assert_eq!(std::fs::read_dir(&snap).unwrap().count(), 0);
    let mode = std::fs::metadata(&snap).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let status = crate::harness::rayslurm(["status", "--json", "empty"])
        .cwd(dir.path())
        .env("RAYSLURM_STATE_DIR", state(dir.path()))
        .shims(&shims)
        .run()
        .json();
    assert_eq!(status[0]["job_id"], "4343", "{status}");
    assert!(status[0]["snapshot"].is_null(), "{status}");
}
