//! `launch --again RUN` (a fake `sbatch`): a new recorded run from RUN's script and binary,
//! under new names, RUN's files untouched; the options that do not go with it refused before
//! anything is written. The real run again is `e2e_runs::a_run_launched_again_*`.

use std::path::Path;

use super::{jobs, launch_in, normalise, state};
use crate::harness::{Ran, shim};

/// A directory with a fake `sbatch` that answers `id` (`.shims`, hidden from the listings).
fn with_sbatch(id: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let shims = dir.path().join(".shims");
    std::fs::create_dir(&shims).unwrap();
    shim(&shims, "sbatch", &format!("echo '{id};lab'"));
    dir
}

fn launch(dir: &Path, sbatch: &str, args: &[&str]) -> Ran {
    shim(
        &dir.join(".shims"),
        "sbatch",
        &format!("echo '{sbatch};lab'"),
    );
    launch_in(dir, args).shims(&dir.join(".shims")).run()
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_run_again_is_a_new_recorded_run_of_the_same_script() {
    let dir = with_sbatch("500");
    let first = launch(
        dir.path(),
        "500",
        &[
            "--json",
            "--exp-name",
            "a",
            "--num-nodes",
            "2",
            "--env",
            "K=v 1",
            "--command",
            "python t.py",
        ],
    );
    assert_eq!(first.output.status.code(), Some(0), "{first}");
    let first = first.json();
    // Another second, so that the new run's names differ from the first's by their time.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let before = snapshot(&jobs(dir.path()));
    let again = launch(dir.path(), "501", &["--again", "500", "--json"]);
    assert_eq!(again.output.status.code(), Some(0), "{again}");
    assert!(
        again.stderr.contains("job 501 runs a (job 500) again"),
        "{again}"
    );
    let again = again.json();
    assert_eq!(again["job_id"], "501");
    assert_eq!(again["exp_name"], "a");
    assert_ne!(again["script"], first["script"]);
    // The first run's files are as they were; the new script is the old one with the new
    // run's names.
    let after = snapshot(&jobs(dir.path()));
    for (path, bytes) in &before {
        assert_eq!(
            after.iter().find(|(p, _)| p == path).map(|(_, b)| b),
            Some(bytes)
        );
    }
    let old = std::fs::read_to_string(first["script"].as_str().unwrap()).unwrap();
    let new = std::fs::read_to_string(again["script"].as_str().unwrap()).unwrap();
    let stem = |v: &serde_json::Value| {
        Path::new(v["script"].as_str().unwrap())
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    assert!(!new.contains(&format!("{}.", stem(&first))), "{new}");
    assert_eq!(old.replace(&stem(&first), &stem(&again)), new);
    assert_eq!(normalise(&old, dir.path()), normalise(&new, dir.path()));
    // Its log is linked from the default log directory, as a launch's is.
    let log = Path::new(again["log"].as_str().unwrap());
    let link = dir
        .path()
        .join("rayslurm-logs")
        .join(log.file_name().unwrap());
    assert_eq!(std::fs::read_link(link).unwrap(), log);
    // Both runs are recorded, each with its own files and the same binary.
    let records: Vec<serde_json::Value> = std::fs::read_dir(state(dir.path()).join("runs"))
        .unwrap()
        .map(|e| {
            serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap()
        })
        .collect();
    assert_eq!(records.len(), 2);
    let of = |job: &str| records.iter().find(|r| r["job_id"] == job).unwrap().clone();
    assert_eq!(of("501")["script"], again["script"]);
    assert_eq!(of("501")["command"], "python t.py");
    assert_eq!(of("501")["num_nodes"], 2);
    assert_eq!(of("501")["binary"], of("500")["binary"]);
}

#[test]
fn a_dry_run_again_writes_its_script_alone() {
    let dir = with_sbatch("600");
    let first = launch(dir.path(), "600", &["--exp-name", "d", "--command", "true"]);
    assert_eq!(first.output.status.code(), Some(0), "{first}");
    let links = std::fs::read_dir(dir.path().join("rayslurm-logs"))
        .unwrap()
        .count();
    let ran = launch(dir.path(), "601", &["--again", "d", "--dry-run"]);
    assert_eq!(ran.output.status.code(), Some(0), "{ran}");
    assert!(ran.stdout.starts_with("#!/bin/bash\n"), "{ran}");
    let scripts = std::fs::read_dir(jobs(dir.path()))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sh")
        })
        .count();
    assert_eq!(scripts, 2);
    assert_eq!(
        std::fs::read_dir(dir.path().join("rayslurm-logs"))
            .unwrap()
            .count(),
        links,
        "no link"
    );
    assert_eq!(
        std::fs::read_dir(state(dir.path()).join("runs"))
            .unwrap()
            .count(),
        1
    );
}

