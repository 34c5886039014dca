//! `launch`: rendered scripts (snapshots), bad input, Slurm's spellings, the sbatch paths (fake
//! `sbatch` on PATH: a real cluster cannot easily fail on demand), `--again` and `--snapshot`
//! on the login side and end to end. The helpers here serve every feature's launch tests.

use std::path::Path;

use crate::harness::{Run, filter_stamps, rayslurm};

mod again;
mod bad_input;
mod code_snapshot;
mod dry_run_asks_slurm;
mod e2e_again;
mod e2e_code_snapshot;
mod e2e_dry_run_asks_slurm;
mod e2e_secrets;
mod gpus;
mod node_copy;
mod pruning;
mod scripts;
mod secrets;
mod slurm_spellings;
mod submission;
mod templates;

/// The private tree of a test's launches: hidden inside its working directory.
pub(crate) fn state(dir: &Path) -> std::path::PathBuf {
    dir.join(".state")
}

/// Where a test's launches write their scripts, logs and run directories.
pub(crate) fn jobs(dir: &Path) -> std::path::PathBuf {
    state(dir).join("jobs")
}

/// The private directory of the one run launched in `dir`.
pub(crate) fn run_dir(dir: &Path) -> std::path::PathBuf {
    std::fs::read_dir(jobs(dir))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().ends_with(".d"))
        .expect("the run's private directory")
        .path()
}

/// Replaces what changes between runs: the directory, times, the binary's build and digest.
pub(crate) fn normalise(script: &str, dir: &Path) -> String {
    let s = script.replace(&state(dir).display().to_string(), "[STATE]");
    let s = s.replace(&dir.display().to_string(), "[DIR]");
    let s = regex::Regex::new(r"\b[0-9a-f]{64}\b")
        .unwrap()
        .replace_all(&s, "[SHA256]")
        .into_owned();
    let s = filter_stamps(&s);
    let s = regex::Regex::new(r"at \d{4}-\d\d-\d\dT[^ ]+\.")
        .unwrap()
        .replace_all(&s, "at [TIME].")
        .into_owned();
    regex::Regex::new(r"rayslurm-[0-9.]+-[0-9a-f]{16}")
        .unwrap()
        .replace_all(&s, "rayslurm-[BUILD]")
        .into_owned()
}

/// `rayslurm launch ARGS` in `dir`, its launches' private tree hidden inside it.
pub(crate) fn launch_in(dir: &Path, args: &[&str]) -> Run {
    rayslurm(std::iter::once("launch").chain(args.iter().copied()))
        .cwd(dir)
        .env("RAYSLURM_STATE_DIR", state(dir))
}

/// Runs a dry-run launch in a fresh directory and returns the normalised script.
pub(crate) fn dry_run(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut argv = vec!["--dry-run", "--exp-name", "exp"];
    argv.extend_from_slice(args);
    let ran = launch_in(dir.path(), &argv).expect_status(0).run();
    normalise(&ran.stdout, dir.path())
}

/// Files in a directory, hidden ones (the binary copy) excluded.
pub(crate) fn visible_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}
