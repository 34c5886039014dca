//! End-to-end tests of following, finding and managing runs on the real test cluster
//! (`launch --follow`, `logs -f`, `status`, `cancel`), in plain multi-node mode (`--no-ray`) so
//! jobs take seconds. Skipped loudly without the cluster, failing under CI=true.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{
    Lab, RemovedFromNodes, TEST_MADE, is_ended_state, lab, rayslurm, status_without_token, text,
    wait_job_end,
};

/// Jobs may wait behind other tests' jobs (the e2e tests run side by side on the lab's
/// exclusive nodes): be patient; this bound only catches a run that never gets there.
const PATIENCE: Duration = Duration::from_secs(600);

/// A test's own shared directory and run store.
struct World {
    dir: PathBuf,
    /// The run store and the runs' private files: on the shared filesystem, where the nodes
    /// see them.
    state: StateDir,
}

struct StateDir(PathBuf);

impl StateDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl World {
    fn new(lab: &Lab, name: &str) -> Self {
        Self {
            dir: lab.workdir(name),
            state: StateDir(lab.workdir(&format!("{name}-state"))),
        }
    }

    fn rayslurm(&self, args: &[&str]) -> Output {
        rayslurm(args)
            .cwd(&self.dir)
            .env("RAYSLURM_STATE_DIR", self.state.path())
            .output()
    }

    /// `launch --no-ray` of `command` as experiment `exp`, plus `extra` flags.
    fn launch(&self, exp: &str, command: &str, extra: &[&str]) -> Output {
        let dir = self.dir.display().to_string();
        let mut args = vec![
            "launch",
            "--no-ray",
            "--exp-name",
            exp,
            "--command",
            command,
            "--log-dir",
            &dir,
            "--time",
            "5",
        ];
        args.extend_from_slice(extra);
        self.rayslurm(&args)
    }

