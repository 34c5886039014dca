//! End-to-end tests of worker types (`up --worker-type`) on the real test cluster: the head
//! grows the type that can hold each piece of Ray's pending work (a GPU type, with typed GPU
//! GRES on its nodes, only for work asking for GPUs), reports work no type can hold, drains a
//! preemptible worker that Slurm preempts with the real deadline and replaces it, and rolls a
//! type of short jobs over before each one's time limit while a job keeps running.
//!
//! They take minutes each (Slurm's 1-minute limits, a preemption's 60 s of grace) on the
//! preemptible and GPU partitions: a step of their own (`bash tests/step.sh preemption`, run by
//! .ci/run), not tests/run.sh's, which skips them on purpose (`RAYSLURM_TEST_PREEMPTION=0`,
//! harness/steps.rs).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::clusters::lab_cluster::{exec_detached, rs, status_of, up_nodes, wait_queue};
use crate::harness::{Job, assert_clean, lab};

/// The cluster's jobs of worker type `kind` in Slurm's queue now (named `NAME-TYPE`): (id,
/// state, node). A failed `squeue` fails the test.
fn jobs_of(name: &str, kind: &str) -> Vec<(String, String, String)> {
    let out = Command::new("squeue")
        .args(["--noheader", "--states=all", "--name"])
        .arg(format!("{name}-{kind}"))
        .args(["--format", "%i|%T|%N"])
        .output()
        .unwrap();
    assert!(out.status.success(), "squeue: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split('|').map(|s| s.trim().to_owned());
            Some((f.next()?, f.next()?, f.next().unwrap_or_default()))
        })
        .collect()
}

