//! Gentle on the controller: every Slurm client call a run makes, counted by wrappers on PATH
//! (the jobs inherit it, so the nodes' calls are counted too). A follower asks slurmctld at most
//! once every 10 s while nothing changes, a cluster's head and its nodes not at all while it
//! idles, `status` once whatever the number of runs, `queue` three times (docs/slurm-calls.md
//! has the figures).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::{Job, lab, rayslurm, text};

const CLIENTS: [&str; 7] = [
    "squeue", "scontrol", "sacct", "sbatch", "scancel", "sinfo", "srun",
];

/// A folder of wrappers, one per Slurm client, that append `EPOCH HOST CLIENT ARGS` to `calls`
/// and run the real client.
fn counting_shims(dir: &Path) -> (PathBuf, PathBuf) {
    let bin = dir.join("counting-bin");
    let calls = dir.join("calls.txt");
    std::fs::create_dir_all(&bin).unwrap();
    for client in CLIENTS {
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {client}")])
            .output()
            .unwrap();
        let real = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(!real.is_empty(), "no {client} on PATH");
        let body = format!(
            "echo \"$(date +%s) $(hostname) {client} $*\" >> '{}'\nexec '{real}' \"$@\"",
            calls.display()
        );
        crate::harness::shim(&bin, client, &body);
    }
    (bin, calls)
}

fn path_with(bin: &Path) -> String {
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap())
}

/// The counted calls: (epoch seconds, host, client).
fn calls(file: &Path) -> Vec<(u64, String, String)> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((
                w.next()?.parse().ok()?,
                w.next()?.to_owned(),
                w.next()?.to_owned(),
            ))
        })
        .collect()
}

fn this_host() -> String {
    let out = std::process::Command::new("hostname").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Queries only: submitting and cancelling are the user's own acts, not polling.
fn is_query(client: &str) -> bool {
    matches!(client, "squeue" | "scontrol" | "sacct" | "sinfo")
}

#[test]
fn a_followed_run_asks_slurm_once_every_ten_seconds_and_its_nodes_never_poll() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("slurmcalls");
    let (bin, file) = counting_shims(&dir);
    let t0 = Instant::now();
    let out = rayslurm([
        "launch",
        "--exp-name",
        "calls",
        "--json",
        "--follow",
        "-n",
        "2",
        "--load-env",
        &lab.load_env(),
        "--object-store-memory",
        "100000000",
        "--time",
        "5",
        crate::harness::NO_DASHBOARD,
        "--command",
        // Long enough for a poller every 5 s to pass the bound of one every 10 s (plus 4).
        "sleep 35; echo slept",
    ])
    .cwd(&dir)
    .env("PATH", path_with(&bin))
    .output();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let job = Job::launched(
        stdout.lines().next().unwrap().as_bytes(),
        dir.clone(),
        Default::default(),
    );
    assert!(job.log_text().contains("slept"), "{}", job.log_text());
    let followed = t0.elapsed().as_secs();
    let all = calls(&file);
    let login = this_host();
    let queries_from = |node_side: bool| {
        all.iter()
            .filter(|(_, host, client)| is_query(client) && (*host != login) == node_side)
            .count()
    };
    let (from_login, from_nodes) = (queries_from(false), queries_from(true));
    eprintln!(
        "{followed} s followed: {from_login} queries from the login node, {from_nodes} from the nodes; {all:?}"
    );
    // One every 10 s, plus the ones a change hurries (start, end) and the first.
    assert!(
        from_login as u64 <= followed / 10 + 4,
        "{from_login} queries in {followed} s: {all:?}"
    );
    // The wrappers reach the nodes (the head starts the workers' step with srun)...
    assert!(
        all.iter().any(|(_, h, c)| *h != login && c == "srun"),
        "no srun from a node: the nodes' calls are not counted: {all:?}"
    );
    // ...which ask Slurm only at the start and the end of an attempt, never while it runs.
    assert!(
        from_nodes <= 4,
        "{from_nodes} queries from the nodes: {all:?}"
    );
    // No second in which the login node asked twice.
    let mut seconds: Vec<u64> = all
        .iter()
        .filter(|(_, h, c)| *h == login && is_query(c))
        .map(|(t, _, _)| *t)
        .collect();
    seconds.sort_unstable();
    let close = seconds.windows(2).filter(|w| w[1] - w[0] < 2).count();
    assert!(close <= 1, "queries less than 2 s apart: {seconds:?}");
    status_is_one_batched_query(&dir, &bin, &file);
}

