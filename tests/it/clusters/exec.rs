//! `exec --json` against a cluster whose head is faked: a recorded cluster, its `cluster.json`,
//! a fake `squeue` that says its allocation runs, and a small HTTP server on 127.0.0.1 that
//! answers as Ray's Jobs API does (checking the token). The real Jobs API is the e2e tests'.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::harness::{Run, json_keys, rayslurm, shim};

const TOKEN: &str = "fake-token";

/// What the fake Jobs API was sent: `POST /api/jobs/` bodies.
type Submitted = Arc<Mutex<Vec<serde_json::Value>>>;

/// Serves the Jobs API's three calls `exec` makes until the test process ends: the job list,
/// a submission, and a job's state (every job has succeeded at once).
fn fake_jobs_api() -> (u16, Submitted) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let submitted: Submitted = Arc::default();
    let seen = submitted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().map_while(Result::ok) {
            let seen = seen.clone();
            std::thread::spawn(move || answer(conn, &seen));
        }
    });
    (port, submitted)
}

fn answer(conn: TcpStream, seen: &Submitted) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut request = String::new();
    reader.read_line(&mut request).unwrap();
    let (mut length, mut authorised) = (0, false);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap(),
            "authorization" => authorised = value.trim() == format!("Bearer {TOKEN}"),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let mut words = request.split_whitespace();
    let (method, path) = (words.next().unwrap(), words.next().unwrap());
    let (status, reply) = if !authorised {
        ("401 Unauthorized", "{}".to_owned())
    } else if method == "GET" && path == "/api/jobs/" {
        ("200 OK", "[]".to_owned())
    } else if method == "POST" && path == "/api/jobs/" {
        let job: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let id = job["submission_id"].clone();
        seen.lock().unwrap().push(job);
        (
            "200 OK",
            serde_json::json!({ "submission_id": id }).to_string(),
        )
    } else if let Some(id) = path.strip_prefix("/api/jobs/") {
        let entrypoint = seen
            .lock()
            .unwrap()
            .iter()
            .find(|j| j["submission_id"] == id)
            .map(|j| j["entrypoint"].clone());
        let job = serde_json::json!({
            "submission_id": id,
            "status": "SUCCEEDED",
            "driver_exit_code": 0,
            "entrypoint": entrypoint,
        });
        ("200 OK", job.to_string())
    } else {
        ("404 Not Found", "{}".to_owned())
    };
    let mut conn = conn;
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
        reply.len()
    );
}

/// A recorded cluster `sweep` (job 555) that is up, its head's Jobs API on `port`.
struct Up {
    root: tempfile::TempDir,
}

