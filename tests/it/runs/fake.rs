//! A scratch world for the run commands: a fake of every Slurm client on PATH that logs its
//! calls (each fails with 99 until a test gives it an answer), a run store, a log directory,
//! and the texts Slurm answers with.

use std::path::{Path, PathBuf};

use crate::harness::{Run, SLURM_CLIENTS, UNFAKED_VAR, rayslurm, shim};

/// Fake Slurm commands, a run store and a log directory, removed when the test ends.
pub struct Fake {
    _root: tempfile::TempDir,
    pub shims: PathBuf,
    pub state: PathBuf,
    pub logs: PathBuf,
}

impl Fake {
    pub fn new() -> Self {
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
        // Anything a test does not fake must not reach a real cluster: every Slurm client is
        // faked, notes its calls, and fails the test on a call until the test gives it an
        // answer (as the harness's own stubs do); `srun --version`, which every launch asks,
        // says a tested release.
        for name in SLURM_CLIENTS {
            let answer = if *name == "srun" {
                "if [ \"$*\" = --version ]; then echo 'slurm-wlm 22.05.8'; exit 0; fi\n"
            } else {
                ""
            };
            fake.shim(
                name,
                &format!(
                    "{answer}echo \"{name} $*\" >> \"${{{UNFAKED_VAR}:-/dev/null}}\"\n\
                     echo '{name}: not faked in this test' >&2; exit 99"
                ),
            );
        }
        fake
    }

    /// A fake command; `$CALLS` is its call log and `$N` the number of this call (from 1).
    pub fn shim(&self, name: &str, body: &str) {
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

    /// A fake command that answers its first calls with `answers` in turn, and every later
    /// call with the last one.
    pub fn shim_in_turn(&self, name: &str, answers: &[&str]) {
        let (last, first) = answers.split_last().expect("an answer");
        let mut body = String::from("case $N in ");
        for (n, answer) in first.iter().enumerate() {
            body.push_str(&format!("{}) {answer};; ", n + 1));
        }
        body.push_str(&format!("*) {last};; esac"));
        self.shim(name, &body);
    }

    /// A fake `scancel` (that waits `delay` first, e.g. `sleep 0.3`, or does nothing first)
    /// and a fake `squeue` that answers `running` until scancel was called, then `cancelled`.
    pub fn scancel_stops(&self, delay: &str, running: &str, cancelled: &str) {
        let marker = self.shims.join("cancelled");
        self.shim(
            "squeue",
            &format!(
                "if [ -e {c} ]; then {cancelled}; else {running}; fi",
                c = marker.display()
            ),
        );
        self.shim("scancel", &format!("{delay}\ntouch {}", marker.display()));
    }

    /// The arguments of each call of a fake command.
    pub fn calls(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.shims.join(format!("{name}.calls")))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// rayslurm with the fake commands, in the log directory, with the fake's run store.
    pub fn run<'a>(&self, args: impl IntoIterator<Item = &'a str>) -> Run {
        rayslurm(args)
            .shims(&self.shims)
            .env("TZ", TZ)
            .env("RAYSLURM_STATE_DIR", &self.state)
            .cwd(&self.logs)
    }

    /// Records a run as `launch` would, with its log holding `log` (if any).
    pub fn seed(&self, exp: &str, job: &str, minute: u32, log: Option<&str>) -> PathBuf {
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

    /// Marks a seeded run as a persistent cluster (as `up` records it).
    pub fn seed_cluster(&self, name: &str, job: &str) {
        self.seed(name, job, 3, Some("cluster log"));
        let path = self.record(job);
        let mut record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        record["cluster"] = serde_json::Value::Bool(true);
        std::fs::write(&path, record.to_string()).unwrap();
    }

    /// The path of a run's record in the store.
    pub fn record(&self, job: &str) -> PathBuf {
        self.state.join(format!("runs/{job}.json"))
    }

    /// When a seeded run was submitted, as its record says.
    pub fn submitted(&self, job: &str) -> chrono::DateTime<chrono::FixedOffset> {
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(self.record(job)).unwrap()).unwrap();
        chrono::DateTime::parse_from_rfc3339(record["submitted_at"].as_str().unwrap()).unwrap()
    }

    /// squeue's answer for the seeded run's job `id` in `state`.
    pub fn line(&self, id: &str, state: &str) -> String {
        line_at(id, state, &squeue_time(self.submitted(id)))
    }

    /// squeue's submit time for a job that was given the seeded run's id `days` days after the
    /// run was submitted (a rebuilt cluster starts again at job 1; real clusters wrap around).
    pub fn reused(&self, job: &str, days: i64) -> String {
        squeue_time(self.submitted(job) + chrono::TimeDelta::days(days))
    }

    /// Writes the bootstrap's final state for a seeded run.
    pub fn final_state(&self, exp: &str, job: &str, code: i32, ending: &str) {
        write_final_state(
            &self.logs.join(format!("{exp}_{job}.state.json")),
            job,
            code,
            ending,
        );
    }
}

/// Writes a final state as the bootstrap does (`handoff::final_state`).
pub fn write_final_state(path: &Path, job: &str, code: i32, ending: &str) {
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
pub fn line_at(id: &str, state: &str, submitted: &str) -> String {
    let nodes = if state == "PENDING" { "" } else { "node[1-2]" };
    let reason = if state == "PENDING" {
        "Resources"
    } else {
        "None"
    };
    format!("echo \"{id}|{state}|{reason}|0:07|2|{submitted}|{nodes}\"")
}

/// A fake command's body that prints `line` (scontrol's, sacct's) and succeeds.
pub fn says(line: &str) -> String {
    format!("echo '{line}'")
}

/// A fake command's body that prints `message` on stderr and exits 1.
pub fn fails(message: &str) -> String {
    format!("echo '{message}' >&2; exit 1")
}

/// The time zone of rayslurm and the fake Slurm commands (POSIX form: UTC+05:30). squeue prints
/// submit times in local time without an offset; a zone away from UTC shows they are read so.
const TZ: &str = "IST-5:30";

/// [`TZ`]'s offset from UTC, in seconds.
const TZ_OFFSET: i32 = 5 * 3600 + 30 * 60;

/// The submit time of a job submitted as squeue is asked, for runs `launch` records itself.
pub const NOW: &str = "$(date +%Y-%m-%dT%H:%M:%S)";

/// `at` as squeue prints a submit time.
pub fn squeue_time(at: chrono::DateTime<chrono::FixedOffset>) -> String {
    let local = chrono::FixedOffset::east_opt(TZ_OFFSET).unwrap();
    at.with_timezone(&local)
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string()
}

/// squeue when slurmctld does not answer.
pub const CONTROLLER_DOWN: &str = "echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit 1";

/// squeue (or scontrol) when slurmctld has forgotten the job.
pub const INVALID_JOB_ID: &str =
    "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1";

/// The `launch` arguments of a run named `exp` that runs `command`.
pub fn launch<'a>(exp: &'a str, command: &'a str) -> Vec<&'a str> {
    vec!["launch", "--exp-name", exp, "--command", command]
}
