//! Elastic clusters (`up --max-nodes`) on the login side, against fake Slurm commands: `up`
//! asks Slurm about the worker jobs first (`sbatch --test-only`), `scale` leaves a request for
//! the head (played here by the test) and shows what it then reports, and `status` lists the
//! cluster's Slurm jobs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::json_keys;
use crate::runs::fake::{Fake, says};

/// What sbatch says when Slurm refuses a job.
const REFUSED: &str =
    "sbatch: error: Batch job submission failed: Requested node configuration is not available";

/// A fake Slurm whose `sbatch --test-only` runs `test_only` and whose plain submission prints
/// job id 4242; `srun` says a tested release.
fn slurm_with_test_only(test_only: &str) -> Fake {
    let fake = Fake::new();
    fake.shim(
        "sbatch",
        &format!("if [ \"$1\" = --test-only ]; then {test_only}; fi\necho 4242"),
    );
    fake.shim("srun", "echo 'slurm 23.02.7'");
    fake
}

/// The scripts (`*.sh`) in the fake's private tree.
fn scripts(fake: &Fake) -> Vec<PathBuf> {
    let jobs = fake.state.join("jobs");
    let Ok(entries) = std::fs::read_dir(jobs) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect()
}

#[test]
fn up_max_nodes_fails_with_slurms_words_when_slurm_refuses_the_worker_jobs() {
    let fake = slurm_with_test_only(&format!("echo '{REFUSED}' >&2; exit 1"));
    let ran = fake
        .run(["up", "lab", "-n", "2", "--max-nodes", "4", "--detach"])
        .expect_status(1)
        .expect_stdout("")
        .expect_stderr_contains("Slurm refuses the worker jobs of elastic cluster `lab`")
        .expect_stderr_contains("nothing was submitted")
        .expect_stderr_contains("Requested node configuration is not available")
        .run();
    let calls = fake.calls("sbatch");
    assert_eq!(calls.len(), 1, "only the test: {calls:?}");
    let script = &scripts(&fake)[..];
    assert_eq!(
        script.len(),
        1,
        "the script is kept, as for a refused sbatch"
    );
    let script = script[0].display().to_string();
    assert!(ran.stderr.contains(&script), "{ran}");
    let run_dir = script.strip_suffix(".sh").unwrap();
    assert_eq!(
        calls[0],
        format!(
            "--test-only --job-name=lab-worker --nodes=1 --output={run_dir}.d/workers/%j.log --open-mode=append --no-requeue --export=ALL,RAYSLURM_ELASTIC_WORKER=test.0,RAY_NODE_TYPE_NAME=worker,RAY_NODE_MARKET_TYPE=on-demand {script}"
        )
    );
    assert!(records(&fake).is_empty(), "nothing recorded");
}

#[test]
fn up_max_nodes_submits_once_slurm_takes_the_worker_jobs() {
    let fake = slurm_with_test_only(
        "echo 'sbatch: Job 77 to start at 2026-11-25T19:00:00 using 2 processors on nodes node3 in partition debug' >&2; exit 0",
    );
    fake.run([
        "up",
        "lab",
        "--max-nodes",
        "3",
        "--worker-idle-timeout",
        "60",
        "--detach",
    ])
    .expect_status(0)
    .expect_stdout("4242\n")
    .expect_stderr_contains(
        "Slurm takes this cluster's worker jobs (sbatch --test-only: Job 77 to start at",
    )
    .expect_stderr_contains("cluster lab submitted as job 4242")
    .run();
    let calls = fake.calls("sbatch");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].starts_with("--test-only "), "{calls:?}");
    let script = scripts(&fake)[0].display().to_string();
    assert_eq!(calls[1], format!("--parsable {script}"));
    let text = std::fs::read_to_string(&script).unwrap();
    for flag in ["--max-nodes 3", "--worker-idle-timeout 60"] {
        assert!(text.contains(flag), "no `{flag}` in:\n{text}");
    }
    let record: Value = serde_json::from_str(&records(&fake)[0]).unwrap();
    assert_eq!(record["max_nodes"], 3);
    assert_eq!(record["cluster"], true);
}

