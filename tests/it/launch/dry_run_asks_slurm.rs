//! A dry run asks Slurm whether it would take the job (`sbatch --test-only`), and says so
//! where Slurm cannot be asked: no `sbatch` on PATH, or no answer within the bound
//! (`RAYSLURM_TEST_ONLY_TIMEOUT`). The dry run exits 0 then; `--check` (alone a dry run too)
//! exits 2. Slurm's own answers (a refusal, an estimate) are the lab's: `e2e_dry_run_asks_slurm.rs`.

use std::time::{Duration, Instant};

use super::{jobs, launch_in};
use crate::harness::{rayslurm, shim};

const LAUNCH: &[&str] = &["--exp-name", "d", "--command", "true"];

/// An sbatch that never answers, noting each call in `calls`.
fn silent_sbatch(dir: &std::path::Path) -> std::path::PathBuf {
    let shims = dir.join("shims");
    std::fs::create_dir_all(&shims).unwrap();
    shim(
        &shims,
        "sbatch",
        &format!("echo \"$*\" >> {}/calls\nexec sleep 60", shims.display()),
    );
    shims
}

#[test]
fn a_dry_run_without_sbatch_says_slurm_was_not_asked() {
    let dir = tempfile::tempdir().unwrap();
    // A PATH without sbatch (rayslurm is run by its path).
    let empty = dir.path().join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    launch_in(dir.path(), &[&["--dry-run"], LAUNCH].concat())
        .env("PATH", &empty)
        .expect_status(0)
        .expect_stdout_contains("#SBATCH --job-name=d")
        .expect_stderr_contains(
            "Slurm was not asked whether it would take this job: `sbatch` was not found on PATH",
        )
        .run();
    launch_in(dir.path(), &[&["--dry-run", "--check"], LAUNCH].concat())
        .env("PATH", &empty)
        .expect_status(2)
        .expect_stderr_contains(
            "error: --check: Slurm could not be asked whether it would take this job: `sbatch` was not found on PATH",
        )
        .expect_stderr_contains("hint: run on a Slurm login node")
        .run();
    rayslurm(["up", "c", "--check"])
        .cwd(dir.path())
        .env("RAYSLURM_STATE_DIR", super::state(dir.path()))
        .env("PATH", &empty)
        .expect_status(2)
        .expect_stderr_contains("could not be asked whether it would take this cluster's job")
        .run();
}

/// An sbatch that does not answer is given up on within the bound; `--check` alone is a dry
/// run: only `--test-only` is asked, nothing submitted, no run recorded.
#[test]
fn a_dry_run_gives_up_on_a_silent_slurm_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let shims = silent_sbatch(dir.path());
    let t0 = Instant::now();
    launch_in(dir.path(), &[&["--dry-run"], LAUNCH].concat())
        .shims(&shims)
        .env("RAYSLURM_TEST_ONLY_TIMEOUT", "1")
        .expect_status(0)
        .expect_stderr_contains(
            "Slurm was not asked whether it would take this job: `sbatch --test-only ",
        )
        .expect_stderr_contains("did not answer within 1 s")
        .run();
    launch_in(dir.path(), &[&["--check"], LAUNCH].concat())
        .shims(&shims)
        .env("RAYSLURM_TEST_ONLY_TIMEOUT", "1")
        .expect_status(2)
        .expect_stdout_contains("#SBATCH --job-name=d")
        .expect_stderr_contains("did not answer within 1 s")
        .expect_stderr_contains("RAYSLURM_TEST_ONLY_TIMEOUT=SECS")
        .run();
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "the bound was not kept: {:?}",
        t0.elapsed()
    );
    let calls = std::fs::read_to_string(shims.join("calls")).unwrap();
    assert_eq!(calls.lines().count(), 2, "{calls}");
    assert!(
        calls.lines().all(|c| c.starts_with("--test-only ")),
        "{calls}"
    );
    // Nothing recorded: the private tree has the two scripts and no run record.
    let state = super::state(dir.path());
    assert!(!state.join("runs").exists(), "a run was recorded");
    let logs: Vec<_> = std::fs::read_dir(jobs(dir.path()))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .collect();
    assert!(logs.is_empty(), "a log was made: {logs:?}");
}

#[test]
fn a_bad_test_only_timeout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    launch_in(dir.path(), &[&["--dry-run"], LAUNCH].concat())
        .env("RAYSLURM_TEST_ONLY_TIMEOUT", "soon")
        .expect_status(2)
        .expect_stderr_contains("RAYSLURM_TEST_ONLY_TIMEOUT=`soon` is not a number of seconds")
        .run();
}
