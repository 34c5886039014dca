//! End-to-end tests of persistent clusters on the real test cluster: `up` once, then many jobs
//! through Ray's own Jobs API (`exec`, `queue`, `logs`, `cancel`), `down`, and autostop.

use std::path::Path;
use std::time::{Duration, Instant};

use super::lab_cluster::{exec_detached, rs, status_of, statuses, up, up_nodes, wait_queue};
use crate::harness::{Job, assert_clean, node_tmp_entries, processes_with};
use crate::harness::{connect_probe, first_line, lab, rayslurm, status_without_token, text};

#[test]
fn a_cluster_runs_many_jobs_through_rays_queue() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("clusterflow");
    let name = format!("flow{}", std::process::id());
    let cluster = up(lab, &dir, &name, &[]);
    let run_dir = cluster.log.with_extension("d");
    runs_a_grid_search(&dir, &name);
    queue_asks_ray_once(&dir, &name);
    each_trial_ran_with_its_own_env_and_rank(&run_dir);
    exec_follows_a_job_to_its_end(&dir, &name);
    cancel_stops_a_running_and_a_pending_job(&dir, &name);
    logs_follow_streams_a_running_job(&dir, &name);
    nobody_gets_in_without_the_token(&run_dir);
    the_allocation_relays_when_asked(&dir, &name);
    the_dashboard_is_forwarded_to_its_user_alone(&dir, &name);
    let (code, _, stderr) = rs(&dir, &["down", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("cluster {name} is down")),
        "{stderr}"
    );
    cluster.wait(Duration::from_secs(60));
    assert_clean(&cluster);
}