impl Up {
    fn new(port: u16) -> Self {
        let up = Self {
            root: tempfile::tempdir().unwrap(),
        };
        let (logs, state, bin) = (up.path("logs"), up.path("state"), up.path("bin"));
        let run_dir = logs.join("sweep_555.d");
        for d in [&logs, &state.join("runs"), &bin, &run_dir] {
            std::fs::create_dir_all(d).unwrap();
        }
        let stem = logs.join("sweep_555");
        let record = serde_json::json!({
            "format": 1,
            "exp_name": "sweep",
            "job_id": "555",
            "script": stem.with_extension("sh"),
            "log": stem.with_extension("log"),
            "state_file": stem.with_extension("state.json"),
            "submitted_at": chrono::Local::now().to_rfc3339(),
            "workdir": logs,
            "command": ": a persistent cluster",
            "num_nodes": 2,
            "cluster": true,
        });
        std::fs::write(state.join("runs/555.json"), record.to_string()).unwrap();
        let token = run_dir.join("ray-auth-token");
        std::fs::write(&token, TOKEN).unwrap();
        let info = serde_json::json!({
            "job_id": "555",
            "head_node": "node1",
            "head_ip": "127.0.0.1",
            "dashboard_port": port,
            "nodes": ["node1", "node2"],
            "cpus_per_node": 4,
            "gpus_per_node": 0,
            "ready_at": chrono::Local::now().to_rfc3339(),
            "token_file": token,
            "rayslurm_bin": "/nonexistent/rayslurm",
            "idle_timeout": null,
        });
        // As the head writes it: the user's private file.
        let info_file = run_dir.join("cluster.json");
        std::fs::write(&info_file, info.to_string()).unwrap();
        std::fs::set_permissions(
            &info_file,
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        shim(
            &bin,
            "squeue",
            "echo \"555|RUNNING|None|0:07|2|$(date +%Y-%m-%dT%H:%M:%S)|node[1-2]\"",
        );
        // Its first attempt, which cluster.json is of.
        shim(
            &bin,
            "scontrol",
            "echo 'JobId=555 JobState=RUNNING Restarts=0 NodeList=node[1-2]'",
        );
        up
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// Makes the cluster an elastic one, as `up --max-nodes N` records it.
    fn elastic(self, max_nodes: u32) -> Self {
        let path = self.path("state/runs/555.json");
        let mut record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        record["max_nodes"] = max_nodes.into();
        std::fs::write(&path, record.to_string()).unwrap();
        self
    }

    /// `exec sweep ARGS` against this cluster.
    fn exec(&self, args: &[&str]) -> Run {
        let mut argv = vec!["exec", "sweep"];
        argv.extend_from_slice(args);
        rayslurm(argv)
            .shims(&self.path("bin"))
            .env("RAYSLURM_STATE_DIR", self.path("state"))
            .env("RAYSLURM_RELAY", "never")
            .cwd(&self.path("logs"))
    }
}

#[test]
fn exec_json_prints_the_submitted_job() {
    let (port, submitted) = fake_jobs_api();
    let up = Up::new(port);
    let ran = up
        .exec(&[
            "-d", "--json", "--name", "lr-0.1", "--", "python", "train.py",
        ])
        .expect_status(0)
        .expect_json("/cluster", "sweep")
        .expect_json("/job", 1)
        .expect_json("/name", "lr-0.1")
        .expect_json("/submission_id", "rayslurm-555-1")
        .expect_json("/command", "python train.py")
        .run();
    let job = ran.json();
    insta::assert_snapshot!("exec_json_keys", json_keys(&job));
    assert_eq!(
        Path::new(job["log"].as_str().unwrap()),
        up.path("logs").join("sweep_555.d/jobs/1.log")
    );
    let sent = submitted.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["submission_id"], "rayslurm-555-1");

    // The next job gets the next id; without --json, the id alone.
    up.exec(&["-d", "--", "true"])
        .expect_status(0)
        .expect_stdout("2\n")
        .run();
}

/// Without `-d`, `--json` prints the job first, then follows it (here: it has ended at once)
/// and exits with its code, as `launch --json --follow` does.
#[test]
fn exec_json_without_detach_prints_the_job_then_follows_it() {
    let (port, _) = fake_jobs_api();
    let up = Up::new(port);
    let ran = up
        .exec(&["--json", "--command", "true"])
        .expect_status(0)
        .expect_stderr_contains("SUCCEEDED")
        .run();
    let first: serde_json::Value = serde_json::from_str(ran.stdout.lines().next().unwrap())
        .unwrap_or_else(|e| panic!("the first line is not JSON ({e})\n{ran}"));
    assert_eq!(first["job"], 1, "{ran}");
}

/// `--env-file` gives the job its variables (`--env` winning) without them on the command
/// line; a bad line is refused before anything is submitted, without its text.
#[test]
fn exec_env_file_sends_its_variables_and_a_bad_one_submits_nothing() {
    let (port, submitted) = fake_jobs_api();
    let up = Up::new(port);
    std::fs::write(up.path("logs/s.env"), "API_KEY=sk-9\nMODE=file\n").unwrap();
    std::fs::write(up.path("logs/bad.env"), "API_KEY sk-9\n").unwrap();
    up.exec(&["-d", "--env-file", "bad.env", "--", "true"])
        .expect_status(2)
        .expect_stderr_contains("bad.env:1: no `=`")
        .expect_stderr_lacks("sk-9")
        .run();
    assert!(submitted.lock().unwrap().is_empty());

    up.exec(&[
        "-d",
        "--env-file",
        "s.env",
        "--env",
        "MODE=flag",
        "--",
        "true",
    ])
    .expect_status(0)
    .run();
    let sent = submitted.lock().unwrap().clone();
    let vars = &sent[0]["runtime_env"]["env_vars"];
    assert_eq!(vars["API_KEY"], "sk-9", "{vars}");
    assert_eq!(vars["MODE"], "flag", "{vars}");
}

/// `--per-node`: the job's entrypoint is the rank driver on a private spec, its resources are
/// the ranks' (none for the driver); asking for more ranks than nodes, or `-n` without
/// `--per-node`, submits nothing.
#[test]
fn exec_per_node_submits_the_rank_driver_with_its_spec() {
    use std::os::unix::fs::PermissionsExt;
    let (port, submitted) = fake_jobs_api();
    let up = Up::new(port);
    up.exec(&["-d", "--per-node", "-n", "3", "--", "true"])
        .expect_status(2)
        .expect_stderr_contains("-n 3: cluster `sweep` has 2 nodes")
        .run();
    up.exec(&["-d", "-n", "2", "--", "true"])
        .expect_status(2)
        .expect_stderr_contains("--per-node")
        .run();
    assert!(submitted.lock().unwrap().is_empty());

    up.exec(&[
        "-d",
        "--per-node",
        "--num-cpus",
        "2",
        "--memory",
        "1G",
        "--setup",
        "make",
        "--",
        "python",
        "train.py",
    ])
    .expect_status(0)
    .run();
    let sent = submitted.lock().unwrap().clone();
    let entrypoint = sent[0]["entrypoint"].as_str().unwrap();
    let jobs = up.path("logs").join("sweep_555.d/jobs");
    let spec_path = jobs.join("1.ranks.json");
    assert!(
        entrypoint.contains(&format!("python3 {}", jobs.join("1.ranks.py").display())),
        "{entrypoint}"
    );
    assert!(sent[0]["entrypoint_num_cpus"].is_null(), "{}", sent[0]);
    assert!(sent[0]["entrypoint_memory"].is_null(), "{}", sent[0]);
    let mode = std::fs::metadata(&spec_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&spec_path).unwrap()).unwrap();
    assert_eq!(spec["nodes"], 2);
    assert_eq!(spec["cpus"], 2.0);
    assert_eq!(spec["memory"], 1 << 30);
    assert_eq!(spec["setup"], "make");
    assert_eq!(spec["command"], "python train.py");
    assert_eq!(spec["gpus_per_node"], "0");
    let vars = spec["variables"].to_string();
    for name in [
        "RAYSLURM_NODE_RANK",
        "MASTER_PORT",
        "SKYPILOT_NODE_IPS",
        "WORLD_SIZE",
    ] {
        assert!(vars.contains(name), "{vars}");
    }
}

