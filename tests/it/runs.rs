//! `status`, `logs`, `cancel` and `launch --follow` against fake `sbatch`/`squeue`/`scontrol`/
//! `scancel` on PATH: the error paths a real cluster cannot easily produce (a controller that
//! does not answer, a log deleted under a follower, scancel refusing).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::harness::{Run, json_keys, rayslurm, shim, text, transcript, wait_within};

/// A scratch world: fake Slurm commands, a run store and a log directory.
struct Fake {
    _root: tempfile::TempDir,
    shims: PathBuf,
    state: PathBuf,
    logs: PathBuf,
}

impl Fake {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let shims = root.path().join("bin");
        let state = root.path().join("state");
        let logs = root.path().join("logs");
        for d in [&shims, &state, &logs] {
            std::fs::create_dir_all(d).unwrap();
        }
        let fake = Self {
            _root: root,
            shims,
            state,
            logs,
        };
        // Anything a test does not fake must not reach a real cluster.
        for name in ["sbatch", "squeue", "scontrol", "scancel", "sacct"] {
            fake.shim(
                name,
                &format!("echo '{name}: not faked in this test' >&2; exit 99"),
            );
        }
        fake
    }

    /// A fake command; `$CALLS` is its call log and `$N` the number of this call (from 1).
    fn shim(&self, name: &str, body: &str) {
        let calls = self.shims.join(format!("{name}.calls"));
        shim(
            &self.shims,
            name,
            &format!(
                "CALLS={calls}\necho \"$*\" >> \"$CALLS\"\nN=$(wc -l < \"$CALLS\")\n{body}",
                calls = calls.display()
            ),
        );
    }

    /// The arguments of each call of a fake command.
    fn calls(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.shims.join(format!("{name}.calls")))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn run<'a>(&self, args: impl IntoIterator<Item = &'a str>) -> Run {
        rayslurm(args)
            .shims(&self.shims)
            .env("TZ", TZ)
            .env("RAYSLURM_STATE_DIR", &self.state)
            .cwd(&self.logs)
    }

    /// Records a run as `launch` would, with its log holding `log` (if any).
    fn seed(&self, exp: &str, job: &str, minute: u32, log: Option<&str>) -> PathBuf {
        let stem = self.logs.join(format!("{exp}_{job}"));
        let log_path = stem.with_extension("log");
        if let Some(text) = log {
            std::fs::write(&log_path, text).unwrap();
        }
        let record = serde_json::json!({
            "format": 1,
            "exp_name": exp,
            "job_id": job,
            "script": stem.with_extension("sh"),
            "log": log_path,
            "state_file": stem.with_extension("state.json"),
            "submitted_at": format!("{}T09:{minute:02}:00+00:00", chrono::Local::now().format("%Y-%m-%d")),
            "workdir": self.logs,
            "command": "python train.py",
            "num_nodes": 2,
        });
        let runs = self.state.join("runs");
        std::fs::create_dir_all(&runs).unwrap();
        std::fs::write(runs.join(format!("{job}.json")), record.to_string()).unwrap();
        log_path
    }

    /// When a seeded run was submitted, as its record says.
    fn submitted(&self, job: &str) -> chrono::DateTime<chrono::FixedOffset> {
        let path = self.state.join(format!("runs/{job}.json"));
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        chrono::DateTime::parse_from_rfc3339(record["submitted_at"].as_str().unwrap()).unwrap()
    }

    /// squeue's answer for the seeded run's job `id` in `state`.
    fn line(&self, id: &str, state: &str) -> String {
        line_at(id, state, &squeue_time(self.submitted(id)))
    }

    /// Writes the bootstrap's final state for a seeded run.
    fn final_state(&self, exp: &str, job: &str, code: i32, ending: &str) {
        write_final_state(
            &self.logs.join(format!("{exp}_{job}.state.json")),
            job,
            code,
            ending,
        );
    }
}

/// Writes a final state as the bootstrap does (`handoff::final_state`).
fn write_final_state(path: &Path, job: &str, code: i32, ending: &str) {
    let state = serde_json::json!({
        "job_id": job,
        "exit_code": code,
        "ending": ending,
        "started_at": "2026-11-22T09:00:00+00:00",
        "ended_at": "2026-11-22T09:00:07+00:00",
        "head_node": "node1",
        "message": null,
    });
    std::fs::write(path, state.to_string()).unwrap();
}

/// squeue's answer for job `id` in `state`, submitted at `submitted` (squeue's `%V`: local
/// time without an offset, or shell text that prints it, like [`NOW`]).
fn line_at(id: &str, state: &str, submitted: &str) -> String {
    let nodes = if state == "PENDING" { "" } else { "node[1-2]" };
    let reason = if state == "PENDING" {
        "Resources"
    } else {
        "None"
    };
    format!("echo \"{id}|{state}|{reason}|0:07|2|{submitted}|{nodes}\"")
}

/// The time zone of rayslurm and the fake Slurm commands (POSIX form: UTC+05:30). squeue prints
/// submit times in local time without an offset; a zone away from UTC shows they are read so.
const TZ: &str = "IST-5:30";

/// [`TZ`]'s offset from UTC, in seconds.
const TZ_OFFSET: i32 = 5 * 3600 + 30 * 60;

/// The submit time of a job submitted as squeue is asked, for runs `launch` records itself.
const NOW: &str = "$(date +%Y-%m-%dT%H:%M:%S)";

/// `at` as squeue prints a submit time.
fn squeue_time(at: chrono::DateTime<chrono::FixedOffset>) -> String {
    let local = chrono::FixedOffset::east_opt(TZ_OFFSET).unwrap();
    at.with_timezone(&local)
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string()
}

const CONTROLLER_DOWN: &str = "echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit 1";

