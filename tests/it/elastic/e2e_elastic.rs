//! End-to-end tests of elastic clusters on the real test cluster (`up --max-nodes`): the head
//! grows the cluster with worker jobs while Ray has work it cannot place, gives them back
//! when idle, replaces a lost one, follows `scale`, and leaves no job and no process.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::clusters::lab_cluster::{exec_detached, rs, status_of, up_nodes, wait_queue};
use crate::harness::{Job, assert_clean, lab, leftovers, processes_with};

/// The cluster's worker jobs in Slurm's queue now: (job id, state). A failed `squeue`, or a
/// line that is not `ID|STATE`, fails the test: read as an empty queue, it would pass every
/// wait for "no worker job left".
fn worker_jobs(name: &str) -> Vec<(String, String)> {
    let out = Command::new("squeue")
        .args([
            "--noheader",
            "--name",
            &format!("{name}-worker"),
            "--format",
            "%i|%T",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "squeue: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (id, state) = l
                .split_once('|')
                .filter(|(id, state)| !id.trim().is_empty() && !state.trim().is_empty())
                .unwrap_or_else(|| panic!("squeue's line `{l}` is not ID|STATE"));
            (id.trim().to_owned(), state.trim().to_owned())
        })
        .collect()
}

/// Waits until `ok` holds for the worker jobs, at most `limit`; returns them.
pub(crate) fn wait_workers(
    name: &str,
    limit: Duration,
    what: &str,
    ok: impl Fn(&[(String, String)]) -> bool,
) -> Vec<(String, String)> {
    let t0 = Instant::now();
    loop {
        let jobs = worker_jobs(name);
        if ok(&jobs) {
            return jobs;
        }
        assert!(
            t0.elapsed() < limit,
            "{what}: not within {limit:?}; worker jobs: {jobs:?}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The head's word on its worker jobs (`workers.json` in the run's directory).
fn workers_file(cluster: &Job) -> serde_json::Value {
    let path = cluster.log.with_extension("d").join("workers.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default()).unwrap_or_default()
}

/// Waits until the head says its first worker job has joined (`RUNNING` in `workers.json`),
/// at most `limit`.
fn wait_joined(cluster: &Job, limit: Duration) {
    let t0 = Instant::now();
    while workers_file(cluster)["jobs"][0]["state"] != "RUNNING" {
        assert!(t0.elapsed() < limit, "{}", workers_file(cluster));
        std::thread::sleep(Duration::from_secs(1));
    }
}

pub(crate) fn running(jobs: &[(String, String)]) -> usize {
    jobs.iter().filter(|(_, s)| s == "RUNNING").count()
}

pub(crate) fn down(dir: &Path, name: &str, cluster: &Job) {
    let (code, _, stderr) = rs(dir, &["down", name]);
    assert_eq!(code, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(90));
    wait_workers(
        name,
        Duration::from_secs(60),
        "no worker job after down",
        <[_]>::is_empty,
    );
    assert_clean(cluster);
}

/// A 1-node cluster (2 CPUs) given 4 jobs of 2 CPUs grows with worker jobs (at most 3 nodes),
/// runs all 4 on more than one node, and is back to the head's job alone once idle; `scale +1`
/// and `-1` add and remove a worker job; `down` leaves nothing.
#[test]
fn an_elastic_cluster_grows_with_demand_and_shrinks_when_idle() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("elastic");
    let name = format!("el{}", std::process::id());
    let extra = ["--max-nodes", "3", "--worker-idle-timeout", "10"];
    let cluster = up_nodes(lab, &dir, &name, "1", &extra);
    let job = "import socket, time; time.sleep(20); print('ran on', socket.gethostname())";
    let ids: Vec<u64> = (0..4)
        .map(|_| exec_detached(&dir, &name, &["--num-cpus", "2", "--", "python", "-c", job]))
        .collect();
    let grown = wait_workers(
        &name,
        Duration::from_secs(180),
        "a worker job joined",
        |j| running(j) >= 1,
    );
    wait_queue(&dir, &name, Duration::from_secs(400), |s| {
        ids.iter().all(|id| status_of(s, *id) == "SUCCEEDED")
    });
    let hosts: BTreeSet<String> = ids
        .iter()
        .map(|id| {
            let (code, stdout, stderr) = rs(&dir, &["logs", &name, &id.to_string()]);
            assert_eq!(code, Some(0), "{stderr}");
            stdout
                .lines()
                .find_map(|l| l.strip_prefix("ran on "))
                .unwrap_or_else(|| panic!("job {id} says where it ran: {stdout}"))
                .to_owned()
        })
        .collect();
    assert!(
        hosts.len() >= 2,
        "every job ran on one node: {hosts:?} (worker jobs: {grown:?})"
    );

    // Idle for 10 s: given back; the head's job alone is left.
    wait_workers(
        &name,
        Duration::from_secs(120),
        "the idle worker jobs given back",
        <[_]>::is_empty,
    );
    // The head sees them gone at its next look (every 10 s).
    let t0 = Instant::now();
    while workers_file(&cluster)["jobs"].as_array().map(Vec::len) != Some(0) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{}",
            workers_file(&cluster)
        );
        std::thread::sleep(Duration::from_secs(1));
    }

    // By hand: one more, then one fewer.
    let (code, stdout, stderr) = rs(&dir, &["scale", &name, "+1"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    wait_workers(&name, Duration::from_secs(120), "scale +1", |j| {
        running(j) == 1
    });
    wait_joined(&cluster, Duration::from_secs(90));
    let (code, stdout, stderr) = rs(&dir, &["scale", &name, "-1"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    wait_workers(&name, Duration::from_secs(90), "scale -1", <[_]>::is_empty);
    down(&dir, &name, &cluster);
}

/// The head's bootstrap (not its watchdog, not a worker job's, which runs the same script).
fn head_bootstrap(cluster: &Job) -> u32 {
    let state = cluster.log.with_extension("state.json");
    let state = state.to_string_lossy();
    let heads: Vec<u32> = processes_with(&["bootstrap", &state])
        .into_iter()
        .filter(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            !String::from_utf8_lossy(&env).contains("RAYSLURM_ELASTIC_WORKER=")
                && !String::from_utf8_lossy(&cmdline).contains("--watchdog")
        })
        .collect();
    assert_eq!(heads.len(), 1, "the head's bootstrap: {heads:?}");
    heads[0]
}

/// A worker job ended from outside (as a node failure or a preemption would end it) is
/// replaced under `--replace-failed`, and the jobs queued meanwhile still succeed. Then the
/// head's bootstrap is SIGKILLed: its watchdog cancels the worker job, and nothing of it is
/// left in Slurm's queue or on its node 60 s later.
#[test]
fn a_lost_worker_job_is_replaced_and_queued_jobs_still_succeed() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("elasticreplace");
    let name = format!("er{}", std::process::id());
    let extra = ["--max-nodes", "2", "--replace-failed"];
    let cluster = up_nodes(lab, &dir, &name, "1", &extra);
    let (code, stdout, stderr) = rs(&dir, &["scale", &name, "+1"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let first = wait_workers(&name, Duration::from_secs(120), "scale +1", |j| {
        running(j) == 1
    });
    let lost = first[0].0.clone();
    wait_joined(&cluster, Duration::from_secs(90));
    // 3 jobs of 2 CPUs on 2 nodes of 2: two run (one on the worker), one waits.
    let job = "import time; time.sleep(20); print('done')";
    let ids: Vec<u64> = (0..3)
        .map(|_| exec_detached(&dir, &name, &["--num-cpus", "2", "--", "python", "-c", job]))
        .collect();
    wait_queue(&dir, &name, Duration::from_secs(120), |s| {
        s.iter().filter(|(_, st)| st == "RUNNING").count() == 2
    });
    let waiting: Vec<u64> = crate::clusters::lab_cluster::statuses(&dir, &name)
        .into_iter()
        .filter(|(_, st)| st == "PENDING")
        .map(|(id, _)| id)
        .collect();
    let status = Command::new("scancel").arg(&lost).status().unwrap();
    assert!(status.success());
    let replaced = wait_workers(
        &name,
        Duration::from_secs(180),
        "a replacement joined",
        |j| j.iter().any(|(id, s)| *id != lost && s == "RUNNING"),
    );
    // The job that ran on the lost node may fail with it; the waiting ones run to the end.
    wait_queue(&dir, &name, Duration::from_secs(300), |s| {
        ids.iter()
            .all(|id| matches!(status_of(s, *id), "SUCCEEDED" | "FAILED" | "STOPPED"))
    });
    let end = crate::clusters::lab_cluster::statuses(&dir, &name);
    assert!(!waiting.is_empty(), "no job waited: {end:?}");
    for id in &waiting {
        assert_eq!(status_of(&end, *id), "SUCCEEDED", "{end:?}");
    }
    let log = cluster.log_text();
    assert!(log.contains(&format!("worker job {lost} (node")), "{log}");
    assert!(log.contains("a replacement is submitted"), "{log}");
    let worker = replaced
        .iter()
        .find(|(id, s)| *id != lost && s == "RUNNING")
        .map(|(id, _)| id.clone())
        .unwrap();
    killed_head_leaves_no_worker_job(&name, &cluster, &worker);
}

/// SIGKILLs the head's bootstrap: its watchdog cancels the worker job, and nothing of it is
/// left in Slurm's queue or on its node 60 s later.
fn killed_head_leaves_no_worker_job(name: &str, cluster: &Job, worker: &str) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(head_bootstrap(cluster) as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_workers(
        name,
        Duration::from_secs(60),
        "no worker job 60 s after SIGKILL",
        <[_]>::is_empty,
    );
    cluster.wait(Duration::from_secs(60));
    let log = cluster.log_text();
    assert!(
        log.contains(&format!(
            "the watchdog cancels the cluster's worker jobs: {worker}"
        )),
        "{log}"
    );
    assert!(leftovers(worker).is_empty(), "{:?}", leftovers(worker));
    assert_clean(cluster);
}

/// The time limit's warning ends an elastic cluster with a job running: Ray is told that the
/// worker job's node goes away (its drain), the job is stopped with the grace, the worker job
/// is given back with the cluster, and none is left in Slurm's queue 60 s later.
#[test]
fn the_time_limit_drains_and_ends_an_elastic_clusters_worker_jobs() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("elastictime");
    let name = format!("et{}", std::process::id());
    let cluster = up_nodes(lab, &dir, &name, "1", &["--max-nodes", "2"]);
    let (code, stdout, stderr) = rs(&dir, &["scale", &name, "+1"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    wait_joined(&cluster, Duration::from_secs(120));
    let worker = workers_file(&cluster)["jobs"][0]["job_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A job that runs when the warning comes and takes 20 s of its grace to stop (as one that
    // checkpoints would): Ray is told meanwhile. (A cluster whose jobs stop at once ends before
    // Ray's drain, a Python process, has even started: nothing is left to tell then.)
    let job = "trap 'sleep 20; exit 0' TERM; sleep 300 & wait";
    let id = exec_detached(&dir, &name, &["--", "bash", "-c", job]);
    wait_queue(&dir, &name, Duration::from_secs(120), |s| {
        status_of(s, id) == "RUNNING"
    });
    cluster.warn_time_limit();
    cluster.wait(Duration::from_secs(120));
    wait_workers(
        &name,
        Duration::from_secs(60),
        "no worker job after the time limit",
        <[_]>::is_empty,
    );
    let log = cluster.log_text();
    assert!(
        log.contains("telling Ray that the worker nodes go away"),
        "{log}"
    );
    assert!(log.contains("Ray drain: drained "), "{log}");
    assert!(
        log.contains(&format!(
            "giving back worker job {worker} (the cluster ends)"
        )),
        "{log}"
    );
    assert_eq!(
        cluster.state()["ending"],
        "time-limit",
        "{}",
        cluster.state()
    );
    assert!(leftovers(&worker).is_empty(), "{:?}", leftovers(&worker));
    assert_clean(&cluster);
}