/// `--workdir DIR` (`--snapshot`): DIR is copied at submission beside the job's record, the
/// entrypoint starts there, the record and `--json` name the copy; an edit after `exec` does
/// not reach it.
#[test]
fn exec_snapshot_copies_the_workdir_and_starts_the_job_in_the_copy() {
    use std::os::unix::fs::PermissionsExt;
    let (port, submitted) = fake_jobs_api();
    let up = Up::new(port);
    let proj = up.path("logs/my proj");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::write(proj.join("src/code.txt"), "v1\n").unwrap();
    std::os::unix::fs::symlink("src/code.txt", proj.join("link")).unwrap();
    let ran = up
        .exec(&["-d", "--json", "--workdir", "my proj", "--", "cat", "link"])
        .expect_status(0)
        .expect_json("/snapshot/files", 2)
        .expect_stderr_contains("snapshot of ")
        .run();
    let copy = up.path("logs/sweep_555.d/jobs/1.snapshot");
    assert_eq!(ran.json()["snapshot"]["path"], copy.to_str().unwrap());
    assert_eq!(ran.json()["snapshot"]["workdir"], proj.to_str().unwrap());
    std::fs::write(proj.join("src/code.txt"), "v2\n").unwrap();
    assert_eq!(std::fs::read_to_string(copy.join("link")).unwrap(), "v1\n");
    assert_eq!(
        std::fs::read_link(copy.join("link")).unwrap(),
        Path::new("src/code.txt")
    );
    let mode = std::fs::metadata(&copy).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let sent = submitted.lock().unwrap().clone();
    let entrypoint = sent[0]["entrypoint"].as_str().unwrap();
    assert!(
        // A temp dir's path needs no quotes.
        entrypoint.starts_with(&format!("cd {} && ", copy.display())),
        "{entrypoint}"
    );
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(up.path("logs/sweep_555.d/jobs/1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["snapshot"]["path"], copy.to_str().unwrap());

    // Without it, the job starts where `exec` ran, and names no snapshot.
    let plain = up
        .exec(&["-d", "--json", "--", "true"])
        .expect_status(0)
        .run();
    assert!(plain.json().get("snapshot").is_none(), "{plain}");
    assert!(!up.path("logs/sweep_555.d/jobs/2.snapshot").exists());
}

/// A snapshot over `--snapshot-max-size`, or of a workdir that is not there, submits nothing
/// and leaves no record or copy.
#[test]
fn exec_snapshot_over_the_limit_submits_nothing() {
    let (port, submitted) = fake_jobs_api();
    let up = Up::new(port);
    std::fs::write(up.path("logs/big"), vec![0u8; 3 << 20]).unwrap();
    up.exec(&[
        "-d",
        "--snapshot",
        "--snapshot-max-size",
        "2M",
        "--",
        "true",
    ])
    .expect_status(2)
    .expect_stderr_contains("more than --snapshot-max-size 2.0 MB; nothing was submitted")
    .run();
    up.exec(&["-d", "--workdir", "nowhere", "--", "true"])
        .expect_status(2)
        .expect_stderr_contains("is not a directory")
        .run();
    assert!(submitted.lock().unwrap().is_empty());
    assert!(!up.path("logs/sweep_555.d/jobs/1.json").exists());
    assert!(!up.path("logs/sweep_555.d/jobs/1.snapshot").exists());
}

/// An elastic cluster takes more ranks than it has nodes now, up to `--max-nodes`: its head
/// adds worker jobs for the ranks that wait.
#[test]
fn exec_per_node_on_an_elastic_cluster_may_ask_for_up_to_its_max_nodes() {
    let (port, submitted) = fake_jobs_api();
    let up = Up::new(port).elastic(4);
    up.exec(&["-d", "--per-node", "-n", "5", "--", "true"])
        .expect_status(2)
        .expect_stderr_contains("-n 5: cluster `sweep` grows to 4 nodes at most (--max-nodes)")
        .run();
    assert!(submitted.lock().unwrap().is_empty());
    up.exec(&["-d", "--per-node", "-n", "4", "--", "true"])
        .expect_status(0)
        .run();
    let spec_path = up.path("logs").join("sweep_555.d/jobs/1.ranks.json");
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&spec_path).unwrap()).unwrap();
    assert_eq!(spec["nodes"], 4);
}