fn json(stdout: &str) -> Vec<serde_json::Value> {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn status_json_shape() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("x\n"));
    fake.seed("bert", "102", 2, None);
    fake.seed("resnet", "103", 3, None);
    fake.final_state("resnet", "101", 0, "completed");
    fake.shim(
        "squeue",
        &format!(
            "{}\n{}",
            fake.line("103", "PENDING"),
            fake.line("102", "RUNNING")
        ),
    );
    let out = fake.run(["status", "--json"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rows = json(&stdout);
    let ids: Vec<&str> = rows.iter().map(|r| r["job_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["103", "102", "101"], "newest first");
    assert_eq!(rows[0]["state"], "PENDING");
    assert_eq!(rows[0]["reason"], "Resources");
    assert_eq!(rows[0]["exit_code"], serde_json::Value::Null);
    assert_eq!(rows[1]["state"], "RUNNING");
    assert_eq!(rows[1]["nodelist"], "node[1-2]");
    assert_eq!(rows[1]["elapsed_seconds"], 7);
    assert_eq!(rows[2]["state"], "COMPLETED");
    assert_eq!(rows[2]["exit_code"], 0);
    assert_eq!(rows[2]["source"], "final-state");
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
    fake.shim(
        "squeue",
        &format!(
            "{}\n{}\n{}",
            fake.line("201", "RUNNING"),
            fake.line("202", "RUNNING"),
            fake.line("203", "RUNNING")
        ),
    );
    let out = fake.run(["status"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let calls = fake.calls("squeue");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].contains("203,202,201"), "{calls:?}");
    assert!(stdout.starts_with("NAME "), "{stdout}");
    assert_eq!(stdout.matches("RUNNING").count(), 3, "{stdout}");
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
    let out = fake.run(["status", "--json"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(json(&stdout)[0]["state"], "RUNNING");
    assert_eq!(fake.calls("squeue").len(), 3);
    assert_eq!(stderr.matches("trying again").count(), 2, "{stderr}");
}

#[test]
fn squeue_that_keeps_failing_never_reports_a_run_finished() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("resnet", "102", 2, None);
    fake.final_state("resnet", "102", 4, "failed");
    fake.shim("squeue", CONTROLLER_DOWN);
    let out = fake.run(["status", "--json"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let rows = json(&stdout);
    assert_eq!(
        rows[0]["state"], "FAILED",
        "the final state file is proof of the end"
    );
    assert_eq!(rows[0]["exit_code"], 4);
    assert_eq!(rows[1]["state"], "UNKNOWN");
    assert!(
        stderr.contains("Unable to contact slurm controller"),
        "{stderr}"
    );
    // Nothing was remembered as ended.
    for job in ["101", "102"] {
        let record = std::fs::read_to_string(fake.state.join(format!("runs/{job}.json"))).unwrap();
        assert!(!record.contains("\"ended\""), "{record}");
    }
}

#[test]
fn unknown_target_is_a_usage_error_with_close_matches() {
    let fake = Fake::new();
    fake.seed("resnet-sweep", "101", 1, None);
    fake.seed("bert", "102", 2, None);
    for cmd in ["logs", "status", "cancel"] {
        let out = fake.run([cmd, "resnet-swep"]).output();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(
            stderr.contains("error: no run has the experiment name or job id `resnet-swep`"),
            "{stderr}"
        );
        assert!(
            stderr.contains("hint: did you mean `resnet-sweep`?"),
            "{stderr}"
        );
    }
    assert!(fake.calls("scancel").is_empty());
    let out = fake.run(["logs", "103"]).output();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("`101`"), "{}", text(&out).1);
    let messages: Vec<String> = [
        &["logs", "resnet-swep"][..],
        &["status", "resnet-swep"],
        &["cancel", "resnet-swep"],
        &["logs", "103"],
    ]
    .into_iter()
    .map(|args| transcript(args, &fake.run(args.iter().copied()).output()))
    .collect();
    insta::assert_snapshot!("error_unknown_run", messages.join("\n"));
}

#[test]
fn empty_store() {
    let fake = Fake::new();
    let out = fake.run(["status", "--json"]).output();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out).0.trim(), "[]");
    let out = fake.run(["logs", "x"]).output();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("no runs are recorded"),
        "{}",
        text(&out).1
    );
    insta::assert_snapshot!(
        "error_no_runs_recorded",
        transcript(&["logs", "x"], &out).replace(&fake.state.display().to_string(), "[STATE]")
    );
}

#[test]
fn damaged_record_is_skipped_with_a_warning() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    std::fs::write(
        fake.state.join("runs/broken.json"),
        "{\"exp_name\": \"x\", ",
    )
    .unwrap();
    fake.shim("squeue", &fake.line("101", "RUNNING"));
    let out = fake.run(["status", "--json"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(json(&stdout).len(), 1);
    assert!(
        stderr.contains("warning: skipping the damaged run record"),
        "{stderr}"
    );
    assert!(stderr.contains("broken.json"), "{stderr}");
}

#[test]
fn logs_prints_the_latest_run_and_its_tail() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("old run\n"));
    fake.seed("resnet", "102", 2, Some("1\n2\n3\n4\n"));
    let out = fake.run(["logs", "resnet"]).output();
    assert_eq!(text(&out).0, "1\n2\n3\n4\n");
    let out = fake.run(["logs", "resnet", "--tail", "2"]).output();
    assert_eq!(text(&out).0, "3\n4\n");
    let out = fake.run(["logs", "101"]).output();
    assert_eq!(text(&out).0, "old run\n");
    assert!(
        fake.calls("squeue").is_empty(),
        "printing a log asks Slurm nothing"
    );
}

#[test]
fn logs_of_a_pending_job_says_it_has_not_started() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.shim("squeue", &fake.line("101", "PENDING"));
    let out = fake.run(["logs", "resnet"]).output();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is PENDING (Resources): it has not started"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: `rayslurm logs -f 101`"), "{stderr}");
}

