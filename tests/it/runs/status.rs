//! `status`: one squeue call for every run, retries while the controller does not answer, the
//! `--json` shape, and what is said of a run that ended without a final state.

use serde_json::Value;

use super::fake::{CONTROLLER_DOWN, Fake, says};
use crate::harness::json_keys;

#[test]
fn status_json_shape() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("x\n"));
    fake.seed("bert", "102", 2, None);
    fake.seed("resnet", "103", 3, None);
    fake.final_state("resnet", "101", 0, "completed");
    let squeue = [fake.line("103", "PENDING"), fake.line("102", "RUNNING")];
    fake.shim("squeue", &squeue.join("\n"));
    let ran = fake
        .run(["status", "--json"])
        .expect_status(0)
        // Newest first.
        .expect_json("/0/job_id", "103")
        .expect_json("/1/job_id", "102")
        .expect_json("/2/job_id", "101")
        .expect_json("/0/state", "PENDING")
        .expect_json("/0/reason", "Resources")
        .expect_json("/0/exit_code", Value::Null)
        .expect_json("/1/state", "RUNNING")
        .expect_json("/1/nodelist", "node[1-2]")
        .expect_json("/1/elapsed_seconds", 7)
        .expect_json("/2/state", "COMPLETED")
        .expect_json("/2/exit_code", 0)
        .expect_json("/2/source", "final-state")
        .run();
    let rows = ran.rows();
    assert_eq!(rows.len(), 3, "{ran}");
    let keys: Vec<&String> = rows[0].as_object().unwrap().keys().collect();
    for key in [
        "exp_name",
        "job_id",
        "state",
        "reason",
        "nodes",
        "nodelist",
        "elapsed_seconds",
        "exit_code",
        "log",
        "script",
        "state_file",
        "run_dir",
        "submitted_at",
        "workdir",
        "command",
        "source",
        "message",
    ] {
        assert!(keys.iter().any(|k| *k == key), "missing {key} in {keys:?}");
    }
    // Every row has the same keys, whatever its source; reviewed as a snapshot.
    for row in &rows {
        assert_eq!(json_keys(row), json_keys(&rows[0]), "{row}");
    }
    insta::assert_snapshot!("status_json_keys", json_keys(&rows[0]));
}

#[test]
fn status_asks_squeue_once_for_all_runs() {
    let fake = Fake::new();
    for (i, job) in ["201", "202", "203"].into_iter().enumerate() {
        fake.seed("sweep", job, i as u32, None);
    }
    let squeue = ["201", "202", "203"].map(|job| fake.line(job, "RUNNING"));
    fake.shim("squeue", &squeue.join("\n"));
    let ran = fake
        .run(["status"])
        .expect_status(0)
        .expect_stdout_count("RUNNING", 3)
        .run();
    assert!(ran.stdout.starts_with("NAME "), "{ran}");
    let calls = fake.calls("squeue");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].contains("203,202,201"), "{calls:?}");
}

#[test]
fn status_of_several_runs_named_asks_squeue_once_for_them() {
    let fake = Fake::new();
    for (i, (exp, job)) in [("a", "301"), ("b", "302"), ("c", "303")]
        .into_iter()
        .enumerate()
    {
        fake.seed(exp, job, i as u32, None);
    }
    let squeue = ["301", "303"].map(|job| fake.line(job, "RUNNING"));
    fake.shim("squeue", &squeue.join("\n"));
    let ran = fake
        .run(["status", "--json", "--", "303", "a"])
        .expect_status(0)
        .run();
    let rows: Vec<serde_json::Value> = serde_json::from_str(&ran.stdout).unwrap();
    let jobs: Vec<&str> = rows.iter().map(|r| r["job_id"].as_str().unwrap()).collect();
    assert_eq!(jobs, ["303", "301"], "newest first, each once: {ran}");
    let calls = fake.calls("squeue");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].contains("303,301"), "{calls:?}");
    assert!(!calls[0].contains("302"), "{calls:?}");
    // A name that matches nothing is refused, as for one run.
    fake.run(["status", "--", "303", "nope"])
        .expect_status(2)
        .expect_stderr_contains("nope")
        .run();
}

#[test]
fn status_retries_a_failing_squeue() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.shim(
        "squeue",
        &format!(
            "if [ \"$N\" -le 2 ]; then {CONTROLLER_DOWN}; fi\n{}",
            fake.line("101", "RUNNING")
        ),
    );
    fake.run(["status", "--json"])
        .expect_status(0)
        .expect_json("/0/state", "RUNNING")
        .expect_stderr_count("trying again", 2)
        .run();
    assert_eq!(fake.calls("squeue").len(), 3);
}