/// `status` of every recorded run: one batched squeue (and one sacct for runs squeue has
/// forgotten), whatever their number.
fn status_is_one_batched_query(dir: &Path, bin: &Path, file: &Path) {
    let before = calls(file).len();
    let out = rayslurm(["status", "--json"])
        .cwd(dir)
        .env("PATH", path_with(bin))
        .output();
    assert!(out.status.success(), "{}", text(&out).1);
    let status_calls = calls(file).split_off(before);
    for client in ["squeue", "sacct"] {
        let n = status_calls.iter().filter(|(_, _, c)| c == client).count();
        assert!(n <= 1, "{status_calls:?}");
    }
    assert!(
        status_calls.iter().all(|(_, _, c)| is_query(c)),
        "{status_calls:?}"
    );
}

#[test]
fn an_idle_cluster_and_its_queue_ask_slurm_almost_never() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("slurmcallsup");
    let (bin, file) = counting_shims(&dir);
    let name = format!("calls{}", std::process::id());
    let rs = |args: &[&str]| {
        let out = rayslurm(args.iter().copied())
            .cwd(&dir)
            .env("PATH", path_with(&bin))
            .output();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{args:?}: {stderr}");
        stdout
    };
    let stdout = rs(&[
        "up",
        &name,
        "--json",
        "-n",
        "1",
        "--load-env",
        &lab.load_env(),
        "--object-store-memory",
        "100000000",
        "--time",
        "5",
    ]);
    let cluster = Job::launched(stdout.as_bytes(), dir.clone(), Default::default());
    let up_at = calls(&file).len();
    // Idle for 30 s: a head or node asking Slurm every 30 s or more often would be caught.
    std::thread::sleep(Duration::from_secs(30));
    let idle: Vec<_> = calls(&file).split_off(up_at);
    let idle_queries = idle.iter().filter(|(_, _, c)| is_query(c)).count();
    assert!(idle_queries == 0, "an idle cluster asked Slurm: {idle:?}");
    let before = calls(&file).len();
    rs(&["queue", &name]);
    // The allocation's state (squeue), its attempt (scontrol), its time left (squeue), and
    // the relay's one step (a request with the token reaches a head on another host only
    // through the allocation).
    let queue_calls = calls(&file).split_off(before);
    assert!(queue_calls.len() <= 4, "{queue_calls:?}");
    let steps = queue_calls.iter().filter(|(_, _, c)| c == "srun").count();
    assert_eq!(steps, 1, "{queue_calls:?}");
    a_relayed_follower_starts_one_step(&dir, &bin, &file, &name);
    rs(&["down", &name]);
    cluster.wait(Duration::from_secs(60));
}

/// `logs CLUSTER JOB -f` through the relay (the route of a login node that cannot reach the
/// head): Ray is asked every second, over one kept-alive connection, so one `srun` step for
/// the whole follow, and the cluster's opening queries; nothing per second.
fn a_relayed_follower_starts_one_step(dir: &Path, bin: &Path, file: &Path, name: &str) {
    let rs = |args: &[&str]| {
        let out = rayslurm(args.iter().copied())
            .cwd(dir)
            .env("PATH", path_with(bin))
            .env("RAYSLURM_RELAY", "always")
            .output();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{args:?}: {stderr}");
        stdout
    };
    let id = rs(&[
        "exec",
        name,
        "-d",
        "--",
        "bash",
        "-c",
        // Followed for 12 s: a step per request (Ray is asked every second) would be 12.
        "sleep 12; echo followed",
    ]);
    let before = calls(file).len();
    let t0 = Instant::now();
    let followed = rs(&["logs", name, id.trim(), "-f"]);
    assert!(followed.contains("followed"), "{followed}");
    let during = calls(file).split_off(before);
    let steps = during.iter().filter(|(_, _, c)| c == "srun").count();
    let queries = during.iter().filter(|(_, _, c)| is_query(c)).count();
    eprintln!(
        "{} s of a relayed logs -f: {steps} srun, {queries} queries: {during:?}",
        t0.elapsed().as_secs()
    );
    assert!(steps <= 2, "a step per request: {during:?}");
    assert!(queries <= 3, "{during:?}");
}
