//! `launch --again RUN` (a fake `sbatch`): a new recorded run rendered from RUN's record, under
//! new names, RUN's files untouched and nothing the first launch read read again; the options
//! that do not go with it refused before anything is written. The real run again is
//! `e2e_again.rs`.

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
fn a_run_again_is_a_new_recorded_run_rendered_from_its_record() {
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
            "--setup",
            "echo set up",
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
    // The first run's files are as they were; the new script is the first one rendered again
    // with the new run's names.
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
    assert_eq!(
        normalise(&old.replace(&stem(&first), &stem(&again)), dir.path()),
        normalise(&new, dir.path())
    );
    for part in ["K='v 1'", "echo set up", "python t.py", "--nodes=2"] {
        assert!(new.contains(part), "{part}: {new}");
    }
    // Its log is linked from the default log directory, as a launch's is.
    let log = Path::new(again["log"].as_str().unwrap());
    let link = dir
        .path()
        .join("rayslurm-logs")
        .join(log.file_name().unwrap());
    assert_eq!(std::fs::read_link(link).unwrap(), log);
    // Both runs are recorded, each with its own files and the same launch.
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
    assert_eq!(of("501")["launch"], of("500")["launch"]);
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

/// What the first launch read (its template, its `--env-file`, both in a directory the
/// group may write) and its script are not read again: changed since, none of it reaches the
/// new run, which is rendered from the record alone.
#[test]
fn a_run_again_reads_nothing_the_first_launch_read() {
    let dir = with_sbatch("800");
    let template = dir.path().join("mine.sh.tera");
    let builtin = crate::harness::rayslurm(["template"])
        .expect_status(0)
        .run();
    std::fs::write(&template, format!("{}# mine\n", builtin.stdout)).unwrap();
    let env_file = dir.path().join("vars.env");
    std::fs::write(&env_file, "FROM_FILE=first\n").unwrap();
    let first = launch(
        dir.path(),
        "800",
        &[
            "--json",
            "--exp-name",
            "o",
            "--template",
            "mine.sh.tera",
            "--env-file",
            "vars.env",
            "--command",
            "true",
        ],
    );
    assert_eq!(first.output.status.code(), Some(0), "{first}");
    let script = std::path::PathBuf::from(first.json()["script"].as_str().unwrap());
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(
        text.contains("# mine") && text.contains("FROM_FILE=first"),
        "{text}"
    );

    // Changed since, by whoever could write there: the script in the tree too.
    std::fs::write(&template, format!("{}# planted\n", builtin.stdout)).unwrap();
    std::fs::write(&env_file, "FROM_FILE=planted\n").unwrap();
    std::fs::write(&script, format!("{text}id # planted\n")).unwrap();
    std::fs::remove_file(&template).unwrap();
    std::fs::remove_file(&env_file).unwrap();
    let again = launch(dir.path(), "801", &["--again", "o", "--json"]);
    assert_eq!(again.output.status.code(), Some(0), "{again}");
    let new = std::fs::read_to_string(again.json()["script"].as_str().unwrap()).unwrap();
    assert!(!new.contains("planted"), "{new}");
    assert!(
        new.contains("# mine") && new.contains("FROM_FILE=first"),
        "{new}"
    );
}

/// A record that keeps no launch (an older rayslurm's, whose script may lie beside the logs
/// where the group can write) is refused: its script is never submitted, sbatch never called.
#[test]
fn a_record_without_its_launch_is_refused_and_nothing_submitted() {
    let dir = with_sbatch("900");
    let first = launch(
        dir.path(),
        "900",
        &["--json", "--exp-name", "g", "--command", "true"],
    );
    assert_eq!(first.output.status.code(), Some(0), "{first}");
    let (record, mut v) = the_record(dir.path());
    assert!(v["launch"].is_object(), "{v}");
    v.as_object_mut().unwrap().remove("launch");
    let planted = dir.path().join("g_planted.sh");
    std::fs::write(&planted, "#!/bin/bash\nid\n").unwrap();
    v["script"] = serde_json::json!(planted);
    std::fs::write(&record, v.to_string()).unwrap();
    let called = dir.path().join("sbatch-called");
    shim(
        &dir.path().join(".shims"),
        "sbatch",
        &format!("touch {}; echo '901;lab'", called.display()),
    );
    let before = snapshot(&jobs(dir.path()));
    let ran = launch_in(dir.path(), &["--again", "g"])
        .shims(&dir.path().join(".shims"))
        .expect_status(2)
        .expect_stdout("")
        .expect_stderr_contains("keeps no launch settings to render it from")
        .run();
    assert!(ran.stderr.contains(&planted.display().to_string()), "{ran}");
    assert!(!called.exists(), "sbatch ran");
    assert_eq!(snapshot(&jobs(dir.path())), before);
}