/// Waits until the cluster's log holds `text`, at most `limit`; returns the log.
fn wait_log(cluster: &Job, text: &str, limit: Duration) -> String {
    let t0 = Instant::now();
    loop {
        let log = cluster.log_text();
        if log.contains(text) {
            return log;
        }
        assert!(
            t0.elapsed() < limit,
            "`{text}` not in the cluster's log within {limit:?}:\n{log}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// `rayslurm logs NAME ID`: the job's output.
fn job_output(dir: &Path, name: &str, id: u64) -> String {
    let (code, stdout, stderr) = rs(dir, &["logs", name, &id.to_string()]);
    assert_eq!(code, Some(0), "{stderr}");
    stdout
}

fn down(dir: &Path, name: &str, cluster: &Job, kinds: &[&str]) {
    let (code, _, stderr) = rs(dir, &["down", name]);
    assert_eq!(code, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(90));
    let t0 = Instant::now();
    while kinds.iter().any(|k| {
        jobs_of(name, k)
            .iter()
            .any(|(_, s, _)| s == "RUNNING" || s == "PENDING" || s == "COMPLETING")
    }) {
        assert!(t0.elapsed() < Duration::from_secs(60), "worker jobs left");
        std::thread::sleep(Duration::from_secs(1));
    }
    assert_clean(cluster);
}

/// A CPU head with a `gpu` type (the lab's typed GPUs, `l4:1` a node) and a `cpu` type: work
/// asking for CPUs alone grows the cpu type only, work asking for a GPU the gpu type only, on a
/// node whose job Slurm gave an L4 and whose Ray has it; work no type can hold (8 GPUs) is said
/// in `status` and grows nothing.
#[test]
fn e2e_each_piece_of_work_grows_the_worker_type_that_can_hold_it() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("types");
    let name = format!("wt{}", std::process::id());
    // The head and the cpu type on the nodes without GPUs (an exclusive job on a GPU node is
    // given its GPUs); the gpu type on the typed GPU nodes.
    let extra = [
        "--sbatch-arg=--exclude=node[1-6]",
        "--worker-idle-timeout",
        "600",
        "--worker-type",
        "gpu: -p gpu --num-gpus l4:1 --max-workers 1 --sbatch-arg=--comment=gpu-type",
        "--worker-type",
        "cpu: --max-workers 1",
    ];
    let cluster = up_nodes(lab, &dir, &name, "1", &extra);
    // CPU work the head cannot hold: its entrypoint takes the head's 2 CPUs.
    let cpu_work = "import ray, socket; ray.init(); \
        f = ray.remote(num_cpus=2)(lambda: socket.gethostname()); print('cpu work on', ray.get(f.remote()))";
    let cpu = exec_detached(
        &dir,
        &name,
        &["--num-cpus", "2", "--", "python", "-c", cpu_work],
    );
    wait_queue(&dir, &name, Duration::from_secs(240), |s| {
        status_of(s, cpu) == "SUCCEEDED"
    });
    let cpu_jobs = jobs_of(&name, "cpu");
    assert_eq!(cpu_jobs.len(), 1, "one cpu worker job: {cpu_jobs:?}");
    assert!(jobs_of(&name, "gpu").is_empty(), "no gpu job for CPU work");
    let out = job_output(&dir, &name, cpu);
    assert!(
        out.contains(&format!("cpu work on {}", cpu_jobs[0].2)),
        "ran on the cpu worker's node {cpu_jobs:?}: {out}"
    );

    let gpu_work = "import ray; ray.init(); \
        f = ray.remote(num_gpus=1)(lambda: (len(ray.get_gpu_ids()), str(ray.get_runtime_context().get_node_labels().get('ray.io/node-group')))); \
        print('gpu work', ray.get(f.remote()))";
    let gpu = exec_detached(&dir, &name, &["--", "python", "-c", gpu_work]);
    wait_queue(&dir, &name, Duration::from_secs(240), |s| {
        status_of(s, gpu) == "SUCCEEDED"
    });
    let gpu_jobs = jobs_of(&name, "gpu");
    assert_eq!(gpu_jobs.len(), 1, "one gpu worker job: {gpu_jobs:?}");
    assert_eq!(jobs_of(&name, "cpu").len(), 1, "no second cpu job");
    let out = job_output(&dir, &name, gpu);
    assert!(out.contains("gpu work (1, 'gpu')"), "{out}");
    // Slurm gave the job an L4 (the type's name as the site spells it).
    let scontrol = Command::new("scontrol")
        .args(["show", "job", &gpu_jobs[0].0])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&scontrol.stdout);
    assert!(
        text.contains("gpu:l4:1") || text.contains("gres/gpu:l4=1"),
        "{text}"
    );

    // 8 GPUs: no type can hold it; said in status, and nothing grows.
    let big = "import ray; ray.init(); ray.get(ray.remote(num_gpus=8)(lambda: 1).remote())";
    let big = exec_detached(&dir, &name, &["--", "python", "-c", big]);
    let t0 = Instant::now();
    let status = loop {
        let (code, stdout, stderr) = rs(&dir, &["status", &name]);
        assert_eq!(code, Some(0), "{stderr}");
        if stdout.contains("no worker type can hold it") {
            break stdout;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{stdout}");
        std::thread::sleep(Duration::from_secs(1));
    };
    // Ray's own shape of the task: its default CPU and the 8 GPUs.
    assert!(status.contains("GPU: 8}` × 1"), "{status}");
    assert_eq!(jobs_of(&name, "gpu").len(), 1, "{status}");
    let (code, _, stderr) = rs(&dir, &["cancel", &name, &big.to_string()]);
    assert_eq!(code, Some(0), "{stderr}");
    down(&dir, &name, &cluster, &["cpu", "gpu"]);
}

/// A job that keeps an actor on a node of the `slot` resource (so that the node stays busy,
/// and Ray keeps it draining until its deadline rather than ending an idle one at once), says
/// `actor ready`, then waits (at most `secs`) for Ray to report a draining node and prints its
/// deadline and the time it saw it, in ms since the epoch: `draining DEADLINE_MS at NOW_MS`.
fn drain_watcher(secs: u32) -> String {
    format!(
        "import time, ray; ray.init(); from ray._private.state import state\n\
         a = ray.remote(resources={{'slot': 1}})(type('Busy', (), {{'ping': lambda self: 1}})).remote()\n\
         ray.get(a.ping.remote()); print('actor ready', flush=True)\n\
         t0 = time.time()\n\
         while time.time() - t0 < {secs}:\n\
         \x20   d = {{k: v for k, v in state.get_draining_nodes().items() if v}}\n\
         \x20   if d:\n\
         \x20       print('draining', max(d.values()), 'at', int(time.time() * 1000), flush=True)\n\
         \x20       break\n\
         \x20   time.sleep(0.5)\n"
    )
}

/// Waits until job `id`'s output holds `text`, at most `limit`.
fn wait_output(dir: &Path, name: &str, id: u64, text: &str, limit: Duration) {
    let t0 = Instant::now();
    loop {
        let out = job_output(dir, name, id);
        if out.contains(text) {
            return;
        }
        assert!(
            t0.elapsed() < limit,
            "`{text}` not in job {id}'s output: {out}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Slurm's time of `job`'s `field` (`PreemptTime`, `EndTime`) in ms since the epoch.
fn slurm_time_ms(job: &str, field: &str) -> Option<i64> {
    let out = Command::new("scontrol")
        .args(["show", "job", "--oneliner", job])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let value = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{field}=")))?;
    let at = chrono::NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M:%S").ok()?;
    Some(
        at.and_local_timezone(chrono::Local)
            .single()?
            .timestamp_millis(),
    )
}

/// The deadline Ray was given, as the watcher saw it, is the preemption plus the partition's
/// GraceTime (60 s).
fn assert_drained_with_grace(seen: &str, preempted_ms: i64) {
    let deadline: i64 = seen
        .lines()
        .find_map(|l| l.strip_prefix("draining "))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("Ray showed a draining node: {seen}"));
    let grace = deadline - preempted_ms;
    assert!(
        (55_000..=65_000).contains(&grace),
        "drain deadline {grace} ms after the preemption: {seen}"
    );
}

/// A preemptible type's worker (partition `scavenger`, preempted by `labhigh` with a
/// GraceTime of 60 s) is drained as soon as Slurm preempts it, with the real deadline (Ray's
/// node state shows it: the preemption plus the grace), a replacement is submitted at once and
/// joins, and the jobs queued on the type's resource meanwhile all succeed.
#[test]
fn e2e_a_preempted_worker_is_drained_by_its_deadline_and_replaced() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("preempt");
    let name = format!("wp{}", std::process::id());
    let extra = [
        "--worker-type",
        "spot: -p scavenger --preemptible --min-workers 1 --max-workers 1 --resources '{\"slot\": 2}'",
    ];
    let cluster = up_nodes(lab, &dir, &name, "1", &extra);
    wait_log(&cluster, " joined", Duration::from_secs(120));
    let first = jobs_of(&name, "spot");
    assert_eq!(first.len(), 1, "{first:?}");
    let (victim, node) = (first[0].0.clone(), first[0].2.clone());
    let watcher = exec_detached(&dir, &name, &["--", "python", "-c", &drain_watcher(240)]);
    wait_output(
        &dir,
        &name,
        watcher,
        "actor ready",
        Duration::from_secs(120),
    );
    let work = "import ray, time; ray.init(); \
        f = ray.remote(resources={'slot': 1})(lambda i: time.sleep(4) or i); \
        print('done', sum(ray.get([f.remote(i) for i in range(4)])))";
    let jobs: Vec<u64> = (0..3)
        .map(|_| exec_detached(&dir, &name, &["--", "python", "-c", work]))
        .collect();
    std::thread::sleep(Duration::from_secs(5));
    // A job of the higher tier wants the worker's node: Slurm preempts it with 60 s of grace.
    let high = Command::new("sbatch")
        .args([
            "--parsable",
            "-p",
            "labhigh",
            "--exclusive",
            "-o",
            "/dev/null",
            "-w",
            &node,
        ])
        .args(["-J", &format!("{name}-high"), "--wrap", "sleep 20"])
        .output()
        .unwrap();
    assert!(high.status.success(), "{high:?}");
    let log = wait_log(
        &cluster,
        &format!("draining worker job {victim}'s node: Slurm is preempting"),
        Duration::from_secs(60),
    );
    assert!(
        log.contains(&format!(
            "submitting a replacement for worker job {victim} (spot)"
        )),
        "{log}"
    );
    let preempted_ms = slurm_time_ms(&victim, "PreemptTime").expect("Slurm's PreemptTime");
    wait_queue(&dir, &name, Duration::from_secs(300), |s| {
        status_of(s, watcher) == "SUCCEEDED"
            && jobs.iter().all(|id| status_of(s, *id) == "SUCCEEDED")
    });
    assert_drained_with_grace(&job_output(&dir, &name, watcher), preempted_ms);
    for id in &jobs {
        assert!(job_output(&dir, &name, *id).contains("done 6"), "job {id}");
    }
    let now = jobs_of(&name, "spot");
    assert!(
        now.iter().any(|(id, s, _)| *id != victim && s == "RUNNING"),
        "the replacement runs: {now:?}"
    );
    wait_log(
        &cluster,
        &format!("worker job {victim} has ended"),
        Duration::from_secs(120),
    );
    down(&dir, &name, &cluster, &["spot"]);
}

/// A type of 1-minute jobs that rolls over 30 s before each one's limit keeps its node while a
/// job runs on it for longer than two of its jobs last: each job is replaced before its end,
/// drained then, and the job's tasks, which only that type's nodes hold, all succeed.
#[test]
fn e2e_a_type_of_short_jobs_rolls_over_while_a_longer_job_runs() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("rollover");
    let name = format!("wr{}", std::process::id());
    let extra = [
        "--worker-type",
        "short: --time 1 --rollover 30 --min-workers 1 --max-workers 1 --resources '{\"slot\": 1}'",
    ];
    let cluster = up_nodes(lab, &dir, &name, "1", &extra);
    wait_log(&cluster, " joined", Duration::from_secs(120));
    // 3 minutes of tasks on the type's nodes, one after another.
    let work = "import ray, time; ray.init(); \
        f = ray.remote(resources={'slot': 1}, max_retries=5)(lambda: time.sleep(1) or 1); \
        t0 = time.time(); n = 0\n\
        while time.time() - t0 < 180: n += ray.get(f.remote())\n\
        print('tasks', n)";
    let job = exec_detached(&dir, &name, &["--", "python", "-c", work]);
    wait_queue(&dir, &name, Duration::from_secs(360), |s| {
        status_of(s, job) == "SUCCEEDED"
    });
    let log = cluster.log_text();
    let rolled = log
        .matches("submitting a replacement for worker job")
        .count();
    assert!(rolled >= 2, "rolled over {rolled} times:\n{log}");
    assert!(
        log.contains("'s time limit ends this node in"),
        "drained before the limit:\n{log}"
    );
    let out = job_output(&dir, &name, job);
    let tasks: u32 = out
        .lines()
        .find_map(|l| l.strip_prefix("tasks "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(tasks >= 50, "tasks ran all along: {out}");
    down(&dir, &name, &cluster, &["short"]);
}