#[test]
fn follow_exits_with_the_jobs_code_from_scontrol() {
    let fake = Fake::new();
    let log = fake.seed("resnet", "101", 1, None);
    // The job's log appears on the second look, and the job fails on the third.
    fake.shim(
        "squeue",
        &format!(
            "case $N in 1) {};; 2) printf 'hello\\nworld\\n' > {log}; {};; *) {};; esac",
            fake.line("101", "PENDING"),
            fake.line("101", "RUNNING"),
            fake.line("101", "FAILED"),
            log = log.display()
        ),
    );
    fake.shim("scontrol", "echo 'JobId=101 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 RunTime=00:00:07 NodeList=node[1-2]'");
    let start = Instant::now();
    let out = fake.run(["logs", "-f", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(stdout, "hello\nworld\n");
    assert!(
        stderr.contains("job 101 (resnet) is PENDING (Resources)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("job 101 (resnet) is RUNNING on node[1-2]"),
        "{stderr}"
    );
    assert!(
        stderr.contains("job 101 (resnet) FAILED, exit code 3"),
        "{stderr}"
    );
    assert_eq!(fake.calls("squeue").len(), 3);
    assert!(
        start.elapsed() >= Duration::from_secs(4),
        "squeue at most every 2 s"
    );
    // The end is remembered: status needs no Slurm now.
    fake.shim("squeue", "exit 0");
    let out = fake.run(["status", "--json", "101"]).output();
    let rows = json(&text(&out).0);
    assert_eq!(
        (rows[0]["state"].as_str(), rows[0]["exit_code"].as_i64()),
        (Some("FAILED"), Some(3))
    );
}

#[test]
fn follow_prefers_the_final_state_and_reads_the_whole_log() {
    let fake = Fake::new();
    let log = fake.seed("resnet", "101", 1, Some("start\n"));
    // The job is already over in Slurm's eyes while the nodes still flush the log.
    let writer = format!(
        "(sleep 0.5; echo late >> {log}; sleep 0.5; echo later >> {log}) &",
        log = log.display()
    );
    fake.shim(
        "squeue",
        &format!("{writer}\n{}", fake.line("101", "COMPLETED")),
    );
    fake.final_state("resnet", "101", 0, "completed");
    let out = fake.run(["logs", "-f", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "start\nlate\nlater\n");
    assert!(
        fake.calls("scontrol").is_empty(),
        "the final state has the exit code"
    );
}

#[test]
fn follow_keeps_going_while_squeue_fails() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("x\n"));
    fake.shim(
        "squeue",
        &format!(
            "if [ \"$N\" -eq 2 ]; then {CONTROLLER_DOWN}; fi\ncase $N in 1) {};; *) {};; esac",
            fake.line("101", "RUNNING"),
            fake.line("101", "COMPLETED")
        ),
    );
    fake.shim(
        "scontrol",
        "echo 'JobId=101 JobState=COMPLETED ExitCode=0:0'",
    );
    let out = fake.run(["logs", "-f", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "x\n");
    assert!(
        stderr.contains("Unable to contact slurm controller"),
        "{stderr}"
    );
    assert!(stderr.contains("unknown until squeue answers"), "{stderr}");
    assert!(stderr.contains("squeue answers again"), "{stderr}");
    assert!(stderr.contains("COMPLETED, exit code 0"), "{stderr}");
    assert_eq!(fake.calls("squeue").len(), 3);
}

#[test]
fn follow_reports_a_deleted_log_and_goes_on() {
    let fake = Fake::new();
    let log = fake.seed("resnet", "101", 1, Some("before\n"));
    fake.shim(
        "squeue",
        &format!(
            "case $N in 1) {};; 2) rm -f {log}; {};; *) {};; esac",
            fake.line("101", "RUNNING"),
            fake.line("101", "RUNNING"),
            fake.line("101", "CANCELLED"),
            log = log.display()
        ),
    );
    fake.shim(
        "scontrol",
        "echo 'JobId=101 JobState=CANCELLED ExitCode=0:15'",
    );
    let out = fake.run(["logs", "-f", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert_eq!(stdout, "before\n");
    assert_eq!(stderr.matches("was deleted").count(), 1, "{stderr}");
    assert!(stderr.contains("CANCELLED, exit code 143"), "{stderr}");
}

#[test]
fn follow_of_a_job_slurm_forgot_uses_the_final_state() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("all done\n"));
    fake.final_state("resnet", "101", 5, "failed");
    fake.shim(
        "squeue",
        "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1",
    );
    let out = fake.run(["logs", "-f", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert_eq!(stdout, "all done\n");
}

#[test]
fn follow_of_a_run_with_a_recorded_end_asks_slurm_nothing() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("done long ago\n"));
    fake.shim("squeue", &fake.line("101", "FAILED"));
    fake.shim("scontrol", "echo 'JobId=101 JobState=FAILED ExitCode=6:0'");
    let out = fake.run(["status", "101"]).output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    // The job id is handed to another job; the record keeps what it learned.
    fake.shim("squeue", &fake.line("101", "RUNNING"));
    let scontrol_calls = fake.calls("scontrol").len();
    let start = Instant::now();
    let out = fake.run(["logs", "-f", "101"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert_eq!(stdout, "done long ago\n");
    // No follow loop: that would ask squeue (at once, then every 2 s) or scontrol.
    assert_eq!(fake.calls("squeue").len(), 1, "only the status call");
    assert_eq!(
        fake.calls("scontrol").len(),
        scontrol_calls,
        "logs -f asks scontrol nothing"
    );
    // Only a hang is a failure here; how fast it is is for benchmarks, not a shared machine.
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}

/// Starts following (`args`) job 101, which squeue shows RUNNING and then COMPLETING for good,
/// as a dead node keeps it for minutes; once squeue has been asked a second time, writes the
/// final state at the path `state_file` finds, with exit code 5. Returns the follower's output
/// and how long it took after the final state was written.
fn follow_while_completing(
    fake: &Fake,
    args: &[&str],
    submitted: &str,
    state_file: &dyn Fn(&Fake) -> PathBuf,
) -> (std::process::Output, Duration) {
    fake.shim(
        "squeue",
        &format!(
            "case $N in 1) {};; *) {};; esac",
            line_at("101", "RUNNING", submitted),
            line_at("101", "COMPLETING", submitted)
        ),
    );
    let child = fake
        .run(args.iter().copied())
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while fake.calls("squeue").len() < 2 {
        assert!(Instant::now() < deadline, "never asked squeue twice");
        std::thread::sleep(Duration::from_millis(50));
    }
    write_final_state(&state_file(fake), "101", 5, "node-failed");
    let written = Instant::now();
    let out = wait_within(child, Duration::from_secs(30));
    (out, written.elapsed())
}

/// A node that dies keeps the job COMPLETING until Slurm declares the node down
/// (`SlurmdTimeout`, 300 s by default), though the bootstrap has ended and written its final
/// state. `logs -f` and `launch --follow` end with the final state's ending and exit code then,
/// not when Slurm lets the job go.
#[test]
fn follow_ends_with_the_final_state_while_slurm_still_shows_completing() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("training\n"));
    let submitted = squeue_time(fake.submitted("101"));
    let (out, after) =
        follow_while_completing(&fake, &["logs", "-f", "resnet"], &submitted, &|f| {
            f.logs.join("resnet_101.state.json")
        });
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert_eq!(stdout, "training\n");
    assert!(
        stderr.contains("job 101 (resnet) is COMPLETING"),
        "{stderr}"
    );
    assert!(
        stderr.contains("job 101 (resnet) NODE_FAIL, exit code 5"),
        "the final state's ending and code: {stderr}"
    );
    assert!(after < Duration::from_secs(30), "{after:?}");
    assert!(
        fake.calls("scontrol").is_empty(),
        "the final state has the code"
    );

    // `launch --follow`: the final state goes where the launch put its script.
    let fake = Fake::new();
    fake.shim("sbatch", "echo 101");
    let (out, after) = follow_while_completing(
        &fake,
        &[
            "launch",
            "--exp-name",
            "resnet",
            "--command",
            "python train.py",
            "--follow",
        ],
        NOW,
        &|f| {
            let call = f.calls("sbatch").pop().expect("sbatch was called");
            let script = call.split_whitespace().last().unwrap().to_owned();
            PathBuf::from(script.strip_suffix(".sh").unwrap().to_owned() + ".state.json")
        },
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert_eq!(
        stdout, "101\n",
        "the job id, then no log (none was written)"
    );
    assert!(
        stderr.contains("job 101 (resnet) NODE_FAIL, exit code 5"),
        "{stderr}"
    );
    assert!(after < Duration::from_secs(30), "{after:?}");
}

/// Starts rayslurm with `args`, waits until it has asked squeue, and sends it SIGINT.
fn interrupt(fake: &Fake, args: &[&str]) -> (Option<i32>, String) {
    let mut child = fake
        .run(args.iter().copied())
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while fake.calls("squeue").is_empty() {
        assert!(Instant::now() < deadline, "never asked squeue");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap().code(), stderr)
}

#[test]
fn ctrl_c_stops_following_without_cancelling() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("x\n"));
    fake.shim("squeue", &fake.line("101", "RUNNING"));
    fake.shim("scancel", "exit 0");
    let (code, stderr) = interrupt(&fake, &["logs", "-f", "resnet"]);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("Cancel it with `rayslurm cancel 101`"),
        "{stderr}"
    );
    assert!(fake.calls("scancel").is_empty());
}

#[test]
fn ctrl_c_with_cancel_on_interrupt_cancels() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("x\n"));
    let cancelled = fake.shims.join("cancelled");
    fake.shim(
        "squeue",
        &format!(
            "if [ -e {c} ]; then {}; else {}; fi",
            line_at("101", "CANCELLED", NOW),
            line_at("101", "RUNNING", NOW),
            c = cancelled.display()
        ),
    );
    fake.shim("scancel", &format!("touch {}", cancelled.display()));
    fake.shim(
        "scontrol",
        "echo 'JobId=101 JobState=CANCELLED ExitCode=0:15'",
    );
    // `--cancel-on-interrupt` belongs to `launch --follow`: launch with a fake sbatch.
    fake.shim("sbatch", "echo 101");
    let (code, stderr) = interrupt(
        &fake,
        &[
            "launch",
            "--exp-name",
            "resnet",
            "--command",
            "sleep 100",
            "--follow",
            "--cancel-on-interrupt",
        ],
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(fake.calls("scancel"), ["101"]);
    assert!(
        stderr.contains("cancelled job 101 (resnet): CANCELLED"),
        "{stderr}"
    );
}