#[test]
fn up_without_max_nodes_and_dry_runs_ask_slurm_nothing_more() {
    let fake = slurm_with_test_only("exit 1");
    fake.run(["up", "lab", "--detach"]).expect_status(0).run();
    fake.run(["up", "dry", "--max-nodes", "4", "--dry-run"])
        .expect_status(0)
        .expect_stdout_contains("--max-nodes 4")
        .run();
    // The dry run asks once whether Slurm takes the cluster's own job, not its workers'.
    assert_eq!(
        fake.calls("sbatch"),
        [
            format!("--parsable {}", scripts_named(&fake, "lab_")),
            format!("--test-only {}", scripts_named(&fake, "dry_"))
        ]
    );
    let record = &records(&fake)[0];
    assert!(!record.contains("max_nodes"), "{record}");
}

/// The run records `up` wrote in the fake's store.
fn records(fake: &Fake) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(fake.state.join("runs")) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// The one script of the fake's whose name starts with `prefix`.
fn scripts_named(fake: &Fake, prefix: &str) -> String {
    let found: Vec<PathBuf> = scripts(fake)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].display().to_string()
}

#[test]
fn up_refuses_elastic_flags_that_cannot_work_and_submits_nothing() {
    let fake = slurm_with_test_only("exit 0");
    let cases: &[(&[&str], &str)] = &[
        (
            &["-n", "4", "--max-nodes", "2"],
            "--max-nodes 2 is less than --num-nodes 4",
        ),
        (
            &["--max-nodes", "4", "-w", "node1"],
            "--max-nodes does not go with --node `node1`",
        ),
        (
            &["--worker-idle-timeout", "60"],
            "--worker-idle-timeout goes with --max-nodes",
        ),
        (&["--max-nodes", "0"], "is not a whole number of at least 1"),
        (
            &["--max-nodes", "4", "--max-pending-workers", "0"],
            "is not a whole number of at least 1",
        ),
    ];
    for (args, said) in cases {
        fake.run(["up", "lab"].into_iter().chain(args.iter().copied()))
            .case(args.join(" "))
            .expect_status(2)
            .expect_stdout("")
            .expect_stderr_contains(said)
            .run();
    }
    assert!(fake.calls("sbatch").is_empty(), "nothing asked of Slurm");
}

/// Writes `text` as the user's own private file, as the head writes its files.
fn write_private(path: &Path, text: &str) {
    let staged = path.with_extension("staged");
    std::fs::write(&staged, text).unwrap();
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::rename(&staged, path).unwrap();
}

/// A running cluster `lab` (job 102) recorded with `max_nodes`, up (its head's
/// `cluster.json` written, its dashboard on a closed port); returns its private directory.
fn seed_running(fake: &Fake, max_nodes: Option<u32>) -> PathBuf {
    fake.seed_cluster("lab", "102");
    let path = fake.record("102");
    let mut record: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    if let Some(n) = max_nodes {
        record["max_nodes"] = json!(n);
    }
    std::fs::write(&path, record.to_string()).unwrap();
    let run_dir = fake.logs.join("lab_102.d");
    std::fs::create_dir(&run_dir).unwrap();
    std::fs::set_permissions(&run_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let info = json!({
        "job_id": "102", "head_node": "node1", "head_ip": "127.0.0.1", "dashboard_port": 1,
        "nodes": ["node1", "node2"], "cpus_per_node": 2, "gpus_per_node": 0,
        "ready_at": "2026-11-25T18:55:00+00:00", "token_file": null, "rayslurm_bin": "/x",
        "idle_timeout": null, "attempt": 0, "gcs_address": "127.0.0.1:6379"
    });
    write_private(&run_dir.join("cluster.json"), &info.to_string());
    fake.shim("squeue", &fake.line("102", "RUNNING"));
    // Its first attempt, which cluster.json is of.
    fake.shim(
        "scontrol",
        &says("JobId=102 JobState=RUNNING Restarts=0 NodeList=node[1-2]"),
    );
    run_dir
}

/// What a head reports of its worker jobs: one joined, one waiting in Slurm's queue.
fn workers(paused: Option<&str>) -> String {
    json!({
        "head_job": "102", "attempt": 0, "max_nodes": 4, "head_nodes": 2,
        "jobs": [
            {"job_id": "103", "state": "RUNNING", "node": "node3",
             "since": "2026-11-25T19:00:00+00:00", "idle_s": 75},
            {"job_id": "104", "state": "PENDING", "node": null,
             "since": "2026-11-25T19:01:00+00:00", "idle_s": null}
        ],
        "paused": paused, "updated_at": "2026-11-25T19:02:00+00:00"
    })
    .to_string()
}

/// Plays the head: waits for a scale request in `run_dir`, checks it says `want`, reports
/// its worker jobs and takes the request (removes it), as the head does.
fn head_takes(run_dir: &Path, want: &str) {
    let request = run_dir.join("scale-request");
    let start = Instant::now();
    while !request.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "no request came");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        std::fs::read_to_string(&request).unwrap(),
        format!("{want}\n")
    );
    let mode = std::fs::metadata(&request).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the request is private");
    write_private(&run_dir.join("workers.json"), &workers(None));
    std::fs::remove_file(&request).unwrap();
}

