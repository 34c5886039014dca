//! Submitting: a fake `sbatch` on PATH (a real cluster cannot easily fail on demand), the job
//! id alone on stdout, `--json`, a failing or missing sbatch, and dry runs that write the
//! script alone, never overwriting another launch's.

use std::path::Path;

use super::{jobs, launch_in, normalise, state, visible_files};
use crate::harness::{Run, json_keys, rayslurm, shim, text};

#[test]
fn dry_run_writes_the_script_only() {
    let dir = tempfile::tempdir().unwrap();
    launch_in(
        dir.path(),
        &["--dry-run", "--exp-name", "d", "--command", "true"],
    )
    .expect_status(0)
    .expect_stdout_starts_with("#!/bin/bash\n")
    .expect_stderr_contains("dry run: wrote")
    .run();
    // The script in the private tree, and nothing else anywhere: no link to a log to come,
    // no log directory, no binary copy (nor its folder).
    let files = visible_files(&jobs(dir.path()));
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with("d_") && files[0].ends_with(".sh"));
    assert!(visible_files(dir.path()).is_empty());
    let mut tree: Vec<String> = walkdir(&state(dir.path()));
    tree.sort();
    assert_eq!(tree, ["jobs", &format!("jobs/{}", files[0])]);
}

/// Regression: the dry run suggested `sbatch SCRIPT`, which makes a run no record names (and
/// that writes into the log and state the script names); it says to run the same command
/// without --dry-run, as `launch`, `up` and `launch --again` each take it.
#[test]
fn a_dry_run_says_how_to_submit_a_recorded_run() {
    let dir = tempfile::tempdir().unwrap();
    let ran = launch_in(
        dir.path(),
        &[
            "--dry-run",
            "--json",
            "--exp-name",
            "d",
            "--command",
            "true",
        ],
    )
    .expect_status(0)
    // Its question to Slurm (`sbatch --test-only SCRIPT`) is said; no `sbatch SCRIPT`.
    .expect_stderr_lacks("sbatch /")
    .run();
    let said = normalise(&ran.stderr, dir.path());
    let line = said
        .lines()
        .find(|l| l.starts_with("dry run: "))
        .unwrap_or_else(|| panic!("no dry run line: {said}"));
    insta::assert_snapshot!("dry_run_how_to_submit", line);
    rayslurm(["up", "c", "--dry-run"])
        .cwd(dir.path())
        .env("RAYSLURM_CONFIG", "/dev/null")
        .env("RAYSLURM_STATE_DIR", state(dir.path()))
        .expect_status(0)
        .expect_stderr_contains("run the same command without --dry-run")
        .expect_stderr_lacks("`sbatch")
        .run();
}

/// Every path under `dir`, relative to it.
fn walkdir(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() {
                todo.push(path);
            }
        }
    }
    found
}

#[test]
fn dry_run_json() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--dry-run",
        "--json",
        "--exp-name",
        "d",
        "--command",
        "true",
    ];
    let v = launch_in(dir.path(), &args)
        .expect_json("/job_id", serde_json::Value::Null)
        .expect_json("/submitted", false)
        .run()
        .json();
    assert!(v["script"].as_str().unwrap().ends_with(".sh"));
    assert!(v["log"].as_str().unwrap().ends_with(".log"));
    insta::assert_snapshot!("launch_json_keys", json_keys(&v));
}

/// A fresh directory and `launch --command true ARGS` in it, with a fake `sbatch` running
/// `body` (kept in the directory's `.shims`).
fn launch_with_sbatch(body: &str, args: &[&str]) -> (tempfile::TempDir, Run) {
    let dir = tempfile::tempdir().unwrap();
    let shims = dir.path().join(".shims");
    std::fs::create_dir(&shims).unwrap();
    shim(&shims, "sbatch", body);
    let mut argv = vec!["--command", "true"];
    argv.extend_from_slice(args);
    let run = launch_in(dir.path(), &argv).shims(&shims);
    (dir, run)
}

#[test]
fn submission_prints_only_the_job_id_on_stdout() {
    let (_dir, run) = launch_with_sbatch(
        "[ \"$1\" = --parsable ] && [ -f \"$2\" ] && echo '4242;lab'",
        &["--exp-name", "s"],
    );
    run.expect_status(0)
        .expect_stdout("4242\n")
        .expect_stderr_contains("submitted job 4242")
        .expect_stderr_contains("script: ")
        .expect_stderr_contains("log: ")
        .run();
}

/// `launch --command true ARGS` in a fresh directory with a fake `srun` that says it is Slurm
/// `release` and a fake `sbatch` that records a submission in `.shims/submitted`.
fn launch_on_release(release: &str, args: &[&str]) -> (tempfile::TempDir, Run) {
    let (dir, run) = launch_with_sbatch("touch \"$(dirname \"$0\")/submitted\"; echo 4242", args);
    shim(
        &dir.path().join(".shims"),
        "srun",
        &format!("echo 'slurm {release}'"),
    );
    (dir, run)
}

/// A Slurm without `srun --overlap` is refused before anything is written or submitted; one
/// newer than the tested range is noted, and submitted.
#[test]
fn the_clusters_slurm_release_is_checked_before_submitting() {
    let (dir, run) = launch_on_release("20.02.7", &["--exp-name", "old"]);
    run.expect_status(2)
        .expect_stdout("")
        .expect_stderr_contains("this cluster's Slurm is 20.02")
        .expect_stderr_contains("needs Slurm 20.11 or newer")
        .run();
    assert!(!dir.path().join(".shims/submitted").exists(), "submitted");
    assert_eq!(visible_files(dir.path()), Vec::<String>::new());
    let (dir, run) = launch_on_release("27.05.1", &["--exp-name", "new"]);
    run.expect_status(0)
        .expect_stdout("4242\n")
        .expect_stderr_contains("rayslurm is tested on 22.05 to 26.05")
        .run();
    assert!(dir.path().join(".shims/submitted").exists());
}