#[test]
fn cancel_confirms_the_job_stopped_and_status_remembers() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("resnet", "102", 2, None);
    let cancelled = fake.shims.join("cancelled");
    fake.shim(
        "squeue",
        &format!(
            "if [ -e {c} ]; then {}; else {}; fi",
            fake.line("102", "CANCELLED"),
            fake.line("102", "RUNNING"),
            c = cancelled.display()
        ),
    );
    fake.shim(
        "scancel",
        &format!("sleep 0.3; touch {}", cancelled.display()),
    );
    fake.shim(
        "scontrol",
        "echo 'JobId=102 JobState=CANCELLED ExitCode=0:15 RunTime=00:00:07'",
    );
    let out = fake.run(["cancel", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "102", "the latest run of the experiment");
    assert_eq!(fake.calls("scancel"), ["102"]);
    assert!(
        stderr.contains("cancelled job 102 (resnet): it is CANCELLED"),
        "{stderr}"
    );
    // Slurm forgets the job; the record still knows.
    fake.shim("squeue", "exit 0");
    let out = fake.run(["status", "--json", "102"]).output();
    let rows = json(&text(&out).0);
    assert_eq!(rows[0]["state"], "CANCELLED");
    assert_eq!(rows[0]["exit_code"], 143);
    // Cancelling again is nothing to do.
    let out = fake.run(["cancel", "102"]).output();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out).1.contains("already ended (CANCELLED)"),
        "{}",
        text(&out).1
    );
    assert_eq!(fake.calls("scancel").len(), 1);
}

#[test]
fn cancel_of_a_job_that_already_ended() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.final_state("resnet", "101", 0, "completed");
    fake.shim(
        "scancel",
        "echo 'scancel: error: Kill job error on job id 101: Invalid job id specified' >&2; exit 1",
    );
    fake.shim(
        "squeue",
        "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1",
    );
    let out = fake.run(["cancel", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("job 101 (resnet) already ended (COMPLETED)"),
        "{stderr}"
    );
}

