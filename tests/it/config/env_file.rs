//! `--env-file FILE` of `launch` and `up` (and `exec`, in `clusters/exec.rs`): values reach the
//! script's `export` lines without being on the command line; a bad line is `FILE:LINE: why`,
//! exit 2, with no script written and no value printed; `-v` never echoes a value.

use std::path::Path;

use crate::harness::{rayslurm, shim};

const SECRET: &str = "sk-live-0123456789";

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn values_from_the_file_reach_the_script_and_env_wins() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("secrets.env");
    std::fs::write(
        &file,
        format!("# keys\nexport API_KEY='{SECRET}'\n\nSEED=1\nMODE=file\n"),
    )
    .unwrap();
    for command in ["launch", "up"] {
        let mut args = vec![command];
        if command == "launch" {
            args.extend(["--exp-name", "x", "--command", "true"]);
        } else {
            args.extend(["c1", "--num-nodes", "1"]);
        }
        args.extend([
            "--dry-run",
            "--env-file",
            "secrets.env",
            "--env",
            "MODE=flag",
        ]);
        rayslurm(&args)
            .cwd(dir.path())
            .expect_status(0)
            .expect_stdout_contains(&format!("export API_KEY={SECRET}\n"))
            .expect_stdout_contains("export SEED=1\n")
            .expect_stdout_contains("export MODE=flag\n")
            .expect_stdout_lacks("MODE=file")
            .run();
    }
}

#[test]
fn a_bad_line_exits_2_names_file_and_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.env"),
        format!("OK=1\nAPI_KEY {SECRET}\n"),
    )
    .unwrap();
    let args = [
        "launch",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--env-file",
        "bad.env",
    ];
    let shown = rayslurm(args)
        .cwd(dir.path())
        .expect_stdout_lacks(SECRET)
        .expect_stderr_lacks(SECRET)
        .run()
        .transcript();
    insta::assert_snapshot!("error_env_file_bad_line", shown);
    assert_eq!(names_in(dir.path()), ["bad.env"]);

    let args = [
        "launch",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--env-file",
        "none.env",
    ];
    rayslurm(args)
        .cwd(dir.path())
        .expect_status(2)
        .expect_stderr_contains("cannot read --env-file `none.env`")
        .run();
}

/// `-v` echoes sbatch's command line: the script's path, never the values in it.
#[test]
fn verbose_never_echoes_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let shims = tempfile::tempdir().unwrap();
    shim(shims.path(), "sbatch", "echo 4242");
    shim(shims.path(), "squeue", "true");
    std::fs::write(dir.path().join("s.env"), format!("API_KEY={SECRET}\n")).unwrap();
    rayslurm([
        "-v",
        "launch",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--env-file",
        "s.env",
        "--env",
        "OTHER=flag-secret",
    ])
    .cwd(dir.path())
    .shims(shims.path())
    .expect_status(0)
    // It echoes sbatch, not the values.
    .expect_stderr_contains("sbatch")
    .expect_stderr_lacks(SECRET)
    .expect_stdout_lacks(SECRET)
    .expect_stderr_lacks("flag-secret")
    .expect_stdout_lacks("flag-secret")
    .run();
}

/// `--secret KEY=VALUE` (or `KEY`, its value in this shell) is set as `--env` sets it, in the
/// private script only: a dry run shows `***`, and a task file's `secrets:` are secrets too.
#[test]
fn a_secret_reaches_only_the_private_script_and_a_dry_run_shows_stars() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::write(
        dir.path().join("task.yaml"),
        format!("run: echo hi\nsecrets:\n  FILE_TOKEN: {SECRET}-file\n  SHELL_TOKEN:\n"),
    )
    .unwrap();
    let plain = ["launch", "--exp-name", "x", "--command", "true"];
    let task = ["launch", "task.yaml"];
    let api = format!("API_KEY={SECRET}");
    for (args, keys) in [
        (&plain[..], &["API_KEY", "SHELL_TOKEN"][..]),
        (&task[..], &["FILE_TOKEN", "SHELL_TOKEN"][..]),
    ] {
        let mut argv = args.to_vec();
        argv.extend(["--dry-run", "--secret", &api]);
        argv.extend(["--secret", "SHELL_TOKEN"]);
        let ran = rayslurm(&argv)
            .cwd(dir.path())
            .env("RAYSLURM_STATE_DIR", &state)
            .env("RAYSLURM_CONFIG", "/dev/null")
            .env("SHELL_TOKEN", format!("{SECRET}-shell"))
            .expect_status(0)
            .expect_stdout_lacks(SECRET)
            .expect_stderr_lacks(SECRET)
            .run();
        for key in keys {
            assert!(
                ran.stdout.contains(&format!("export {key}='***'\n")),
                "{key}: {}",
                ran.stdout
            );
        }
        // The script itself, private to the user, has the values.
        let script = ran.stderr.split("dry run: wrote ").nth(1).unwrap();
        let script = script.split(" (not submitted").next().unwrap();
        let text = std::fs::read_to_string(script).unwrap();
        assert!(
            text.contains(&format!("export SHELL_TOKEN={SECRET}-shell\n")),
            "{text}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(script).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{script}: {mode:o}");
    }
}