/// `queue` asks Ray's Jobs API once for every job (`-v` echoes each request), whatever their
/// number: the three trials are in its one answer.
fn queue_asks_ray_once(dir: &Path, name: &str) {
    let (code, stdout, stderr) = rs(dir, &["-v", "queue", name, "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let requests: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("# Ray's Jobs API: "))
        .collect();
    assert_eq!(requests.len(), 1, "{stderr}");
    assert!(
        requests[0].starts_with("# Ray's Jobs API: GET http://"),
        "{stderr}"
    );
    assert!(requests[0].ends_with("/api/jobs/"), "{stderr}");
    assert_eq!(stdout.matches("\"SUCCEEDED\"").count(), 3, "{stdout}");
}

/// Three trials of 2 CPUs on 4 CPUs: two run at once, the third waits. (Each sleeps 10 s: with
/// 5 a whole run's load once let the first end before Ray had started the second.)
fn runs_a_grid_search(dir: &Path, name: &str) {
    for i in 1..=3 {
        let (trial, env) = (format!("trial-{i}"), format!("TRIAL={i}"));
        let id = exec_detached(
            dir,
            name,
            &[
                "--name",
                &trial,
                "--num-cpus",
                "2",
                "--env",
                &env,
                "--",
                "bash",
                "-c",
                "echo \"trial=$TRIAL rank=$RAYSLURM_NODE_RANK host=$(hostname)\"; sleep 10",
            ],
        );
        assert_eq!(id, i);
    }
    let t0 = Instant::now();
    let (mut saw_pending, mut saw_two) = (false, false);
    loop {
        let s = statuses(dir, name);
        let running = s.iter().filter(|(_, st)| st == "RUNNING").count();
        assert!(running <= 2, "at most 2 jobs of 2 CPUs on 4 CPUs: {s:?}");
        saw_two |= running == 2;
        saw_pending |= s.iter().any(|(_, st)| st == "PENDING");
        if s.iter().all(|(_, st)| st == "SUCCEEDED") && s.len() == 3 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(180), "{s:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(
        saw_two && saw_pending,
        "two ran at once and the third waited"
    );
}

/// Each trial saw its own `--env`, and the node its entrypoint landed on gave it its rank.
fn each_trial_ran_with_its_own_env_and_rank(run_dir: &Path) {
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("cluster.json")).unwrap())
            .unwrap();
    let nodes: Vec<&str> = info["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let mut ranks_seen = std::collections::BTreeSet::new();
    for i in 1..=3 {
        let log = std::fs::read_to_string(run_dir.join("jobs").join(format!("{i}.log"))).unwrap();
        let line = log.trim();
        assert!(
            line.starts_with(&format!("trial={i} ")),
            "job {i} saw its own --env: {line}"
        );
        // The job's entrypoint landed on some node; that node's Ray gave it its rank.
        let field = |k: &str| {
            line.split(&format!("{k}="))
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
        };
        let rank: usize = field("rank").parse().unwrap_or_else(|_| panic!("{line}"));
        assert_eq!(nodes[rank], field("host"), "job {i}: {line}");
        ranks_seen.insert(rank);
    }
    assert_eq!(
        ranks_seen.len(),
        2,
        "two at once ran on both nodes: {ranks_seen:?}"
    );
}

/// Without -d, exec follows the job and exits with its code.
fn exec_follows_a_job_to_its_end(dir: &Path, name: &str) {
    let (code, stdout, _) = rs(
        dir,
        &[
            "exec",
            name,
            "--",
            "bash",
            "-c",
            "echo hello-from-job; exit 3",
        ],
    );
    assert_eq!(code, Some(3));
    assert!(stdout.contains("hello-from-job"), "{stdout}");
    let (code, _, stderr) = rs(dir, &["exec", name, "--command", "pwd"]);
    assert_eq!(code, Some(0), "{stderr}");
}

/// The processes of a job started as `sleep SECONDS` whose SECONDS no other job has.
fn sleeping(seconds: &str) -> Vec<u32> {
    processes_with(&[&format!("sleep {seconds}")])
}

/// Waits until no process of the job started as `sleep SECONDS` is left (at most 30 s after
/// Ray has said STOPPED: Ray stops a job's processes with SIGTERM, then SIGKILL).
fn wait_none_left(seconds: &str) {
    let t0 = Instant::now();
    while !sleeping(seconds).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the stopped job's processes are still alive: {:?}",
            sleeping(seconds)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Cancel a pending job and a running one, then all: each stopped job is STOPPED to Ray, and
/// none of its processes is left (checked here, before `down` would end them anyway); the
/// job not cancelled runs on.
fn cancel_stops_a_running_and_a_pending_job(dir: &Path, name: &str) {
    // Each job sleeps a length of its own, so that its processes can be told apart.
    let lengths: Vec<String> = (0..3)
        .map(|k| format!("{}.{}", 300 + k, std::process::id()))
        .collect();
    let ids: Vec<u64> = lengths
        .iter()
        .map(|s| exec_detached(dir, name, &["--num-cpus", "2", "--", "sleep", s]))
        .collect();
    wait_queue(dir, name, Duration::from_secs(60), |s| {
        status_of(s, ids[0]) == "RUNNING" && status_of(s, ids[1]) == "RUNNING"
    });
    assert_eq!(status_of(&statuses(dir, name), ids[2]), "PENDING");
    assert!(
        !sleeping(&lengths[0]).is_empty(),
        "the running job's processes are seen"
    );
    // The pending job first: cancelled after the running one, it would start in its place.
    for id in [ids[2], ids[0]] {
        let (code, _, stderr) = rs(dir, &["cancel", name, &id.to_string()]);
        assert_eq!(code, Some(0), "{stderr}");
    }
    wait_queue(dir, name, Duration::from_secs(60), |s| {
        status_of(s, ids[0]) == "STOPPED" && status_of(s, ids[2]) == "STOPPED"
    });
    wait_none_left(&lengths[0]);
    assert_eq!(
        sleeping(&lengths[2]),
        Vec::<u32>::new(),
        "the pending job never ran"
    );
    assert_eq!(status_of(&statuses(dir, name), ids[1]), "RUNNING");
    assert!(
        !sleeping(&lengths[1]).is_empty(),
        "the job not cancelled runs on"
    );
    let (code, _, stderr) = rs(dir, &["cancel", name, "--all"]);
    assert_eq!(code, Some(0), "{stderr}");
    wait_queue(dir, name, Duration::from_secs(60), |s| {
        status_of(s, ids[1]) == "STOPPED"
    });
    wait_none_left(&lengths[1]);
}

/// logs -f streams a running job to its end: its first line arrives while the job runs. The
/// job waits (up to 60 s) after its first line for a file the test writes only once `logs -f`
/// has shown that line; then it says whether the file came before it ends.
fn logs_follow_streams_a_running_job(dir: &Path, name: &str) {
    let go = dir.join(format!("logs-follow-go-{}", std::process::id()));
    let script = format!(
        "echo tick-1; for i in $(seq 600); do [ -e {go} ] && break; sleep 0.1; done; \
         if [ -e {go} ]; then echo tick-2 seen-while-running; else echo tick-2 not-seen; fi",
        go = go.display()
    );
    let id = exec_detached(dir, name, &["--", "bash", "-c", &script]);
    let mut follow = rayslurm(["logs", name, &id.to_string(), "-f"])
        .cwd(dir)
        .command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = std::io::BufRead::lines(std::io::BufReader::new(follow.stdout.take().unwrap()));
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut shown = Vec::new();
    let t0 = Instant::now();
    while !shown.iter().any(|l: &String| l.contains("tick-1")) {
        let left = Duration::from_secs(120).saturating_sub(t0.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) => shown.push(line),
            Err(e) => panic!("no tick-1 from logs -f ({e}): {shown:?}"),
        }
    }
    std::fs::write(&go, "").unwrap();
    let out = crate::harness::wait_within(follow, Duration::from_secs(120));
    reader.join().unwrap();
    shown.extend(rx.try_iter());
    let _ = std::fs::remove_file(&go);
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(
        shown
            .iter()
            .any(|l| l.contains("tick-2 seen-while-running")),
        "logs -f showed the first line only after the job had ended: {shown:?}"
    );
}

/// Nobody gets in without the token.
fn nobody_gets_in_without_the_token(run_dir: &Path) {
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("cluster.json")).unwrap())
            .unwrap();
    let head = info["head_ip"].as_str().unwrap();
    let port = info["dashboard_port"].as_u64().unwrap();
    let answer = status_without_token(head, port, "/api/jobs/");
    assert!(answer.contains(" 401 "), "{answer}");
}