#[test]
fn scancel_refusing_is_a_failure() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.shim(
        "scancel",
        "echo 'scancel: error: Kill job error on job id 101: Access/permission denied' >&2; exit 1",
    );
    fake.shim("squeue", &fake.line("101", "RUNNING"));
    let out = fake.run(["cancel", "resnet"]).output();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error: cannot cancel job 101"), "{stderr}");
    assert!(stderr.contains("Access/permission denied"), "{stderr}");
}

#[test]
fn launch_records_runs_and_concurrent_launches_keep_all() {
    let fake = Fake::new();
    // Job ids from a counter, as slurmctld hands them out.
    let counter = fake.shims.join("next-id");
    fake.shim(
        "sbatch",
        &format!("exec 9>>{c}.lock; flock 9; n=$(( $(cat {c} 2>/dev/null || echo 300) + 1 )); echo $n > {c}; echo $n", c = counter.display()),
    );
    let launches: Vec<Run> = (0..6)
        .map(|_| {
            fake.run([
                "launch",
                "--exp-name",
                "sweep",
                "--command",
                "python train.py --lr 0.1",
            ])
        })
        .collect();
    let outputs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = launches
            .into_iter()
            .map(|run| s.spawn(move || run.output()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for out in &outputs {
        assert_eq!(out.status.code(), Some(0), "{}", text(out).1);
    }
    fake.shim("squeue", "exit 0");
    let out = fake.run(["status", "--json", "sweep"]).output();
    let rows = json(&text(&out).0);
    assert_eq!(rows.len(), 6, "{rows:?}");
    let mut ids: Vec<&str> = rows.iter().map(|r| r["job_id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["301", "302", "303", "304", "305", "306"]);
    let row = &rows[0];
    assert_eq!(row["command"], "python train.py --lr 0.1");
    assert_eq!(row["nodes"], 1);
    // The log is the user's alone; the log directory has a link to it.
    let log = Path::new(row["log"].as_str().unwrap());
    assert_eq!(
        std::fs::read_link(fake.logs.join(log.file_name().unwrap())).unwrap(),
        log
    );
    assert_eq!(Path::new(row["workdir"].as_str().unwrap()), fake.logs);
}

/// squeue's submit time for a job that was given the seeded run's id `days` days after the
/// run was submitted (a rebuilt cluster starts again at job 1; real clusters wrap around).
fn reused(fake: &Fake, job: &str, days: i64) -> String {
    squeue_time(fake.submitted(job) + chrono::TimeDelta::days(days))
}

#[test]
fn status_of_a_run_whose_job_id_was_reused_is_not_the_new_jobs() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("bert", "102", 2, None);
    fake.final_state("bert", "102", 4, "failed");
    fake.shim(
        "squeue",
        &format!(
            "{}\n{}",
            line_at("101", "RUNNING", &reused(&fake, "101", 3)),
            line_at("102", "COMPLETED", &reused(&fake, "102", 3))
        ),
    );
    let out = fake.run(["status", "--json"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rows = json(&stdout);
    assert_eq!(rows[0]["job_id"], "102");
    assert_eq!(
        (rows[0]["state"].as_str(), rows[0]["exit_code"].as_i64()),
        (Some("FAILED"), Some(4)),
        "the run's own final state, not the new job's COMPLETED"
    );
    assert_eq!(rows[0]["source"], "final-state");
    assert_eq!(rows[1]["job_id"], "101");
    assert_eq!(rows[1]["state"], "ENDED", "{stdout}");
    assert_eq!(rows[1]["nodelist"], serde_json::Value::Null);
    assert!(!stdout.contains("RUNNING"), "{stdout}");
    // scontrol and sacct would describe the new job too.
    assert!(fake.calls("scontrol").is_empty());
    assert!(fake.calls("sacct").is_empty());
}

#[test]
fn status_ignores_what_sacct_says_of_a_newer_job_with_the_id() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("resnet", "102", 2, None);
    // slurmctld has forgotten both ids; accounting knows the newest job that had each.
    fake.shim("squeue", "exit 0");
    let own = squeue_time(fake.submitted("102"));
    fake.shim(
        "sacct",
        &format!(
            "echo '101|COMPLETED|0:0|9|{}'\necho '102|FAILED|3:0|7|{own}'",
            reused(&fake, "101", 3)
        ),
    );
    let out = fake.run(["status", "--json"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rows = json(&stdout);
    assert_eq!(
        (rows[0]["state"].as_str(), rows[0]["exit_code"].as_i64()),
        (Some("FAILED"), Some(3)),
        "sacct's line for the run's own job"
    );
    assert_eq!(rows[1]["state"], "ENDED", "{stdout}");
    assert_eq!(rows[1]["exit_code"], serde_json::Value::Null);
}

/// What `status` says of an ended run without a final state, in both forms.
const NO_FINAL_STATE: &str = "ended without a final state";

/// Two `status` commands, one after the other, and their stdout: for a run Slurm shows ended,
/// the first asks Slurm and the second reads the run's end from its record.
fn status_twice(fake: &Fake, first: &[&str], second: &[&str]) -> [String; 2] {
    [first, second].map(|args| {
        let out = fake.run(args.iter().copied()).output();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        stdout
    })
}

/// An ended job whose bootstrap wrote no final state (killed before anything could write one,
/// say): `status` shows only what Slurm knows and says that nothing told how the run ended,
/// and still says so once the end is kept in the run's record.
#[test]
fn status_of_an_ended_job_without_a_final_state_says_so() {
    let fake = Fake::new();
    // Slurm shows it FAILED; slurmctld has forgotten it and there is no accounting; it wrote a
    // final state.
    fake.seed("resnet", "101", 1, None);
    fake.seed("bert", "102", 2, None);
    fake.seed("gpt", "103", 3, None);
    fake.final_state("gpt", "103", 0, "completed");
    fake.shim(
        "squeue",
        &format!(
            "{}\n{}",
            fake.line("101", "FAILED"),
            fake.line("103", "COMPLETED")
        ),
    );
    fake.shim(
        "scontrol",
        "echo 'JobId=101 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 RunTime=00:00:07 NodeList=node[1-2]'",
    );
    fake.shim("sacct", "exit 0");
    let said = Some(NO_FINAL_STATE.to_owned());
    let check_rows = |stdout: &str, from: &str| {
        let rows = json(stdout);
        let seen: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r["job_id"].as_str().unwrap().to_owned(),
                    r["state"].as_str().unwrap().to_owned(),
                    r["exit_code"].as_i64(),
                    r["message"].as_str().map(str::to_owned),
                )
            })
            .collect();
        let expected = [
            ("103", "COMPLETED", Some(0), None),
            // No state guessed.
            ("102", "ENDED", None, said.clone()),
            // Slurm's state and exit code, nothing more.
            ("101", "FAILED", Some(3), said.clone()),
        ]
        .map(|(id, state, code, message)| (id.to_owned(), state.to_owned(), code, message));
        assert_eq!(seen, expected, "{from}");
    };
    let check_table = |table: &str, from: &str| {
        assert!(
            table.contains(&format!("\njob 101: {NO_FINAL_STATE}\n"))
                && table.contains(&format!("\njob 102: {NO_FINAL_STATE}\n")),
            "{from}: {table}"
        );
        assert!(!table.contains("job 103:"), "{from}: {table}");
    };
    let [rows, table] = status_twice(&fake, &["status", "--json"], &["status"]);
    check_rows(&rows, "asking Slurm");
    check_table(&table, "from the records");
    let [table, rows] = status_twice(&fake, &["status"], &["status", "--json"]);
    check_table(&table, "from the records");
    check_rows(&rows, "from the records");
    assert_eq!(
        fake.calls("squeue").len(),
        1,
        "the ends were kept in the records"
    );
}

/// Regression: a run whose job id Slurm had given to a newer job, and whose bootstrap wrote no
/// final state, was shown `ENDED` without saying that nothing told how it ended.
#[test]
fn status_of_a_reused_job_id_without_a_final_state_says_it_ended_without_one() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.shim(
        "squeue",
        &line_at("101", "RUNNING", &reused(&fake, "101", 3)),
    );
    let check_row = |stdout: &str, from: &str| {
        let row = &json(stdout)[0];
        assert_eq!(row["state"], "ENDED", "{from}: {row}");
        assert_eq!(row["exit_code"], serde_json::Value::Null, "{from}: {row}");
        assert_eq!(row["nodelist"], serde_json::Value::Null, "{from}: {row}");
        assert_eq!(row["message"], NO_FINAL_STATE, "{from}: {row}");
    };
    let check_table = |table: &str, from: &str| {
        assert!(
            table.contains(&format!("\njob 101: {NO_FINAL_STATE}")),
            "{from}: {table}"
        );
        assert!(!table.contains("RUNNING"), "{from}: {table}");
    };
    let [rows, table] = status_twice(&fake, &["status", "--json"], &["status"]);
    check_row(&rows, "asking Slurm");
    check_table(&table, "from the record");
    // And the table when it is the one that asks Slurm.
    std::fs::remove_dir_all(fake.state.join("runs")).unwrap();
    fake.seed("resnet", "101", 1, None);
    let [table, rows] = status_twice(&fake, &["status"], &["status", "--json"]);
    check_table(&table, "asking Slurm");
    check_row(&rows, "from the record");
    // scontrol and sacct would describe the new job.
    assert!(fake.calls("scontrol").is_empty());
    assert!(fake.calls("sacct").is_empty());
}

#[test]
fn cancel_of_a_run_whose_job_id_was_reused_leaves_the_new_job_alone() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("bert", "102", 2, None);
    fake.final_state("bert", "102", 0, "completed");
    fake.shim(
        "squeue",
        &format!(
            "{}\n{}",
            line_at("101", "RUNNING", &reused(&fake, "101", 3)),
            line_at("102", "PENDING", &reused(&fake, "102", 40))
        ),
    );
    fake.shim("scancel", "exit 0");
    let out = fake.run(["cancel", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert!(
        fake.calls("scancel").is_empty(),
        "{:?}",
        fake.calls("scancel")
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "", "nothing was cancelled");
    assert!(
        stderr.contains("job 101 (resnet) already ended (ENDED); nothing to cancel"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Slurm has given job id 101 to a newer job, which was left alone"),
        "{stderr}"
    );
    let out = fake.run(["cancel", "bert"]).output();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("job 102 (bert) already ended (COMPLETED)"),
        "the run's final state says how it ended: {stderr}"
    );
    assert!(
        fake.calls("scancel").is_empty(),
        "{:?}",
        fake.calls("scancel")
    );
}

#[test]
fn a_submit_time_within_the_slack_is_the_runs_job() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    // The controller's clock is half a minute behind the login node's.
    let submitted = squeue_time(fake.submitted("101") - chrono::TimeDelta::seconds(30));
    let cancelled = fake.shims.join("cancelled");
    fake.shim(
        "squeue",
        &format!(
            "if [ -e {c} ]; then {}; else {}; fi",
            line_at("101", "CANCELLED", &submitted),
            line_at("101", "RUNNING", &submitted),
            c = cancelled.display()
        ),
    );
    fake.shim("scancel", &format!("touch {}", cancelled.display()));
    fake.shim(
        "scontrol",
        "echo 'JobId=101 JobState=CANCELLED ExitCode=0:15 RunTime=00:00:07'",
    );
    let out = fake.run(["status", "--json"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rows = json(&stdout);
    assert_eq!(rows[0]["state"], "RUNNING", "{stdout}");
    assert_eq!(rows[0]["nodelist"], "node[1-2]");
    let out = fake.run(["cancel", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "101");
    assert_eq!(fake.calls("scancel"), ["101"]);
    assert!(
        stderr.contains("cancelled job 101 (resnet): it is CANCELLED"),
        "{stderr}"
    );
}

/// Slurm gives a requeued job a new submit time but keeps its script (seen with `scontrol
/// requeue` on the lab cluster): it is still the run's job.
#[test]
fn a_requeued_job_is_still_the_runs_job() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    let script = fake.logs.join("resnet_101.sh");
    let requeued = reused(&fake, "101", 1);
    fake.shim(
        "squeue",
        &format!(
            "echo \"101|PENDING|BeginTime|0:00|2|{requeued}||{}\"",
            script.display()
        ),
    );
    let out = fake.run(["status", "--json"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(json(&stdout)[0]["state"], "PENDING", "{stdout}");
    // Another script with that submit time is another job.
    fake.shim(
        "squeue",
        &format!("echo \"101|PENDING|BeginTime|0:00|2|{requeued}||/elsewhere/other.sh\""),
    );
    let out = fake.run(["status", "--json"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(json(&stdout)[0]["state"], "ENDED", "{stdout}");
}

#[test]
fn follow_of_a_run_whose_job_id_was_reused_does_not_follow_the_new_job() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, Some("ours\n"));
    let other = reused(&fake, "101", 3);
    fake.shim(
        "squeue",
        &format!(
            "case $N in 1) {};; *) {};; esac",
            line_at("101", "RUNNING", &other),
            line_at("101", "COMPLETED", &other)
        ),
    );
    let out = fake.run(["logs", "-f", "resnet"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stdout, "ours\n");
    assert!(
        stderr.contains("job 101 (resnet) ENDED, exit code unknown"),
        "{stderr}"
    );
    assert!(!stderr.contains("RUNNING"), "{stderr}");
    assert_eq!(fake.calls("squeue").len(), 1);
}

#[test]
fn cancel_sends_no_scancel_while_squeue_cannot_say_whose_the_job_id_is() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.shim("squeue", CONTROLLER_DOWN);
    fake.shim("scancel", "exit 0");
    let out = fake.run(["cancel", "resnet"]).output();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: cannot tell whether job 101 is still this run's job, so it was not cancelled"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("Unable to contact slurm controller"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: try again once squeue answers"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("trying again in").count(), 3, "{stderr}");
    assert!(fake.calls("scancel").is_empty());
}

/// Regression: for an array job, squeue has no line under the job's own id, and `cancel`
/// reported the job ended (`ENDED`) right after `scancel` without seeing it stop.
#[test]
fn cancel_of_an_array_job_waits_until_slurm_shows_it_stopped() {
    let fake = Fake::new();
    fake.seed("sweep", "101", 1, None);
    let cancelled = fake.shims.join("cancelled");
    // Slurm shows the elements RUNNING for a while after scancel, as it does when the
    // command takes a moment to stop.
    let elements = |state: &str| {
        format!(
            "{}; {}",
            fake.line("101", state).replace("\"101|", "\"101_1|"),
            fake.line("101", state).replace("\"101|", "\"101_2|")
        )
    };
    fake.shim(
        "squeue",
        &format!(
            "if [ -e {c} ] && [ $(( $(date +%s) - $(stat -c %Y {c}) )) -ge 1 ]; then {}; else {}; fi",
            elements("CANCELLED"),
            elements("RUNNING"),
            c = cancelled.display()
        ),
    );
    fake.shim("scancel", &format!("touch {}", cancelled.display()));
    fake.shim(
        "scontrol",
        "echo 'JobId=101 ArrayJobId=101 ArrayTaskId=1 JobState=CANCELLED ExitCode=0:15 RunTime=00:00:07'",
    );
    let out = fake.run(["cancel", "sweep"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "101");
    assert_eq!(fake.calls("scancel"), ["101"]);
    assert!(
        stderr.contains("cancelled job 101 (sweep): it is CANCELLED"),
        "{stderr}"
    );
    assert!(
        fake.calls("squeue").len() >= 3,
        "it watched the job until it stopped: {:?}",
        fake.calls("squeue")
    );
}

/// Regression: a job cancelled while pending showed exit code 0 (Slurm's `ExitCode=0:0`), and
/// `logs` asked whether its log had been moved or deleted.
#[test]
fn a_job_cancelled_before_it_ran_has_no_exit_code_and_no_log() {
    let fake = Fake::new();
    fake.seed("early", "101", 1, None);
    let submitted = squeue_time(fake.submitted("101"));
    fake.shim(
        "squeue",
        &format!("echo \"101|CANCELLED|None|0:00|2|{submitted}|\""),
    );
    fake.shim(
        "scontrol",
        "echo 'JobId=101 JobState=CANCELLED ExitCode=0:0 RunTime=00:00:00'",
    );
    let out = fake.run(["status", "--json", "101"]).output();
    let rows = json(&text(&out).0);
    assert_eq!(rows[0]["state"], "CANCELLED");
    assert_eq!(rows[0]["exit_code"], serde_json::Value::Null, "{}", rows[0]);
    assert_eq!(rows[0]["message"], "ended before it started");
    let out = fake.run(["status", "101"]).output();
    let (stdout, _) = text(&out);
    let row = stdout.lines().nth(1).unwrap();
    assert!(
        row.contains("CANCELLED") && row.contains("  -  "),
        "{stdout}"
    );
    let out = fake.run(["logs", "101"]).output();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("job 101 (early) ended before it started (CANCELLED), so it wrote no log"),
        "{stderr}"
    );
    assert!(!stderr.contains("moved or deleted"), "{stderr}");
}

/// Marks a seeded run as a persistent cluster (as `up` records it).
fn seed_cluster(fake: &Fake, name: &str, job: &str) {
    fake.seed(name, job, 3, Some("cluster log"));
    let path = fake.state.join(format!("runs/{job}.json"));
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["cluster"] = serde_json::Value::Bool(true);
    std::fs::write(&path, record.to_string()).unwrap();
}

#[test]
fn cluster_commands_refuse_bad_input_and_submit_nothing() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    seed_cluster(&fake, "sweep", "102");
    let cases: &[(&[&str], &str)] = &[
        (&["exec", "swep", "--", "true"], "no cluster named `swep`"),
        (&["exec", "swep", "--", "true"], "did you mean sweep?"),
        (&["exec", "sweep"], "no command to run"),
        (
            &["exec", "sweep", "--num-gpus", "0", "--", "true"],
            "--num-gpus 0 is not a positive number",
        ),
        (
            &["exec", "sweep", "--memory", "lots", "--", "true"],
            "invalid --memory",
        ),
        (
            &["exec", "sweep", "--env", "NOEQUALS", "--", "true"],
            "--env",
        ),
        (&["queue", "nope"], "no cluster named `nope`"),
        (&["down", "nope"], "no cluster named `nope`"),
        (
            &["up", "resnet"],
            "`resnet` is the name of a recorded experiment",
        ),
        (&["up", "a/b"], "invalid --exp-name"),
        (
            &["up", "x", "--per-node"],
            "--per-node does not go with `up`",
        ),
        (&["up", "x", "--idle-timeout", "5d"], "unknown unit"),
        (
            &["cancel", "sweep"],
            "`rayslurm down sweep` stops the cluster",
        ),
        (&["logs", "sweep", "7"], "cluster `sweep` has no job 7"),
    ];
    for (args, needle) in cases {
        let out = fake.run(args.iter().copied()).output();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
    }
    assert!(fake.calls("sbatch").is_empty(), "nothing submitted");
}

/// `--after RUN`: a run still in Slurm's queue is waited for (`afterany`), one that has ended
/// is not (sbatch would refuse a job it has forgotten); the new run keeps RUN's directory.
#[test]
fn a_chain_waits_for_a_live_run_and_starts_at_once_after_an_ended_one() {
    let fake = Fake::new();
    fake.seed("pretrain", "301", 1, None);
    let run_dir = fake.logs.join("pretrain_301.d");
    let script = |stdout: &str| stdout.to_owned();
    fake.shim("squeue", &fake.line("301", "RUNNING"));
    let out = fake
        .run([
            "launch",
            "--dry-run",
            "--exp-name",
            "finetune",
            "--command",
            "true",
            "--requeue",
            "--singleton",
            "--after",
            "pretrain",
        ])
        .output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let live = script(&stdout);
    assert!(
        live.contains("#SBATCH --dependency=afterany:301,singleton\n"),
        "{live}"
    );
    assert!(live.contains("#SBATCH --requeue\n"), "{live}");
    assert!(live.contains("#SBATCH --signal=B:URG@60\n"), "{live}");
    assert!(
        live.contains(&format!("  --run-dir {} \\\n", run_dir.display())),
        "the run directory of the run followed: {live}"
    );
    assert!(
        stderr.contains("this run waits for pretrain (job 301) to end"),
        "{stderr}"
    );

    // Ended, and forgotten by Slurm: no dependency, the same directory.
    fake.final_state("pretrain", "301", 0, "completed");
    fake.shim("squeue", "");
    fake.shim("sacct", "");
    let out = fake
        .run([
            "launch",
            "--dry-run",
            "--exp-name",
            "finetune",
            "--command",
            "true",
            "--after",
            "301",
        ])
        .output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stdout.contains("--dependency"), "{stdout}");
    assert!(
        stdout.contains(&format!("  --run-dir {} \\\n", run_dir.display())),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "pretrain (job 301) has ended (COMPLETED): this run starts without waiting for it"
        ),
        "{stderr}"
    );

    // A run the store does not know is refused, and nothing is written.
    let before = std::fs::read_dir(&fake.logs).unwrap().count();
    let out = fake
        .run([
            "launch",
            "--exp-name",
            "x",
            "--command",
            "true",
            "--after",
            "nosuch",
        ])
        .output();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out).1);
    assert_eq!(std::fs::read_dir(&fake.logs).unwrap().count(), before);
}

/// `cancel RUN --signal USR1`: the batch step alone gets it (the bootstrap passes it on), the
/// run is not cancelled, and a TERM is named first so that the bootstrap does not stop the run.
#[test]
fn cancel_with_a_signal_reaches_the_command_and_stops_nothing() {
    let fake = Fake::new();
    fake.seed("train", "401", 1, None);
    let run_dir = fake.logs.join("train_401.d");
    std::fs::create_dir_all(&run_dir).unwrap();
    fake.shim("squeue", &fake.line("401", "RUNNING"));
    fake.shim("scancel", "exit 0");
    for signal in ["USR1", "term"] {
        let out = fake.run(["cancel", "train", "--signal", signal]).output();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("the run goes on"), "{stderr}");
    }
    assert_eq!(
        fake.calls("scancel"),
        ["--batch --signal=USR1 401", "--batch --signal=TERM 401"]
    );
    assert_eq!(
        std::fs::read_to_string(run_dir.join("signal-request")).unwrap(),
        "TERM 401\n",
        "for job 401 (scontrol did not say which attempt)"
    );
    // A pending job has no command to signal.
    fake.shim("squeue", &fake.line("401", "PENDING"));
    let out = fake.run(["cancel", "train", "--signal", "USR1"]).output();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot be signalled"), "{stderr}");
    assert_eq!(fake.calls("scancel").len(), 2);
    let out = fake.run(["cancel", "train", "--signal", "NOPE"]).output();
    assert_eq!(out.status.code(), Some(2));
}

