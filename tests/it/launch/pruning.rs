//! The copies of rayslurm in the private tree's `bin/`: a launch removes those no kept run
//! record names (by its `binary`, or, for records written before that was kept, by its
//! script's text), never this launch's own, never one used within the last hour, and nothing
//! at all while a run that may still go on names none it can be asked about.

use std::path::Path;

use super::{launch_in, state};
use crate::harness::shim;

/// A copy in `bin/` last used two hours ago.
fn old_copy(bin: &Path, name: &str) {
    let f = std::fs::File::create(bin.join(name)).unwrap();
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    f.set_modified(long_ago).unwrap();
}

/// A run record as older versions wrote it (no `binary`), of a run still going (no `ended`).
fn record(runs: &Path, job: &str, script: &Path, binary: Option<&Path>) {
    let mut v = serde_json::json!({
        "format": 1,
        "exp_name": "old",
        "job_id": job,
        "script": script,
        "log": script.with_extension("log"),
        "state_file": script.with_extension("state.json"),
        "submitted_at": "2026-11-20T09:00:00+00:00",
        "workdir": "/work",
        "command": "true",
        "num_nodes": 1
    });
    if let Some(b) = binary {
        v["binary"] = serde_json::json!(b);
    }
    std::fs::write(runs.join(format!("{job}.json")), v.to_string()).unwrap();
}

/// The names in `bin/`, sorted.
fn names(bin: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(bin)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

/// One launch (a fake sbatch) in `dir`; returns its stderr.
fn launch(dir: &Path) -> String {
    let shims = dir.join(".shims");
    std::fs::create_dir_all(&shims).unwrap();
    shim(&shims, "sbatch", "echo '77;lab'");
    launch_in(dir, &["--exp-name", "p", "--command", "true"])
        .shims(&shims)
        .expect_status(0)
        .run()
        .stderr
}

/// The private tree's `bin/` and `runs/`, made ahead of the launch (0700, as rayslurm makes
/// them) so the test can put copies and records there.
fn tree(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::DirBuilderExt;
    let mut b = std::fs::DirBuilder::new();
    b.mode(0o700).recursive(true);
    let (bin, runs) = (state(dir).join("bin"), state(dir).join("runs"));
    b.create(&bin).unwrap();
    b.create(&runs).unwrap();
    (bin, runs)
}

#[test]
fn copies_no_record_names_are_removed_and_named_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, runs) = tree(dir.path());
    for name in [
        "rayslurm-0.0.1-aaaaaaaaaaaaaaaa",
        "rayslurm-0.0.2-bbbbbbbbbbbbbbbb",
        "rayslurm-0.0.3-cccccccccccccccc",
    ] {
        old_copy(&bin, name);
    }
    // Named by a record's `binary`, and by an older record's script.
    record(
        &runs,
        "10",
        &dir.path().join("gone.sh"),
        Some(&bin.join("rayslurm-0.0.1-aaaaaaaaaaaaaaaa")),
    );
    let script = dir.path().join("old.sh");
    std::fs::write(
        &script,
        format!(
            "rayslurm_bin={}\n",
            bin.join("rayslurm-0.0.2-bbbbbbbbbbbbbbbb").display()
        ),
    )
    .unwrap();
    record(&runs, "11", &script, None);
    // A fresh unnamed copy (a launch beside this one, not yet recorded) stays too.
    std::fs::write(bin.join("rayslurm-0.0.4-dddddddddddddddd"), "").unwrap();

    let stderr = launch(dir.path());
    assert!(
        stderr.contains("removed 1 copies of rayslurm that no recorded run names"),
        "{stderr}"
    );
    let left = names(&bin);
    assert_eq!(left.len(), 4, "{left:?}");
    assert!(!left.contains(&"rayslurm-0.0.3-cccccccccccccccc".to_owned()));
    assert!(left.contains(&"rayslurm-0.0.1-aaaaaaaaaaaaaaaa".to_owned()));
    assert!(left.contains(&"rayslurm-0.0.2-bbbbbbbbbbbbbbbb".to_owned()));
    assert!(left.contains(&"rayslurm-0.0.4-dddddddddddddddd".to_owned()));
    // This launch's own copy, which its record names.
    let own = left.iter().find(|n| n.starts_with("rayslurm-0.1")).unwrap();
    let rec: Vec<serde_json::Value> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| {
            serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap()
        })
        .filter(|v: &serde_json::Value| v["job_id"] == "77")
        .collect();
    assert_eq!(rec[0]["binary"], serde_json::json!(bin.join(own)));

    // The next launch keeps its predecessor's copy (its record names it).
    launch(dir.path());
    assert!(names(&bin).contains(own));
}

#[test]
fn nothing_is_removed_while_a_going_run_names_no_copy_that_can_be_found() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, runs) = tree(dir.path());
    old_copy(&bin, "rayslurm-0.0.3-cccccccccccccccc");
    // An older record, its script gone and its end unknown: its job may run that copy.
    record(&runs, "12", &dir.path().join("gone.sh"), None);
    let stderr = launch(dir.path());
    assert!(!stderr.contains("removed"), "{stderr}");
    assert!(names(&bin).contains(&"rayslurm-0.0.3-cccccccccccccccc".to_owned()));
}