/// Through the allocation, as from a login node that cannot reach compute nodes' ports:
/// forced by the flag, and by the variable.
fn the_allocation_relays_when_asked(dir: &Path, name: &str) {
    let out = rayslurm([
        "exec",
        "--via-allocation",
        "-v",
        name,
        "--",
        "echo",
        "through-the-relay",
    ])
    .cwd(dir)
    .output();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("through-the-relay"), "{stdout}");
    assert!(
        stderr.contains("relay --to 127.0.0.1:"),
        "the srun step: {stderr}"
    );
    let out = rayslurm(["queue", "-v", name])
        .cwd(dir)
        .env("RAYSLURM_RELAY", "always")
        .output();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("relay --to 127.0.0.1:"),
        "the srun step: {stderr}"
    );
}

/// The dashboard, forwarded to a local port through the allocation until Ctrl-C.
fn the_dashboard_is_forwarded_to_its_user_alone(dir: &Path, name: &str) {
    let local = 29000 + (std::process::id() % 500) as u16;
    let mut dashboard = rayslurm(["dashboard", name, "--port", &local.to_string()])
        .cwd(dir)
        .command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = first_line(&mut dashboard);
    assert_eq!(url.trim(), format!("http://localhost:{local}"));
    let answer = status_without_token("127.0.0.1", u64::from(local), "/api/jobs/");
    assert!(
        answer.contains(" 401 "),
        "the browser must give the token: {answer}"
    );
    let answer = status_without_token("127.0.0.1", u64::from(local), "/");
    assert!(answer.contains(" 200 "), "the dashboard's page: {answer}");
    // Another user of the login node is not served: the connection closes unanswered.
    let probe = connect_probe(local);
    let other = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
        ])
        .arg(&probe)
        .current_dir("/")
        .output()
        .unwrap();
    assert_eq!(text(&other).0.trim(), "closed", "{}", text(&other).1);
    // The port asked for is taken (by the forward itself): an error, never another port.
    let taken = rayslurm(["dashboard", name, "--port", &local.to_string()])
        .cwd(dir)
        .output();
    let (_, stderr) = text(&taken);
    assert_eq!(taken.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot forward the dashboard to port {local}")),
        "{stderr}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(dashboard.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let forwarded = dashboard.wait_with_output().unwrap();
    assert!(forwarded.status.success());
    let said = String::from_utf8_lossy(&forwarded.stderr);
    assert!(
        said.contains("it is not yours (1 refused so far)"),
        "{said}"
    );
}