    /// Launches without following; returns the job id.
    fn submit(&self, exp: &str, command: &str, extra: &[&str]) -> String {
        let out = self.launch(exp, command, extra);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "launch failed: {stderr}");
        stdout.trim().to_owned()
    }

    fn status(&self, target: &str) -> Vec<serde_json::Value> {
        let out = self.rayslurm(&["status", "--json", target]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "status failed: {stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }

    /// Polls `status` until the run's state satisfies `done`; returns the row.
    fn wait_state(&self, job: &str, what: &str, done: impl Fn(&str) -> bool) -> serde_json::Value {
        let start = Instant::now();
        loop {
            let row = self.status(job).remove(0);
            if done(row["state"].as_str().unwrap_or_default()) {
                return row;
            }
            assert!(start.elapsed() < PATIENCE, "job {job} never {what}: {row}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

#[test]
fn launch_follow_prints_the_output_and_exits_with_the_jobs_code() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-follow");
    let (ok, failed) = std::thread::scope(|s| {
        let ok = s.spawn(|| {
            world.launch(
                "follow-ok",
                "echo first line; sleep 1; echo second line",
                &["--follow"],
            )
        });
        let failed = s.spawn(|| {
            world.launch(
                "follow-fail",
                "echo about to fail; exit 3",
                &["--follow", "--num-nodes", "2"],
            )
        });
        (ok.join().unwrap(), failed.join().unwrap())
    });
    let (stdout, stderr) = text(&ok);
    assert_eq!(ok.status.code(), Some(0), "{stdout}\n{stderr}");
    let first = stdout.find("first line\n").expect(&stdout);
    let second = stdout.find("second line\n").expect(&stdout);
    assert!(first < second, "{stdout}");
    assert!(stderr.contains("COMPLETED, exit code 0"), "{stderr}");

    let (stdout, stderr) = text(&failed);
    assert_eq!(failed.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stdout.contains("about to fail\n"), "{stdout}");
    assert!(stderr.contains("FAILED, exit code 3"), "{stderr}");

    // Both ends are known to status.
    let row = world.status("follow-fail").remove(0);
    assert_eq!(
        (row["state"].as_str(), row["exit_code"].as_i64()),
        (Some("FAILED"), Some(3))
    );
    assert_eq!(row["nodes"], 2);
}

#[test]
fn logs_follow_streams_a_running_job() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-logs");
    let job = world.submit(
        "logs-f",
        "for i in 1 2 3 4 5 6; do echo tick $i; sleep 1; done; exit 4",
        &[],
    );
    world.wait_state(&job, "started", |s| s != "PENDING");

    // Read `logs -f` line by line, with the time each line arrived.
    let mut child = rayslurm(["logs", "-f", "logs-f"])
        .env("RAYSLURM_STATE_DIR", world.state.path())
        .cwd(&world.dir)
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let lines: Vec<(Duration, String)> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| (start.elapsed(), l.unwrap()))
        .collect();
    let status = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert_eq!(status.status.code(), Some(4), "{lines:?}\n{stderr}");
    let ticks: Vec<&(Duration, String)> = lines
        .iter()
        .filter(|(_, l)| l.starts_with("tick"))
        .collect();
    let texts: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        texts,
        ["tick 1", "tick 2", "tick 3", "tick 4", "tick 5", "tick 6"],
        "{stderr}"
    );
    // Streamed as written, not all at the end.
    let (first, last) = (ticks[0].0, ticks[5].0);
    assert!(
        last - first >= Duration::from_secs(2),
        "not streamed: {lines:?}"
    );
    assert!(stderr.contains("FAILED, exit code 4"), "{stderr}");
}

#[test]
fn status_shows_pending_running_and_the_final_state() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-status");
    let job = world.submit("status-life", "sleep 4", &["--sbatch-arg=--begin=now+6"]);
    let row = world.status(&job).remove(0);
    assert_eq!(row["state"], "PENDING", "{row}");
    assert!(row["reason"].is_string(), "{row}");
    assert_eq!(row["exit_code"], serde_json::Value::Null);

    let out = world.rayslurm(&["status"]);
    let (table, _) = text(&out);
    assert!(table.starts_with("NAME "), "{table}");
    let line = table.lines().nth(1).unwrap_or_default();
    let words: Vec<&str> = line.split_whitespace().take(3).collect();
    assert_eq!(words, ["status-life", job.as_str(), "PENDING"], "{table}");

    let row = world.wait_state(&job, "ran", |s| s == "RUNNING");
    assert!(
        row["nodelist"]
            .as_str()
            .is_some_and(|n| n.starts_with("node")),
        "{row}"
    );
    let row = world.wait_state(&job, "ended", is_ended_state);
    assert_eq!(row["state"], "COMPLETED", "{row}");
    assert_eq!(row["exit_code"], 0, "{row}");
    assert!(
        row["elapsed_seconds"].as_u64().is_some_and(|s| s >= 3),
        "{row}"
    );
}

#[test]
fn cancel_ends_a_running_job_and_status_shows_it_cancelled() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-cancel");
    let job = world.submit("cancel-me", "echo started; sleep 120", &[]);
    world.wait_state(&job, "started", |s| s == "RUNNING");

    let start = Instant::now();
    let out = world.rayslurm(&["cancel", "cancel-me"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim(), job);
    assert!(
        stderr.contains(&format!("cancelled job {job} (cancel-me)")),
        "{stderr}"
    );
    // Exit code 0 already says the end was confirmed (within cancel's own 15 s); this only
    // catches a hang, loosely, as timing is for benchmarks, not a shared machine.
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );

    let info = wait_job_end(&job, Duration::from_secs(60));
    assert_eq!(
        info.get("JobState").map(String::as_str),
        Some("CANCELLED"),
        "{info:?}"
    );
    let row = world.wait_state(&job, "ended", is_ended_state);
    assert_eq!(row["state"], "CANCELLED", "{row}");
    // Cancelling again has nothing to do.
    let out = world.rayslurm(&["cancel", &job]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out).1.contains("already ended"), "{}", text(&out).1);
}