#[test]
fn squeue_that_keeps_failing_never_reports_a_run_finished() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("resnet", "102", 2, None);
    fake.final_state("resnet", "102", 4, "failed");
    fake.shim("squeue", CONTROLLER_DOWN);
    fake.run(["status", "--json"])
        .expect_status(1)
        // The final state file is proof of the end.
        .expect_json("/0/state", "FAILED")
        .expect_json("/0/exit_code", 4)
        .expect_json("/1/state", "UNKNOWN")
        .expect_stderr_contains("Unable to contact slurm controller")
        .run();
    // Nothing was remembered as ended.
    for job in ["101", "102"] {
        let record = std::fs::read_to_string(fake.record(job)).unwrap();
        assert!(!record.contains("\"ended\""), "{record}");
    }
}

/// What `status` says of an ended run without a final state, in both forms.
pub const NO_FINAL_STATE: &str = "ended without a final state";

/// Two `status` commands, one after the other, and their stdout: for a run Slurm shows ended,
/// the first asks Slurm and the second reads the run's end from its record.
pub fn status_twice(fake: &Fake, first: &[&str], second: &[&str]) -> [String; 2] {
    [first, second].map(|args| fake.run(args.iter().copied()).expect_status(0).run().stdout)
}

/// `status --json` rows as (job id, state, exit code, message).
fn summary(stdout: &str) -> Vec<(String, String, Option<i64>, Option<String>)> {
    let rows: Vec<Value> = serde_json::from_str(stdout).unwrap();
    rows.iter()
        .map(|r| {
            (
                r["job_id"].as_str().unwrap().to_owned(),
                r["state"].as_str().unwrap().to_owned(),
                r["exit_code"].as_i64(),
                r["message"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// An ended job whose bootstrap wrote no final state (killed before anything could write one,
/// say): `status` shows only what Slurm knows and says that nothing told how the run ended,
/// and still says so once the end is kept in the run's record.
#[test]
fn status_of_an_ended_job_without_a_final_state_says_so() {
    let fake = Fake::new();
    // Slurm shows it FAILED; slurmctld has forgotten it and there is no accounting; it wrote a
    // final state.
    // They ran: each has a log.
    fake.seed("resnet", "101", 1, Some("ran\n"));
    fake.seed("bert", "102", 2, Some("ran\n"));
    fake.seed("gpt", "103", 3, None);
    fake.final_state("gpt", "103", 0, "completed");
    let squeue = [fake.line("101", "FAILED"), fake.line("103", "COMPLETED")];
    fake.shim("squeue", &squeue.join("\n"));
    fake.shim(
        "scontrol",
        &says(
            "JobId=101 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 RunTime=00:00:07 NodeList=node[1-2]",
        ),
    );
    fake.shim("sacct", "exit 0");
    let said = Some(NO_FINAL_STATE.to_owned());
    let expected = [
        ("103", "COMPLETED", Some(0), None),
        // No state guessed.
        ("102", "ENDED", None, said.clone()),
        // Slurm's state and exit code, nothing more.
        ("101", "FAILED", Some(3), said),
    ]
    .map(|(id, state, code, message)| (id.to_owned(), state.to_owned(), code, message));
    let check_table = |table: &str, from: &str| {
        assert!(
            table.contains(&format!("\njob 101: {NO_FINAL_STATE}\n"))
                && table.contains(&format!("\njob 102: {NO_FINAL_STATE}\n")),
            "{from}: {table}"
        );
        assert!(!table.contains("job 103:"), "{from}: {table}");
    };
    let [rows, table] = status_twice(&fake, &["status", "--json"], &["status"]);
    assert_eq!(summary(&rows), expected, "asking Slurm");
    check_table(&table, "from the records");
    let [table, rows] = status_twice(&fake, &["status"], &["status", "--json"]);
    check_table(&table, "from the records");
    assert_eq!(summary(&rows), expected, "from the records");
    assert_eq!(
        fake.calls("squeue").len(),
        1,
        "the ends were kept in the records"
    );
}

/// A job that ended with neither a final state nor a log: its nodes could not write the run's
/// directory (a login node whose filesystem they do not share): `status` says so, naming it.
#[test]
fn status_of_a_job_that_wrote_no_log_names_the_directory_its_nodes_could_not_write() {
    let fake = Fake::new();
    let log = fake.seed("resnet", "101", 1, None);
    fake.shim("squeue", &fake.line("101", "FAILED"));
    fake.shim(
        "scontrol",
        &says("JobId=101 JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0 RunTime=00:00:00 NodeList=node1"),
    );
    fake.shim("sacct", "exit 0");
    let dir = log.parent().unwrap().display().to_string();
    for args in [["status", "--json"], ["status", "--json"]] {
        let out = fake.run(args).output();
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let said = rows[0]["message"].as_str().unwrap_or_default().to_owned();
        assert!(
            said.starts_with(NO_FINAL_STATE) && said.contains(&format!("could not write `{dir}`")),
            "{said}"
        );
    }
}