/// Options that would change the run are refused by name, before anything is read or written;
/// a value from a variable is not refused (it was not asked for with this command).
#[test]
fn options_that_do_not_go_with_again_are_refused() {
    for args in [
        &["--again", "x", "--num-nodes", "2"][..],
        &["--again", "x", "--exp-name", "y"],
        &["--again", "x", "--command", "true"],
        &["--again", "x", "--partition", "p", "--follow"],
        &["--again", "x", "--requeue"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ran = launch_in(dir.path(), args)
            .expect_status(2)
            .expect_stderr_contains("does not go with --again")
            .expect_stderr_starts_with("error:")
            .run();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{ran}");
        if args[2] == "--num-nodes" {
            insta::assert_snapshot!("again_refuses_num_nodes", ran.transcript());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    launch_in(dir.path(), &["--again", "nosuch"])
        .env("RAYSLURM_PARTITION", "lab")
        .expect_status(2)
        .expect_stderr_contains("no run matches `nosuch`")
        .run();
    // Neither --exp-name nor --command is needed with --again, and both without it.
    launch_in(dir.path(), &["--dry-run"])
        .expect_status(2)
        .expect_stderr_contains("--exp-name")
        .run();
}

#[test]
fn a_run_whose_binary_is_gone_is_refused_and_nothing_written() {
    let dir = with_sbatch("700");
    let first = launch(
        dir.path(),
        "700",
        &["--json", "--exp-name", "g", "--command", "true"],
    );
    let first = first.json();
    let record = std::fs::read_dir(state(dir.path()).join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    // The record names a copy of another build, since removed.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    let other = state(dir.path()).join("bin/rayslurm-0.0.1-0123456789abcdef");
    v["binary"] = serde_json::json!(other);
    std::fs::write(&record, v.to_string()).unwrap();
    let before = snapshot(&jobs(dir.path()));
    let ran = launch(dir.path(), "701", &["--again", "g"]);
    assert_eq!(ran.output.status.code(), Some(2), "{ran}");
    assert!(ran.stderr.contains("is gone or changed"), "{ran}");
    assert!(
        ran.stderr.contains("rayslurm-0.0.1-0123456789abcdef"),
        "{ran}"
    );
    assert_eq!(snapshot(&jobs(dir.path())), before);
    assert!(Path::new(first["script"].as_str().unwrap()).exists());
    assert!(!other.exists());
}

/// The run's record, as JSON, and where it is.
fn the_record(dir: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let path = std::fs::read_dir(state(dir).join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    let v = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (path, v)
}

/// A record naming a script outside the private tree (an older rayslurm kept scripts beside
/// the logs, in a directory the group can write): `--again` never submits it, nor a script in
/// the tree that is not the one the record's digest names; sbatch is not called.
#[test]
fn a_script_outside_the_private_tree_or_changed_is_never_submitted_again() {
    let dir = with_sbatch("800");
    let first = launch(
        dir.path(),
        "800",
        &["--json", "--exp-name", "o", "--command", "true"],
    );
    assert_eq!(first.output.status.code(), Some(0), "{first}");
    let script = std::path::PathBuf::from(first.json()["script"].as_str().unwrap());
    let (record, v) = the_record(dir.path());
    assert_eq!(
        v["script_sha256"],
        crate::harness::sha256_hex(&std::fs::read(&script).unwrap())
    );
    // From here on, any sbatch call leaves a mark.
    let called = dir.path().join("sbatch-called");
    shim(
        &dir.path().join(".shims"),
        "sbatch",
        &format!("touch {}; echo '801;lab'", called.display()),
    );
    let again = |what: &str| {
        launch_in(dir.path(), &["--again", "o"])
            .shims(&dir.path().join(".shims"))
            .case(what)
            .expect_status(2)
            .expect_stdout("")
            .run()
    };

    let planted = dir.path().join("o_planted.sh");
    std::fs::copy(&script, &planted).unwrap();
    let mut outside = v.clone();
    outside["script"] = serde_json::json!(planted);
    std::fs::write(&record, outside.to_string()).unwrap();
    let ran = again("outside");
    assert!(
        ran.stderr.contains(&format!(
            "`{}`, lies outside your private directory",
            planted.display()
        )),
        "{ran}"
    );
    assert!(!called.exists(), "sbatch ran");

    // In the tree, but not what was submitted.
    std::fs::write(&record, v.to_string()).unwrap();
    let text = std::fs::read_to_string(&script).unwrap();
    std::fs::write(&script, format!("{text}id\n")).unwrap();
    let ran = again("changed");
    assert!(ran.stderr.contains("is not the one submitted"), "{ran}");
    assert!(
        ran.stderr.contains(v["script_sha256"].as_str().unwrap()),
        "{ran}"
    );
    assert!(!called.exists(), "sbatch ran");

    // As it was: run again.
    std::fs::write(&script, text).unwrap();
    launch_in(dir.path(), &["--again", "o"])
        .shims(&dir.path().join(".shims"))
        .expect_status(0)
        .run();
    assert!(called.exists());
}