#[test]
fn scale_leaves_a_request_and_shows_what_the_head_then_reports() {
    let fake = Fake::new();
    let run_dir = seed_running(&fake, Some(4));
    let running = fake
        .run(["scale", "lab", "+2"])
        .expect_status(0)
        .expect_stderr_contains("asked the head of cluster lab for `+2`")
        .expect_stderr_contains("the head of cluster lab took `+2`")
        .expect_stdout_contains("  elastic, up to 4 nodes: 2 worker job(s)")
        .expect_stdout_contains("  JOBID  ROLE    TYPE    NODE       STATE    SINCE     IDLE\n")
        // Times in the fake's zone, UTC+05:30.
        .expect_stdout_contains("  102    head    -       node[1-2]  RUNNING  00:25:00  -\n")
        .expect_stdout_contains("  103    worker  worker  node3      RUNNING  00:30:00  1:15\n")
        .expect_stdout_contains("  104    worker  worker  -          PENDING  00:31:00  -\n")
        .spawn();
    head_takes(&run_dir, "+2");
    running.wait_within(Duration::from_secs(30));
    assert!(!run_dir.join("scale-request").exists());
}

/// `-1` is the change, not a flag; `--json` prints the cluster's jobs as `status --json` has
/// them under `elastic`.
#[test]
fn scale_json_prints_the_clusters_jobs() {
    let fake = Fake::new();
    let run_dir = seed_running(&fake, Some(4));
    let running = fake
        .run(["scale", "lab", "-1", "--json"])
        .expect_status(0)
        .expect_json("/max_nodes", 4)
        .expect_json("/paused", Value::Null)
        .expect_json("/jobs/0/role", "head")
        .expect_json("/jobs/0/job_id", "102")
        .expect_json("/jobs/1/job_id", "103")
        .expect_json("/jobs/1/idle_s", 75)
        .expect_json("/jobs/2/node", Value::Null)
        .spawn();
    head_takes(&run_dir, "-1");
    let ran = running.wait_within(Duration::from_secs(30));
    assert_eq!(
        json_keys(&ran.json()),
        "jobs\nmax_nodes\npaused\nunplaceable\nupdated_at\nwaiting_for_room"
    );
}

#[test]
fn scale_that_the_head_does_not_take_fails_and_withdraws_the_request() {
    let fake = Fake::new();
    let run_dir = seed_running(&fake, Some(4));
    fake.run(["scale", "lab", "=3", "--timeout", "1"])
        .expect_status(1)
        .expect_stdout("")
        .expect_stderr_contains(
            "the head of cluster lab did not take the request within 1 s, so it was withdrawn",
        )
        .expect_stderr_contains("rayslurm status lab")
        .run();
    assert!(!run_dir.join("scale-request").exists(), "withdrawn");
}

