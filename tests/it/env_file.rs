//! `--env-file FILE` of `launch` and `up` (and `exec`, in `exec.rs`): values reach the
//! script's `export` lines without being on the command line; a bad line is `FILE:LINE: why`,
//! exit 2, with no script written and no value printed; `-v` never echoes a value.

use std::path::Path;

use crate::harness::{rayslurm, shim, text, transcript};

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
        let out = rayslurm(&args).cwd(dir.path()).output();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{command}: {stderr}");
        for line in [
            format!("export API_KEY={SECRET}\n"),
            "export SEED=1\n".to_owned(),
            "export MODE=flag\n".to_owned(),
        ] {
            assert!(stdout.contains(&line), "{command}: {line} in {stdout}");
        }
        assert!(!stdout.contains("MODE=file"), "{command}: {stdout}");
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
    let out = rayslurm(args).cwd(dir.path()).output();
    let shown = transcript(&args, &out);
    assert!(!shown.contains(SECRET), "{shown}");
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
    let out = rayslurm(args).cwd(dir.path()).output();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot read --env-file `none.env`"),
        "{stderr}"
    );
}

/// `-v` echoes sbatch's command line: the script's path, never the values in it.
#[test]
fn verbose_never_echoes_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let shims = tempfile::tempdir().unwrap();
    shim(shims.path(), "sbatch", "echo 4242");
    shim(shims.path(), "squeue", "true");
    std::fs::write(dir.path().join("s.env"), format!("API_KEY={SECRET}\n")).unwrap();
    let out = rayslurm([
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
    .output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("sbatch"), "echoes sbatch: {stderr}");
    for secret in [SECRET, "flag-secret"] {
        assert!(!stderr.contains(secret), "{stderr}");
        assert!(!stdout.contains(secret), "{stdout}");
    }
}