#[test]
fn submission_json() {
    let (_dir, run) = launch_with_sbatch("echo 77", &["--json", "--exp-name", "s"]);
    let v = run
        .expect_json("/job_id", "77")
        .expect_json("/exp_name", "s")
        .run()
        .json();
    assert!(Path::new(v["script"].as_str().unwrap()).exists());
    insta::assert_snapshot!("launch_json_keys", json_keys(&v));
}

#[test]
fn sbatch_failure_keeps_the_script_and_shows_the_error() {
    let (dir, run) = launch_with_sbatch(
        "echo 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2; exit 1",
        &["--exp-name", "f"],
    );
    let ran = run
        .expect_status(1)
        .expect_stdout("")
        .expect_stderr_contains("Invalid partition name specified")
        .run();
    let files: Vec<String> = visible_files(&jobs(dir.path()))
        .into_iter()
        .filter(|f| f.ends_with(".sh"))
        .collect();
    assert_eq!(files.len(), 1);
    assert!(
        ran.stderr.contains(&files[0]),
        "names the kept script: {ran}"
    );
    insta::assert_snapshot!(
        "error_sbatch_fails",
        normalise(&ran.transcript(), dir.path())
    );
}

#[test]
fn missing_sbatch_suggests_dry_run_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ran = launch_in(dir.path(), &["--exp-name", "m", "--command", "true"])
        .env("PATH", "/nonexistent")
        .expect_stderr_contains("sbatch")
        .expect_stderr_contains("--dry-run")
        .run();
    assert_ne!(ran.output.status.code(), Some(0), "{ran}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    insta::assert_snapshot!("error_sbatch_missing", ran.transcript());
}

/// Twelve launches at once, some in the same second: each gets a script of its own (the second
/// and later of a second with `-2`, `-3`, ... suffixes) holding exactly what it printed. Twelve,
/// so that two of them usually race for one name between checking it is free and taking it
/// (with the script written by replacing instead of linking to a new name, this test failed in
/// 10 of 12 runs; with six launches, in 2 of 6).
#[test]
fn launches_in_the_same_second_never_overwrite() {
    let stem = regex::Regex::new(r"^same_(\d{4}-\d{6})(?:-(\d+))?\.sh$").unwrap();
    let wrote = regex::Regex::new(r"dry run: wrote (\S+) ").unwrap();
    const LAUNCHES: usize = 12;
    // The launches share a second unless they straddle twelve; should they, try again.
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep.log"), "x").unwrap();
        let start = std::sync::Barrier::new(LAUNCHES);
        let outputs: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..LAUNCHES)
                .map(|_| {
                    s.spawn(|| {
                        let run = rayslurm([
                            "launch",
                            "--dry-run",
                            "--exp-name",
                            "same",
                            "--command",
                            "true",
                        ])
                        .cwd(dir.path())
                        .env("RAYSLURM_STATE_DIR", state(dir.path()));
                        start.wait();
                        run.output()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for out in &outputs {
            assert!(out.status.success(), "{}", text(out).1);
        }
        let scripts: Vec<String> = visible_files(&jobs(dir.path()))
            .into_iter()
            .filter(|f| f.ends_with(".sh"))
            .collect();
        assert_eq!(scripts.len(), LAUNCHES, "{scripts:?}");
        // Nothing was overwritten: each launch's file holds the script that launch printed.
        for out in &outputs {
            let (stdout, stderr) = text(out);
            let path = &wrote.captures(&stderr).expect("names the script")[1];
            let written = std::fs::read_to_string(path).unwrap();
            assert_eq!(written.trim_end(), stdout.trim_end(), "{path}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("keep.log")).unwrap(),
            "x"
        );
        let mut by_second = std::collections::BTreeMap::<String, Vec<u32>>::new();
        for name in &scripts {
            let c = stem.captures(name).unwrap_or_else(|| panic!("{name}"));
            let n = c.get(2).map_or(1, |n| n.as_str().parse().unwrap());
            by_second.entry(c[1].to_owned()).or_default().push(n);
        }
        if by_second.values().all(|ns| ns.len() < 2) {
            continue;
        }
        for ns in by_second.values_mut() {
            ns.sort_unstable();
            let expected: Vec<u32> = (1..=ns.len() as u32).collect();
            assert_eq!(*ns, expected, "{scripts:?}");
        }
        return;
    }
    panic!("{LAUNCHES} launches never shared a second in five tries");
}

/// Regression (reported): the `dry run: wrote ...` line must start a line of its own after the
/// script, on one terminal where stdout and stderr meet.
#[test]
fn dry_run_output_ends_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{} launch --dry-run --exp-name d --command true 2>&1",
            crate::harness::bin().display()
        ))
        .current_dir(dir.path())
        .env("RAYSLURM_CONFIG", "/dev/null")
        .env("RAYSLURM_STATE_DIR", state(dir.path()))
        .output()
        .unwrap();
    let merged = String::from_utf8_lossy(&out.stdout);
    assert!(merged.ends_with('\n'), "{merged:?}");
    assert!(
        merged.lines().any(|l| l.starts_with("dry run: wrote ")),
        "{merged}"
    );
}
