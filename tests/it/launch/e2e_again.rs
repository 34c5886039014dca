//! End to end, on the real test cluster: `launch --again RUN` makes a second recorded run of
//! RUN's script and binary (a new job, record and log, RUN's left as they were), with real
//! Ray, its log linked from the default log directory (`./rayslurm-logs`). Skipped loudly
//! without the cluster, failing under CI=true.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::harness::{is_ended_state, lab, rayslurm, text};

/// A bound that only catches a run that never ends (jobs may queue behind other tests').
const PATIENCE: Duration = Duration::from_secs(600);

fn run_in(dir: &Path, state: &Path, args: &[&str]) -> Output {
    rayslurm(args)
        .cwd(dir)
        .env("RAYSLURM_STATE_DIR", state)
        .output()
}

/// `status --json` of every run, polled until all have ended.
fn wait_all_ended(dir: &Path, state: &Path) -> Vec<serde_json::Value> {
    let start = Instant::now();
    loop {
        let out = run_in(dir, state, &["status", "--json", "--all"]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "status failed: {stderr}");
        let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
        if rows
            .iter()
            .all(|r| is_ended_state(r["state"].as_str().unwrap_or_default()))
        {
            return rows;
        }
        assert!(start.elapsed() < PATIENCE, "runs never ended: {rows:?}");
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The first run, with real Ray on one node; returns its job id and log.
fn first_launch(lab: &crate::harness::Lab, dir: &Path, state: &Path) -> (String, PathBuf) {
    let load_env = format!("source {}/bin/activate", lab.venv.display());
    let command = "echo run-of-job-$SLURM_JOB_ID; python -c 'import ray; ray.init(); print(\"ray-ok\", int(ray.cluster_resources()[\"CPU\"]))'";
    let out = run_in(
        dir,
        state,
        &[
            "launch",
            "--json",
            "--exp-name",
            "again",
            "--time",
            "5",
            "--object-store-memory",
            "100000000",
            "--load-env",
            &load_env,
            crate::harness::NO_DASHBOARD,
            "--command",
            command,
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "launch failed: {stderr}");
    let first: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let first_job = first["job_id"].as_str().unwrap().to_owned();
    let first_log = PathBuf::from(first["log"].as_str().unwrap());
    (first_job, first_log)
}

#[test]
fn a_run_launched_again_is_a_second_recorded_run_and_both_logs_stay() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("e2e-again");
    let state = lab.workdir("e2e-again-state");
    let (first_job, first_log) = first_launch(lab, &dir, &state);
    wait_all_ended(&dir, &state);
    // The final state is written before the bootstrap's last line (`done: ...`): the log is
    // whole once that line is in it.
    let whole = Instant::now();
    let first_text = loop {
        let text = std::fs::read(&first_log).unwrap();
        if String::from_utf8_lossy(&text).contains("] done: ") {
            break text;
        }
        assert!(
            whole.elapsed() < PATIENCE,
            "the first log never got its last line"
        );
        std::thread::sleep(Duration::from_millis(200));
    };

    // Again, followed to its end: the same command in a job of its own.
    let out = run_in(&dir, &state, &["launch", "--again", &first_job, "--follow"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let second_job = stdout.lines().next().unwrap().trim().to_owned();
    assert_ne!(second_job, first_job);
    assert!(
        stderr.contains(&format!(
            "job {second_job} runs again (job {first_job}) again"
        )),
        "{stderr}"
    );
    assert!(
        has_line(&stdout, &format!("run-of-job-{second_job}")),
        "{stdout}"
    );
    assert!(stdout.contains("ray-ok"), "{stdout}");

    // Both runs are listed, each completed with its own log; the first log is as it was.
    let rows = wait_all_ended(&dir, &state);
    let mut jobs: Vec<&str> = rows.iter().map(|r| r["job_id"].as_str().unwrap()).collect();
    jobs.sort_unstable();
    let mut want = [first_job.as_str(), second_job.as_str()];
    want.sort_unstable();
    assert_eq!(jobs, want, "{rows:?}");
    for row in &rows {
        assert_eq!(row["state"], "COMPLETED", "{row}");
        assert_eq!(row["exp_name"], "again");
    }
    let second_log = rows
        .iter()
        .find(|r| r["job_id"] == second_job.as_str())
        .map(|r| PathBuf::from(r["log"].as_str().unwrap()))
        .unwrap();
    assert_ne!(second_log, first_log);
    assert_eq!(
        std::fs::read(&first_log).unwrap(),
        first_text,
        "the first log changed"
    );
    let second_text = std::fs::read_to_string(&second_log).unwrap();
    assert!(
        has_line(&second_text, &format!("run-of-job-{second_job}")),
        "{second_text}"
    );
    assert!(
        !has_line(&second_text, &format!("run-of-job-{first_job}")),
        "{second_text}"
    );
    assert_only_links(&dir, [&first_log, &second_log]);
}

/// Whether `text` has `line` as a whole line: job 1's mark is a prefix of job 10's.
fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l.trim_end() == line)
}

/// The working directory holds the default log directory alone, with a link to each log.
fn assert_only_links(dir: &Path, logs: [&PathBuf; 2]) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["rayslurm-logs"]);
    for log in logs {
        let link = dir.join("rayslurm-logs").join(log.file_name().unwrap());
        assert_eq!(&std::fs::read_link(&link).unwrap(), log);
    }
}
