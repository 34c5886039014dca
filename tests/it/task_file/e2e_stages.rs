//! End-to-end tests of what a task file asks of the cluster (docs/task-files.md), on the real
//! test cluster: a pipeline's stages run one after the other and stop at a failure, each with
//! its `status` line; a `use_spot: true` task runs in the site's preemptible partition, is
//! preempted by a job of the partition above it, requeued, and finishes; two tasks that each
//! ask for part of a node run on one node at once.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::{lab, rayslurm, scontrol_job, text, unique_name, wait_job_end};

/// `rayslurm launch FILE --json ARGS` from `dir`, with the lab's Ray venv: each stage's job id,
/// in order (one JSON line a stage).
fn launch_file(
    dir: &Path,
    file: &str,
    load_env: &str,
    args: &[&str],
    env: &[(&str, &Path)],
) -> Vec<String> {
    let mut argv = vec![
        "launch",
        file,
        "--json",
        "--load-env",
        load_env,
        "--time",
        "10",
    ];
    argv.extend_from_slice(args);
    let mut run = rayslurm(argv).cwd(dir);
    for (k, v) in env {
        run = run.env(k, v);
    }
    let out = run.output();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "launch {file} failed: {stderr}");
    stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            v["job_id"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// A pipeline of three stages, each appending its name to `out`; stage `fail`, if given,
/// exits 3 instead.
fn pipeline(name: &str, out: &Path, fail: Option<&str>) -> String {
    let mut text = format!("name: {name}\n");
    for stage in ["first", "second", "third"] {
        let run = if Some(stage) == fail {
            "exit 3".to_owned()
        } else {
            format!("sleep 1; echo {stage} >> {}", out.display())
        };
        text.push_str(&format!(
            "---\nname: {stage}\nresources:\n  cpus: 1\nrun: {run}\n"
        ));
    }
    text
}

/// A 3-stage pipeline runs its stages in order, each once the one before has succeeded; in
/// another, a failing second stage stops the third (Slurm cancels it); `status` shows each
/// stage as a run of its own.
#[test]
fn e2e_task_file_pipeline_runs_stage_after_stage_and_stops_at_a_failure() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("pipeline");
    let (good, bad) = (unique_name("pipe"), unique_name("pipebad"));
    let (good_out, bad_out) = (dir.join("good.txt"), dir.join("bad.txt"));
    std::fs::write(dir.join("good.yaml"), pipeline(&good, &good_out, None)).unwrap();
    std::fs::write(
        dir.join("bad.yaml"),
        pipeline(&bad, &bad_out, Some("second")),
    )
    .unwrap();
    let good_jobs = launch_file(&dir, "good.yaml", &lab.load_env(), &[], &[]);
    let bad_jobs = launch_file(&dir, "bad.yaml", &lab.load_env(), &[], &[]);
    assert_eq!((good_jobs.len(), bad_jobs.len()), (3, 3));
    let ends: Vec<HashMap<String, String>> = good_jobs
        .iter()
        .chain(&bad_jobs)
        .map(|id| wait_job_end(id, Duration::from_secs(180)))
        .collect();
    let states: Vec<&str> = ends.iter().map(|i| i["JobState"].as_str()).collect();
    assert_eq!(
        states,
        [
            "COMPLETED",
            "COMPLETED",
            "COMPLETED",
            "COMPLETED",
            "FAILED",
            "CANCELLED"
        ],
        "{ends:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&good_out).unwrap(),
        "first\nsecond\nthird\n"
    );
    assert_eq!(std::fs::read_to_string(&bad_out).unwrap(), "first\n");
    // Each stage started only once the one before had ended.
    for pair in ends[..3].windows(2) {
        assert!(pair[0]["EndTime"] <= pair[1]["StartTime"], "{pair:?}");
    }
    // One `status` line a stage, named PIPELINE-STAGE.
    for (name, want) in [
        (format!("{good}-first"), "COMPLETED"),
        (format!("{good}-second"), "COMPLETED"),
        (format!("{good}-third"), "COMPLETED"),
        (format!("{bad}-first"), "COMPLETED"),
        (format!("{bad}-second"), "FAILED"),
        (format!("{bad}-third"), "CANCELLED"),
    ] {
        let out = rayslurm(["status", name.as_str(), "--json"]).output();
        let rows: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {:?}", text(&out)));
        let row = rows.as_array().and_then(|r| r.first()).unwrap_or(&rows);
        assert_eq!(row["exp_name"], name.as_str(), "{rows}");
        assert_eq!(row["state"], want, "{name}: {row}");
    }
}