#[test]
fn scale_refuses_a_cluster_that_cannot_take_the_change() {
    let fixed = Fake::new();
    let run_dir = seed_running(&fixed, None);
    fixed
        .run(["scale", "lab", "+1"])
        .expect_status(2)
        .expect_stderr_contains("cluster `lab` is not elastic: it was started without --max-nodes")
        .expect_stderr_contains("rayslurm up lab -n 1 --max-nodes N")
        .run();
    assert!(!run_dir.join("scale-request").exists());
    let elastic = Fake::new();
    let run_dir = seed_running(&elastic, Some(4));
    let cases: &[(&[&str], &str)] = &[
        (&["=5"], "`=5` is more than cluster `lab`'s --max-nodes 4"),
        (
            &["=1"],
            "fewer than the 2 node(s) of cluster `lab`'s own allocation",
        ),
        (&["+0"], "`+0` changes nothing"),
        (&["2"], "`2` is not a change of size"),
    ];
    for (change, said) in cases {
        elastic
            .run(["scale", "lab"].into_iter().chain(change.iter().copied()))
            .case(change.join(" "))
            .expect_status(2)
            .expect_stderr_contains(said)
            .run();
    }
    elastic.shim("squeue", &elastic.line("102", "PENDING"));
    elastic
        .run(["scale", "lab", "+1"])
        .expect_status(2)
        .expect_stderr_contains("cluster `lab` is not up yet")
        .run();
    assert!(!run_dir.join("scale-request").exists(), "nothing asked");
}

#[test]
fn status_json_of_an_elastic_cluster_lists_its_slurm_jobs() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    let run_dir = seed_running(&fake, Some(4));
    write_private(
        &run_dir.join("workers.json"),
        &workers(Some("3 worker jobs failed in a row")),
    );
    let squeue = [fake.line("102", "RUNNING"), fake.line("101", "RUNNING")];
    fake.shim("squeue", &squeue.join("\n"));
    let ran = fake
        .run(["status", "--json"])
        .expect_status(0)
        .expect_json("/0/job_id", "102")
        .expect_json("/0/elastic/max_nodes", 4)
        .expect_json("/0/elastic/paused", "3 worker jobs failed in a row")
        .expect_json("/0/elastic/jobs/0/role", "head")
        .expect_json("/0/elastic/jobs/0/node", "node[1-2]")
        .expect_json("/0/elastic/jobs/0/since", "2026-11-25T18:55:00+00:00")
        .expect_json("/0/elastic/jobs/1/job_id", "103")
        .expect_json("/0/elastic/jobs/1/role", "worker")
        .expect_json("/0/elastic/jobs/1/state", "RUNNING")
        .expect_json("/0/elastic/jobs/1/idle_s", 75)
        .expect_json("/0/elastic/jobs/2/state", "PENDING")
        .run();
    let rows = ran.rows();
    assert!(
        rows[1].get("elastic").is_none(),
        "a run has none: {}",
        rows[1]
    );
    insta::assert_snapshot!(
        "status_elastic_json_keys",
        format!(
            "{}\n\nelastic:\n{}\n\nelastic.jobs[]:\n{}",
            json_keys(&rows[0]),
            json_keys(&rows[0]["elastic"]),
            json_keys(&rows[0]["elastic"]["jobs"][1])
        )
    );
}

#[test]
fn status_of_an_elastic_cluster_shows_its_jobs_under_its_line() {
    let fake = Fake::new();
    let run_dir = seed_running(&fake, Some(4));
    write_private(
        &run_dir.join("workers.json"),
        &workers(Some("3 worker jobs failed in a row")),
    );
    let ran = fake
        .run(["status", "lab"])
        .env("RAYSLURM_RELAY", "never")
        .expect_status(0)
        .run();
    let below: Vec<&str> = ran
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("cluster lab: up"))
        .skip(1)
        .collect();
    assert_eq!(
        below,
        [
            "  elastic, up to 4 nodes: 2 worker job(s), as the head saw them at 00:32:00",
            "  JOBID  ROLE    TYPE    NODE       STATE    SINCE     IDLE",
            "  102    head    -       node[1-2]  RUNNING  00:25:00  -",
            "  103    worker  worker  node3      RUNNING  00:30:00  1:15",
            "  104    worker  worker  -          PENDING  00:31:00  -",
            "  growing is paused: 3 worker jobs failed in a row",
        ],
        "{ran}"
    );
    // A cluster that is not elastic shows no more than before.
    let fixed = Fake::new();
    seed_running(&fixed, None);
    fixed
        .run(["status", "lab"])
        .env("RAYSLURM_RELAY", "never")
        .expect_status(0)
        .expect_stdout_contains("cluster lab: up")
        .expect_stdout_lacks("elastic")
        .expect_stdout_lacks("ROLE")
        .run();
}