#[test]
fn an_idle_cluster_releases_its_allocation() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("idle");
    let name = format!("idle{}", std::process::id());
    // One node: idling is the head's to notice, and its release ends the run as `down` does
    // (the workers' teardown is `a_cluster_runs_many_jobs_through_rays_queue`'s).
    let cluster = up_nodes(lab, &dir, &name, "1", &["--idle-timeout", "8s"]);
    // Busy for longer than the idle timeout: a cluster that took a running job for idle would
    // be released before it ends.
    let id = exec_detached(&dir, &name, &["--", "bash", "-c", "sleep 10; echo slept"]);
    assert_eq!(id, 1);
    // Busy for 10 s, then idle for 8 s: released well within two minutes.
    let info = cluster.wait(Duration::from_secs(120));
    let log = cluster.log_text();
    assert!(
        log.contains("(--idle-timeout): the cluster released its allocation"),
        "{log}"
    );
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let state = cluster.state();
    assert_eq!(state["ending"], "completed");
    // The job ran to its end first.
    let job_log = std::fs::read_to_string(cluster.log.with_extension("d").join("jobs/1.log"));
    assert_eq!(job_log.unwrap_or_default().trim(), "slept", "{log}");
    assert_clean(&cluster);
}

/// Two clusters on one node: each sees only its own jobs (each has its own token and Jobs
/// API). When the allocation's time limit nears, a cluster stops its running jobs with the
/// stop grace and says it was the time limit.
#[test]
fn two_clusters_on_one_node_see_only_their_own_jobs_and_the_time_limit_ends_one() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("twoclusters");
    let node = lab.node_of_its_own(1);
    let load_env = lab.load_env();
    let up_on_node = |name: &str| {
        let tmp_before = node_tmp_entries();
        let out = rayslurm([
            "up",
            name,
            "--json",
            "-w",
            &node,
            "--no-exclusive",
            "--load-env",
            &load_env,
            "--object-store-memory",
            "100000000",
            // The test gives the time limit's warning itself, once a's job runs: Slurm's own
            // never comes within the test.
            "--time",
            "10",
        ])
        .cwd(&dir)
        .output();
        let (_, stderr) = text(&out);
        assert!(out.status.success(), "up {name}: {stderr}");
        Job::launched(&out.stdout, dir.clone(), tmp_before)
    };
    let (a, b) = (
        format!("ta{}", std::process::id()),
        format!("tb{}", std::process::id()),
    );
    let first = up_on_node(&a);
    let second = up_on_node(&b);
    let id = exec_detached(&dir, &a, &["--name", "long", "--", "sleep", "300"]);
    assert_eq!(id, 1);
    wait_queue(&dir, &a, Duration::from_secs(60), |s| {
        status_of(s, 1) == "RUNNING"
    });
    assert!(statuses(&dir, &b).is_empty(), "{b} sees {a}'s job");
    let id = exec_detached(&dir, &b, &["--", "true"]);
    assert_eq!(id, 1, "{b} numbers its own jobs");
    assert_eq!(statuses(&dir, &a).len(), 1, "{a} sees only its own");

    // The time limit: the running job is stopped first, and the cluster says why.
    first.warn_time_limit();
    first.wait(Duration::from_secs(120));
    let state = first.state();
    assert_eq!(state["ending"], "time-limit", "{state}");
    let message = state["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the allocation's time limit; 1 running job(s) were stopped"),
        "{message}"
    );
    let (code, _, stderr) = rs(&dir, &["down", &b]);
    assert_eq!(code, Some(0), "{stderr}");
    second.wait(Duration::from_secs(60));
    assert_clean(&first);
    assert_clean(&second);
}