/// SkyPilot's graph of stages (`dependencies:` in the header): `a`, then `b` and `c` side by
/// side (each waits for the other to have started, so one after the other would time out),
/// then `d` once both have succeeded.
#[test]
fn e2e_task_file_graph_runs_stages_side_by_side_after_those_they_wait_for() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("graph");
    let name = unique_name("graph");
    let out = dir.join("out.txt");
    let both = |me: &str, other: &str| {
        format!(
            "touch {d}/{me}.started; for i in $(seq 150); do [ -e {d}/{other}.started ] && break; sleep 0.2; done; [ -e {d}/{other}.started ] && echo {me} >> {o}",
            d = dir.display(),
            o = out.display()
        )
    };
    let text = format!(
        "name: {name}\ndependencies:\n  b: [a]\n  c: [a]\n  d: [b, c]\n---\nname: a\nresources:\n  cpus: 1\nrun: echo a >> {o}\n---\nname: b\nresources:\n  cpus: 1\nrun: {b}\n---\nname: c\nresources:\n  cpus: 1\nrun: {c}\n---\nname: d\nresources:\n  cpus: 1\nrun: echo d >> {o}\n",
        o = out.display(),
        b = both("b", "c"),
        c = both("c", "b"),
    );
    std::fs::write(dir.join("graph.yaml"), text).unwrap();
    let jobs = launch_file(&dir, "graph.yaml", &lab.load_env(), &[], &[]);
    assert_eq!(jobs.len(), 4);
    let ends: Vec<HashMap<String, String>> = jobs
        .iter()
        .map(|id| wait_job_end(id, Duration::from_secs(180)))
        .collect();
    let states: Vec<&str> = ends.iter().map(|i| i["JobState"].as_str()).collect();
    assert_eq!(states, ["COMPLETED"; 4], "{ends:?}");
    let lines = std::fs::read_to_string(&out).unwrap();
    let order: Vec<&str> = lines.lines().collect();
    assert_eq!((order[0], order[3]), ("a", "d"), "{order:?}");
    let mut middle = [order[1], order[2]];
    middle.sort_unstable();
    assert_eq!(middle, ["b", "c"], "{order:?}");
    // d started only once b and c had both ended; b and c only once a had.
    for (before, after) in [(0, 1), (0, 2), (1, 3), (2, 3)] {
        assert!(
            ends[before]["EndTime"] <= ends[after]["StartTime"],
            "{before} before {after}: {ends:?}"
        );
    }
}

/// `use_spot: true` with `spot_partition: labspot` in the config runs in labspot; a job of
/// labhigh (which preempts it) on its node requeues it, and its next attempt finishes.
#[test]
fn e2e_task_file_spot_task_is_requeued_when_preempted_and_finishes() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("spot");
    let config = dir.join("config.toml");
    std::fs::write(&config, "[launch]\nspot_partition = \"labspot\"\n").unwrap();
    let node = lab.nodes.last().unwrap().clone();
    std::fs::write(
        dir.join("spot.yaml"),
        format!(
            "name: {}\nresources:\n  cpus: 1\n  use_spot: true\n  job_recovery: FAILOVER\nrun: |\n  echo \"spot attempt ${{RAYSLURM_RESTART_COUNT:-0}}\"\n  if [ \"${{RAYSLURM_RESTART_COUNT:-0}}\" = 0 ]; then sleep 300; fi\n  echo spot done\n",
            unique_name("spot")
        ),
    )
    .unwrap();
    let jobs = launch_file(
        &dir,
        "spot.yaml",
        &lab.load_env(),
        &["-w", &node],
        &[("RAYSLURM_CONFIG", &config)],
    );
    let job = &jobs[0];
    let info = scontrol_job(job);
    assert_eq!(info["Partition"], "labspot", "{info:?}");
    // Asked of Slurm, not left to its default (a site may have `JobRequeue=0`).
    let script = std::fs::read_to_string(&info["Command"]).unwrap();
    assert!(script.contains("\n#SBATCH --requeue\n"), "{script}");
    let log = std::path::PathBuf::from(&info["StdOut"]);
    let started = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("spot attempt 0")
    {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "never started: {:?}",
            scontrol_job(job)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let high = std::process::Command::new("sbatch")
        .args([
            "--parsable",
            "-p",
            "labhigh",
            "-w",
            &node,
            "--exclusive",
            "-t",
            "2",
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 2",
        ])
        .output()
        .unwrap();
    assert!(high.status.success(), "{high:?}");
    let info = wait_job_end(job, Duration::from_secs(300));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(info["JobState"], "COMPLETED", "{text}");
    assert_eq!(info["Restarts"], "1", "{text}");
    assert!(
        text.contains("spot attempt 1") && text.contains("spot done"),
        "{text}"
    );
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(log.with_extension("state.json")).unwrap())
            .unwrap();
    assert_eq!(state["attempts"][0]["ending"], "preempted", "{state}");
    assert_eq!(state["attempts"][1]["ending"], "completed", "{state}");
}

