//! The Python package's unit tests (`tests/wheel/test_*.py`), run against the source tree:
//! `python/` on PYTHONPATH and the binary under test first on PATH, so that `cargo test`
//! checks the package as it is, not only `tests/wheel/check.sh` on a built wheel.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::{bin, text};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `python -m unittest discover` of `dir`'s files matching `pattern` (and of their tests whose
/// `module.Class.test` name matches `only`, unittest's `-k`), from `cwd`, with the source tree's
/// package and the binary under test; the developer's RAYSLURM_* settings are removed, `env`
/// added.
pub(crate) fn unittest(
    python: &Path,
    dir: &Path,
    pattern: &str,
    only: Option<&str>,
    cwd: &Path,
    env: &[(&str, OsString)],
) -> Output {
    let mut path = OsString::from(bin().parent().unwrap());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut cmd = Command::new(python);
    cmd.args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(dir)
        .arg("-t")
        .arg(dir)
        .args(["-p", pattern])
        .args(only.map(|k| ["-k", k]).into_iter().flatten())
        .current_dir(cwd)
        .env("PATH", path)
        .env("PYTHONPATH", repo().join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("RAYSLURM_") {
            cmd.env_remove(&key);
        }
    }
    cmd.env("RAYSLURM_CONFIG", "/dev/null")
        .envs(crate::harness::LAB_RAY_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("python runs")
}

/// Asserts a unittest run passed, showing its output if not; returns its report (stderr).
pub(crate) fn passed(out: &Output) -> String {
    let (stdout, stderr) = text(out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stderr
}

#[test]
fn the_python_package_unit_tests_pass_on_the_source_tree() {
    let scratch = tempfile::tempdir().unwrap();
    // The test of the wheel's installed binary runs in tests/wheel/check.sh: skipped on purpose.
    let out = unittest(
        Path::new("python3"),
        &repo().join("tests/wheel"),
        "test_*.py",
        None,
        scratch.path(),
        &[("RAYSLURM_TEST_WHEEL", "0".into())],
    );
    let report = passed(&out);
    // That one alone is skipped, and the run's list of skips says so.
    let skipped: Vec<&str> = report
        .lines()
        .filter(|l| l.contains(" ... skipped"))
        .collect();
    assert_eq!(skipped.len(), 1, "{report}");
    assert!(
        skipped[0].starts_with("test_finds_the_binary_the_wheel_installed_in_the_scripts_dir"),
        "{report}"
    );
    crate::harness::skipped_on_purpose(
        "python: test_finds_the_binary_the_wheel_installed_in_the_scripts_dir",
        "the source tree's run; tests/wheel/check.sh runs it on the installed wheel",
        "RAYSLURM_TEST_WHEEL",
    );
    // Each file ran: a discovery that found nothing would pass too.
    for test in [
        "test_a_list_command_is_one_quoted_command",
        "test_launch_status_wait",
        "test_a_call_runs_here_with_the_same_interface",
    ] {
        assert!(report.contains(test), "{report}");
    }
    assert!(report.contains("\nOK"), "{report}");
}