/// `--per-node --snapshot`: every rank starts in the copy (the spec's workdir); a task file's
/// `workdir:` is `exec`'s snapshot too.
#[test]
fn exec_ranks_and_a_task_files_workdir_start_in_the_snapshot() {
    let (port, _) = fake_jobs_api();
    let up = Up::new(port);
    std::fs::write(up.path("logs/train.py"), "print(1)\n").unwrap();
    up.exec(&["-d", "--per-node", "--snapshot", "--", "python", "train.py"])
        .expect_status(0)
        .run();
    let jobs = up.path("logs/sweep_555.d/jobs");
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(jobs.join("1.ranks.json")).unwrap()).unwrap();
    assert_eq!(spec["workdir"], jobs.join("1.snapshot").to_str().unwrap());
    assert!(jobs.join("1.snapshot/train.py").is_file());

    let code = up.path("logs/code");
    std::fs::create_dir(&code).unwrap();
    std::fs::write(code.join("run.sh"), "echo hi\n").unwrap();
    std::fs::write(
        up.path("logs/task.yaml"),
        "workdir: code\nrun: bash run.sh\n",
    )
    .unwrap();
    up.exec(&["task.yaml", "-d", "--json"])
        .expect_status(0)
        .expect_json("/snapshot/workdir", code.to_str().unwrap())
        .expect_json("/snapshot/path", jobs.join("2.snapshot").to_str().unwrap())
        .run();
    assert!(jobs.join("2.snapshot/run.sh").is_file());
}