/// Two task files that each ask for one CPU share one node: both run on it at once (each
/// waits up to 60 s for the other to have started). Other tests' jobs hold nodes: the pair
/// goes to a node with two CPUs free, released together, and is tried again (at most 3 times)
/// when one still could not start beside the other; exclusive jobs fail every time.
#[test]
fn e2e_task_file_two_small_tasks_share_one_node() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let mut tries = Vec::new();
    for _ in 0..3 {
        let node = node_with_two_free_cpus(lab);
        let ends = share_once(lab, &node);
        let completed = ends.iter().all(|i| i["JobState"] == "COMPLETED");
        if completed {
            for info in &ends {
                assert_eq!(info["NodeList"], node, "{info:?}");
                // Shared, as Slurm says it: `OverSubscribe=OK` up to 23.x, `Exclusive=NO` after.
                let shared = info["OverSubscribe"] == "OK"
                    || info.get("Exclusive").map(String::as_str) == Some("NO");
                assert!(shared, "{info:?}");
            }
            return;
        }
        tries.push(ends);
    }
    panic!("the two tasks never ran at once on a node: {tries:?}");
}

/// One try of the pair on `node`: both held at submission, released together (one scheduler
/// pass starts both); how each ended.
fn share_once(lab: &crate::harness::Lab, node: &str) -> Vec<HashMap<String, String>> {
    let dir = lab.workdir("share");
    let mut jobs = Vec::new();
    for me in ["a", "b"] {
        let other = if me == "a" { "b" } else { "a" };
        std::fs::write(
            dir.join(format!("{me}.yaml")),
            format!(
                "name: {}\nresources:\n  cpus: 1\nrun: |\n  touch {d}/{me}.started\n  for i in $(seq 300); do [ -e {d}/{other}.started ] && echo saw {other} && exit 0; sleep 0.2; done\n  exit 1\n",
                unique_name(&format!("share{me}")),
                d = dir.display()
            ),
        )
        .unwrap();
        jobs.extend(launch_file(
            &dir,
            &format!("{me}.yaml"),
            &lab.load_env(),
            &["-w", node, "--sbatch-arg=--hold"],
            &[],
        ));
    }
    let released = std::process::Command::new("scontrol")
        .args(["release", &jobs.join(",")])
        .output()
        .unwrap();
    assert!(released.status.success(), "{released:?}");
    jobs.iter()
        .map(|job| wait_job_end(job, Duration::from_secs(180)))
        .collect()
}

/// The CPUs of `node` no job holds (`sinfo`'s A/I/O/T), 0 when it cannot be told.
/// A lab node with two CPUs free now (the last one found, else the last node after 120 s).
fn node_with_two_free_cpus(lab: &crate::harness::Lab) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let free = lab.nodes.iter().rev().find(|n| idle_cpus(n) >= 2);
        match free {
            Some(node) => return node.clone(),
            None if std::time::Instant::now() > deadline => {
                return lab.nodes.last().unwrap().clone();
            }
            None => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

fn idle_cpus(node: &str) -> u32 {
    let out = std::process::Command::new("sinfo")
        .args(["-h", "-n", node, "-o", "%C"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    out.lines()
        .next()
        .and_then(|l| l.split('/').nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