/// A regression test: a request left behind (by a failed `scancel --batch`, or for an earlier
/// attempt) made a later real SIGTERM reach the command alone. The request names the job and
/// the attempt (Slurm's `Restarts`), and is taken back when no signal was sent.
#[test]
fn a_signal_request_names_its_attempt_and_is_taken_back_when_scancel_fails() {
    let fake = Fake::new();
    fake.seed("train", "401", 1, None);
    let run_dir = fake.logs.join("train_401.d");
    std::fs::create_dir_all(&run_dir).unwrap();
    let request = run_dir.join("signal-request");
    fake.shim("squeue", &fake.line("401", "RUNNING"));
    fake.shim(
        "scontrol",
        "echo 'JobId=401 JobName=train JobState=RUNNING Requeue=1 Restarts=2 BatchFlag=1'",
    );
    fake.shim("scancel", "exit 0");
    let out = fake.run(["cancel", "train", "--signal", "TERM"]).output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert_eq!(std::fs::read_to_string(&request).unwrap(), "TERM 401.2\n");

    std::fs::remove_file(&request).unwrap();
    fake.shim(
        "scancel",
        "echo 'scancel: error: Access/permission denied' >&2; exit 1",
    );
    let out = fake.run(["cancel", "train", "--signal", "TERM"]).output();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot signal job 401"), "{stderr}");
    assert!(!request.exists(), "no signal was sent: no request stays");
}
