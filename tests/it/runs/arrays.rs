//! A job array's tasks (`launch --array`), each a run of its own: `status` shows one line a
//! task from one squeue call, `logs` asks which task, `cancel NAME` cancels the whole array
//! with one scancel and `cancel JOBID_N` one task.

use super::fake::Fake;

/// Records the tasks `ids` of array `array` (`sweep`) as `launch --array` does: each its own
/// run, job id `ARRAY_TASK`, naming the array; each task's log says which task it is.
fn seed_array(fake: &Fake, array: &str, ids: &[u32]) {
    for task in ids {
        let job = format!("{array}_{task}");
        fake.seed("sweep", &job, 5, Some(&format!("task {task}\n")));
        let path = fake.record(&job);
        let mut record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        record["array_job"] = array.into();
        std::fs::write(&path, record.to_string()).unwrap();
    }
}

/// squeue's answer for the tasks `ids` of array 77, all in `state`.
fn squeue_lines(fake: &Fake, ids: &[u32], state: &str) -> String {
    ids.iter()
        .map(|t| fake.line(&format!("77_{t}"), state))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn status_shows_each_task_of_an_array_from_one_squeue_call() {
    let fake = Fake::new();
    fake.seed("resnet", "70", 1, None);
    seed_array(&fake, "77", &[0, 1, 2, 3]);
    let mut lines = squeue_lines(&fake, &[0, 1, 2, 3], "RUNNING");
    lines.push('\n');
    lines.push_str(&fake.line("70", "RUNNING"));
    fake.shim("squeue", &lines);
    let ran = fake
        .run(["status", "--json"])
        .expect_status(0)
        .expect_json("/0/job_id", "77_0")
        .expect_json("/0/array_job", "77")
        .expect_json("/3/job_id", "77_3")
        .expect_json("/3/state", "RUNNING")
        .expect_json("/4/job_id", "70")
        .run();
    assert_eq!(ran.rows().len(), 5, "{ran}");
    assert!(ran.rows()[4].get("array_job").is_none(), "{ran}");
    // One squeue call for all five runs, the four tasks by their own ids.
    assert_eq!(fake.calls("squeue").len(), 1, "{:?}", fake.calls("squeue"));
    assert!(
        fake.calls("squeue")[0].contains("77_0,77_1,77_2,77_3,70"),
        "{:?}",
        fake.calls("squeue")
    );
    // The array by its name or its job id: every task, one line each.
    for target in ["sweep", "77"] {
        fake.run(["status", target])
            .expect_status(0)
            .expect_stdout_count("\nsweep  77_", 4)
            .expect_stdout_contains("77_2")
            .expect_stdout_lacks("resnet")
            .run();
    }
    assert_eq!(fake.calls("squeue").len(), 3);
}

#[test]
fn logs_of_an_array_asks_which_task_and_shows_one() {
    let fake = Fake::new();
    seed_array(&fake, "77", &[0, 1, 2]);
    for target in ["sweep", "77"] {
        fake.run(["logs", target])
            .expect_status(2)
            .expect_stderr_contains(
                "error: job 77 is an array of 3 tasks, each a run with its own log: say which task",
            )
            .expect_stderr_contains("`rayslurm logs 77_0` or `--task 0`")
            .run();
    }
    fake.run(["logs", "sweep", "--task", "1"])
        .expect_status(0)
        .expect_stdout("task 1\n")
        .run();
    fake.run(["logs", "77_2"])
        .expect_status(0)
        .expect_stdout("task 2\n")
        .run();
    fake.run(["logs", "sweep", "--task", "5"])
        .expect_status(2)
        .expect_stderr_contains("job array 77 has no task 5")
        .expect_stderr_contains("its tasks are 0, 1, 2")
        .run();
    // Logs already there: Slurm was never asked.
    assert!(fake.calls("squeue").is_empty());
}

#[test]
fn cancel_of_an_array_is_one_scancel_and_of_a_task_that_task_alone() {
    let fake = Fake::new();
    seed_array(&fake, "77", &[0, 1, 2]);
    fake.scancel_stops(
        "",
        &squeue_lines(&fake, &[0, 1, 2], "RUNNING"),
        &squeue_lines(&fake, &[0, 1, 2], "CANCELLED"),
    );
    fake.shim(
        "scontrol",
        "for a; do last=$a; done; echo \"JobId=$last JobState=CANCELLED ExitCode=0:15 RunTime=00:00:07\"",
    );
    fake.run(["cancel", "sweep"])
        .expect_status(0)
        .expect_stdout("77\n")
        .expect_stderr_contains("cancelled job array 77 (sweep, 3 tasks): 77_0 CANCELLED")
        .run();
    assert_eq!(fake.calls("scancel"), ["77"]);
    fake.run(["cancel", "77", "--signal", "USR1"])
        .expect_status(2)
        .expect_stderr_contains("--signal goes to one task's command")
        .run();

    let fake = Fake::new();
    seed_array(&fake, "77", &[0, 1, 2]);
    fake.scancel_stops(
        "",
        &fake.line("77_1", "RUNNING"),
        &fake.line("77_1", "CANCELLED"),
    );
    fake.shim(
        "scontrol",
        "for a; do last=$a; done; echo \"JobId=$last JobState=CANCELLED ExitCode=0:15 RunTime=00:00:07\"",
    );
    fake.run(["cancel", "77_1"])
        .expect_status(0)
        .expect_stdout("77_1\n")
        .expect_stderr_contains("cancelled job 77_1 (sweep)")
        .run();
    assert_eq!(fake.calls("scancel"), ["77_1"]);
}

/// `launch --array` records each task as a run of its own and names them in `--json`: job id
/// `JOBID_TASK`, a private log made for each, linked from the log directory.
#[test]
fn launch_of_an_array_records_each_task_and_makes_its_log() {
    use std::os::unix::fs::PermissionsExt;
    let fake = Fake::new();
    fake.shim("sbatch", "echo 4242");
    let ran = fake
        .run([
            "launch",
            "--exp-name",
            "sweep",
            "--array",
            "1,3,5%1",
            "--no-ray",
            "--json",
            "--command",
            "true",
        ])
        .expect_status(0)
        .expect_json("/job_id", "4242")
        .expect_json("/tasks/0/job_id", "4242_1")
        .expect_json("/tasks/2/job_id", "4242_5")
        .expect_json("/tasks/2/task", 5)
        .expect_stderr_contains("tasks:  3, at most 1 at once")
        .run();
    let json = ran.json();
    assert!(json["log"].as_str().unwrap().ends_with("_%a.log"), "{json}");
    for task in json["tasks"].as_array().unwrap() {
        let log = std::path::Path::new(task["log"].as_str().unwrap());
        let meta = std::fs::symlink_metadata(log).unwrap();
        assert_eq!((meta.len(), meta.permissions().mode() & 0o777), (0, 0o600));
        let link = fake
            .logs
            .join("rayslurm-logs")
            .join(log.file_name().unwrap());
        assert_eq!(std::fs::read_link(&link).unwrap(), log, "{json}");
    }
    assert_eq!(fake.calls("sbatch").len(), 1);
    let mut records: Vec<String> = std::fs::read_dir(fake.state.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    records.sort();
    assert_eq!(records.len(), 3, "{records:?}");
    assert!(records.iter().all(|r| r.contains("-4242_")), "{records:?}");
    fake.shim(
        "squeue",
        &["1", "3", "5"]
            .map(|t| {
                format!(
                    "echo \"4242_{t}|PENDING|JobArrayTaskLimit|0:00|1|$(date +%Y-%m-%dT%H:%M:%S)|\""
                )
            })
            .join("\n"),
    );
    fake.run(["status", "--json", "4242"])
        .expect_json("/0/job_id", "4242_1")
        .expect_json("/2/job_id", "4242_5")
        .expect_json("/2/state", "PENDING")
        .expect_json("/2/array_job", "4242")
        .run();
}