#[test]
fn two_launches_at_once_are_both_recorded() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-twice");
    let ids: Vec<String> = std::thread::scope(|s| {
        let a = s.spawn(|| world.submit("twice", "echo a", &[]));
        let b = s.spawn(|| world.submit("twice", "echo b", &[]));
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    assert_ne!(ids[0], ids[1]);
    let rows = world.status("twice");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let mut recorded: Vec<&str> = rows.iter().map(|r| r["job_id"].as_str().unwrap()).collect();
    recorded.sort_unstable();
    let mut submitted: Vec<&str> = ids.iter().map(String::as_str).collect();
    submitted.sort_unstable();
    assert_eq!(recorded, submitted);
    let logs: Vec<&str> = rows.iter().map(|r| r["log"].as_str().unwrap()).collect();
    assert_ne!(logs[0], logs[1]);
    for id in &ids {
        let row = world.wait_state(id, "ended", |s| s == "COMPLETED" || s == "FAILED");
        assert_eq!(row["state"], "COMPLETED", "{row}");
        let log = std::fs::read_to_string(Path::new(row["log"].as_str().unwrap())).unwrap();
        let said = row["command"].as_str().unwrap().trim_start_matches("echo ");
        assert!(log.lines().any(|l| l == said), "{row}\n{log}");
    }
}

/// `dashboard RUN` on a `launch` run finds the head from the `cluster.json` its head writes:
/// "not yet" while Ray starts, then a forward to Ray's dashboard, which asks for the token.
#[test]
fn dashboard_forwards_a_launch_runs_ray_dashboard() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-dashboard");
    let dir = world.dir.display().to_string();
    let load_env = lab.load_env();
    let out = world.rayslurm(&[
        "launch",
        "--exp-name",
        "dash",
        "--command",
        "sleep 120",
        "--log-dir",
        &dir,
        "--time",
        "5",
        "--object-store-memory",
        "100000000",
        "--load-env",
        &load_env,
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "launch failed: {stderr}");
    let job = stdout.trim().to_owned();
    let port = 31000 + (std::process::id() % 500) as u16;
    let started = Instant::now();
    let mut forward = loop {
        let mut child = rayslurm(["dashboard", "dash", "--port", &port.to_string()])
            .cwd(&world.dir)
            .env("RAYSLURM_STATE_DIR", world.state.path())
            .command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if !line.is_empty() {
            assert_eq!(line.trim(), format!("http://localhost:{port}"));
            break child;
        }
        let out = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains("run `dash` has no dashboard yet"), "{said}");
        assert!(started.elapsed() < PATIENCE, "no dashboard: {said}");
        std::thread::sleep(Duration::from_secs(1));
    };
    let answer = status_without_token("127.0.0.1", u64::from(port), "/api/version");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(forward.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    let forwarded = forward.wait().unwrap();
    let _ = world.rayslurm(&["cancel", &job]);
    assert!(
        answer.contains(" 401 "),
        "Ray's dashboard asks for the token: {answer}"
    );
    assert!(forwarded.success(), "{forwarded:?}");
}

/// A state directory the compute nodes cannot see (the login node's own `/tmp`, node-local on
/// the lab as a filesystem the nodes do not share would be): the job fails before anything
/// runs, and `--follow` and `status` name the directory the nodes could not write, and what to
/// do.
#[test]
fn e2e_a_state_directory_the_nodes_cannot_see_is_named_when_the_run_fails() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let work = lab.workdir("e2e-nofs");
    // A newer Slurm (26.05) makes the log's directories on the node that runs the batch step:
    // named as tests' own files, so that the tests beside this one do not count it as a run's
    // leftover, and removed from every node at the end.
    let local = tempfile::Builder::new()
        .prefix(&format!("{TEST_MADE}nofs-"))
        .tempdir_in("/tmp")
        .unwrap();
    let _on_nodes = RemovedFromNodes(local.path().file_name().unwrap().to_owned());
    let state = local.path().join("state");
    let launch = [
        "launch",
        "--exp-name",
        "nofs",
        "--no-ray",
        "--follow",
        "--command",
        "echo never",
    ];
    let out = rayslurm(launch)
        .env("RAYSLURM_STATE_DIR", state.as_os_str())
        .cwd(&work)
        .output();
    let (stdout, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0), "{stdout}{stderr}");
    let named = format!(
        "its nodes could not write `{}`",
        state.join("jobs").display()
    );
    assert!(stderr.contains(&named), "{stderr}");
    let out = rayslurm(["status"])
        .env("RAYSLURM_STATE_DIR", state.as_os_str())
        .cwd(&work)
        .output();
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains(&named) || stderr.contains(&named),
        "{stdout}{stderr}"
    );
}
