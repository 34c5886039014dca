//! `--snapshot` and `--workdir` at submission: the workdir copied into the run's private
//! directory (git's files in a repository), named in the run's record and `status --json`;
//! a dry run writes none; a missing workdir or one over `--snapshot-max-size` is refused with
//! nothing written or submitted.

use std::path::Path;
use std::process::Command;

use super::{jobs, launch_in, run_dir, state};
use crate::harness::{rayslurm, shim};

/// A project directory with a fake `sbatch` (which leaves a mark when it is called).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let shims = dir.path().join(".shims");
    std::fs::create_dir(&shims).unwrap();
    shim(
        &shims,
        "sbatch",
        "touch \"$(dirname \"$0\")/called\"; echo 4242",
    );
    dir
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn a_snapshot_of_a_git_workdir_holds_its_files_and_is_recorded() {
    let dir = project();
    let code = dir.path().join("code");
    std::fs::create_dir_all(code.join("data")).unwrap();
    std::fs::write(code.join("train.py"), "print('v1')\n").unwrap();
    std::fs::write(code.join(".gitignore"), "data/\n").unwrap();
    std::fs::write(code.join("data/big.bin"), "ignored").unwrap();
    std::os::unix::fs::symlink("train.py", code.join("main.py")).unwrap();
    git(&code, &["init", "-q"]);
    git(&code, &["add", "."]);
    git(&code, &["commit", "-qm", "one"]);
    std::fs::write(code.join("untracked.py"), "new").unwrap();
    launch_in(
        dir.path(),
        &["--exp-name", "s", "--command", "true", "--workdir", "code"],
    )
    .shims(&dir.path().join(".shims"))
    .expect_status(0)
    .expect_stdout("4242\n")
    .expect_stderr_contains("snapshot of ")
    .expect_stderr_contains("4 files")
    .run();
    let snap = run_dir(dir.path()).join("snapshot");
    assert_eq!(
        std::fs::read_to_string(snap.join("train.py")).unwrap(),
        "print('v1')\n"
    );
    assert!(snap.join("untracked.py").is_file());
    assert_eq!(
        std::fs::read_link(snap.join("main.py")).unwrap(),
        Path::new("train.py")
    );
    assert!(!snap.join("data").exists(), "an ignored file was copied");
    // The record names it, with its commit; the copy has changes (the untracked file). Slurm
    // has the job waiting.
    shim(
        &dir.path().join(".shims"),
        "squeue",
        "echo \"4242|PENDING|Resources|0:00|1|$(date +%Y-%m-%dT%H:%M:%S)|\"",
    );
    let status = rayslurm(["status", "--json", "s"])
        .cwd(dir.path())
        .env("RAYSLURM_STATE_DIR", state(dir.path()))
        .shims(&dir.path().join(".shims"))
        .run()
        .json();
    let snapshot = &status[0]["snapshot"];
    assert_eq!(snapshot["path"], snap.display().to_string(), "{status}");
    assert_eq!(snapshot["commit"].as_str().map(str::len), Some(40));
    assert_eq!(snapshot["dirty"], true);
    assert_eq!(snapshot["files"], 4);
}

#[test]
fn a_dry_run_writes_no_snapshot() {
    let dir = project();
    std::fs::write(dir.path().join("f.py"), "x").unwrap();
    let ran = launch_in(
        dir.path(),
        &[
            "--dry-run",
            "--exp-name",
            "s",
            "--command",
            "true",
            "--snapshot",
        ],
    )
    .expect_status(0)
    .run();
    assert!(ran.stdout.contains("  --snapshot "), "{}", ran.stdout);
    let made: Vec<_> = std::fs::read_dir(jobs(dir.path()))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".d"))
        .collect();
    assert!(made.is_empty(), "{made:?}");
}

#[test]
fn a_snapshot_over_its_limit_is_refused_and_nothing_is_submitted() {
    let dir = project();
    std::fs::write(dir.path().join("weights.bin"), vec![0u8; 3 << 20]).unwrap();
    launch_in(
        dir.path(),
        &[
            "--exp-name",
            "s",
            "--command",
            "true",
            "--snapshot",
            "--snapshot-max-size",
            "2M",
        ],
    )
    .shims(&dir.path().join(".shims"))
    .expect_status(2)
    .expect_stderr_contains("error: the snapshot of ")
    .expect_stderr_contains("would be 3.0 MB (2 files)")
    .expect_stderr_contains("more than --snapshot-max-size 2.0 MB; nothing was submitted")
    .expect_stderr_contains(".gitignore")
    .run();
    assert!(!dir.path().join(".shims/called").exists(), "sbatch ran");
    assert!(!state(dir.path()).exists(), "something was written");
}

#[test]
fn a_missing_workdir_or_a_bad_size_is_refused() {
    for (args, needle) in [
        (
            &["--workdir", "/nonexistent/code"][..],
            "error: --workdir `/nonexistent/code` is not a directory",
        ),
        (
            &["--snapshot", "--snapshot-max-size", "lots"][..],
            "invalid --snapshot-max-size `lots`",
        ),
    ] {
        let dir = project();
        let mut argv = vec!["--exp-name", "s", "--command", "true"];
        argv.extend_from_slice(args);
        launch_in(dir.path(), &argv)
            .shims(&dir.path().join(".shims"))
            .expect_status(2)
            .expect_stderr_contains(needle)
            .run();
        assert!(!dir.path().join(".shims/called").exists(), "sbatch ran");
        assert!(!state(dir.path()).exists(), "{args:?} wrote something");
    }
}
