//! Secrets on the login side: a `--secret` (or a task file's `secrets:`) whose value is not
//! given is refused naming it and both ways to give it, for `launch`, `up` and `exec` alike;
//! a task file's `secrets.KEY` without a value takes a `--secret` only (an `--env` would show
//! it); a dry run, `-v` included, shows `***`. The values on a real run, and `exec --secret`'s
//! way to the job: `e2e_secrets.rs`.

use std::path::Path;

use super::launch_in;
use crate::harness::rayslurm;

/// A variable no shell has.
const UNSET: &str = "RAYSLURM_TEST_SURELY_UNSET_SECRET";

/// A PATH without Slurm: the dry runs here ask no Slurm (rayslurm is run by its path).
fn no_slurm(dir: &Path) -> std::path::PathBuf {
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    empty
}

#[test]
fn a_secret_without_a_value_is_refused_naming_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let said =
        format!("--secret {UNSET} takes its value from this shell, and {UNSET} is not set here");
    let hint = format!("hint: export {UNSET}=... first, or write --secret {UNSET}=VALUE");
    for (case, args) in [
        (
            "launch",
            vec![
                "launch",
                "--dry-run",
                "--exp-name",
                "x",
                "--command",
                "true",
            ],
        ),
        ("up", vec!["up", "c", "--dry-run"]),
        ("exec", vec!["exec", "c", "--command", "true"]),
    ] {
        let mut argv = args.clone();
        argv.extend(["--secret", UNSET]);
        rayslurm(argv)
            .case(case)
            .cwd(dir.path())
            .env_remove(UNSET)
            .env("RAYSLURM_STATE_DIR", super::state(dir.path()))
            .env("PATH", no_slurm(dir.path()))
            .expect_status(2)
            .expect_stderr_contains(&said)
            .expect_stderr_contains(&hint)
            .run();
    }
    assert!(!super::jobs(dir.path()).exists(), "a script was written");
}

#[test]
fn a_task_files_secret_without_a_value_takes_a_secret_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("task.yaml"),
        "run: echo $TOKEN\nsecrets:\n  TOKEN:\nenvs:\n  MODE:\n",
    )
    .unwrap();
    let refused = "task.yaml:3: secrets.TOKEN: has no value: give it with `--secret TOKEN` (its value in this shell) or `--secret TOKEN=VALUE`";
    for extra in [&[][..], &["--env", "TOKEN=v1234567", "--env", "MODE=m"]] {
        let mut argv = vec!["task.yaml", "--dry-run"];
        argv.extend_from_slice(extra);
        launch_in(dir.path(), &argv)
            .env("PATH", no_slurm(dir.path()))
            .expect_status(2)
            .expect_stderr_contains(refused)
            .expect_stderr_lacks("v1234567")
            .run();
    }
    // The env without a value names `--env`.
    launch_in(dir.path(), &["task.yaml", "--dry-run", "--secret", "TOKEN=v1234567"])
        .env("PATH", no_slurm(dir.path()))
        .expect_status(2)
        .expect_stderr_contains(
            "task.yaml:5: envs.MODE: has no value: give it with `--env MODE` (its value in this shell) or `--env MODE=VALUE`",
        )
        .run();
    // Given from this shell, as SkyPilot's `--secret TOKEN`: shown as `***`, `-v` too.
    rayslurm([
        "-v",
        "launch",
        "task.yaml",
        "--dry-run",
        "--secret",
        "TOKEN",
        "--env",
        "MODE=m",
    ])
    .cwd(dir.path())
    .env("RAYSLURM_STATE_DIR", super::state(dir.path()))
    .env("TOKEN", "from-the-shell-42")
    .env("PATH", no_slurm(dir.path()))
    .expect_status(0)
    .expect_stdout_contains("export TOKEN='***'")
    .expect_stdout_contains("export MODE=m")
    .expect_stdout_lacks("from-the-shell-42")
    .expect_stderr_lacks("from-the-shell-42")
    .run();
    // `exec` takes it the same way, before it asks any cluster.
    rayslurm(["exec", "c", "task.yaml", "--env", "MODE=m"])
        .cwd(dir.path())
        .env("RAYSLURM_STATE_DIR", super::state(dir.path()))
        .env("PATH", no_slurm(dir.path()))
        .expect_status(2)
        .expect_stderr_contains(refused)
        .run();
}
