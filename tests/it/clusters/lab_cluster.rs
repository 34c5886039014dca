//! A persistent cluster on the test cluster, as the end-to-end tests of every feature drive it:
//! `up` and waiting until it is up, `exec -d`, and `queue --json` waited on.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::{Job, Lab, node_tmp_entries, rayslurm, text};

/// `rayslurm ARGS` in `dir`; returns (exit code, stdout, stderr).
pub(crate) fn rs(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = rayslurm(args.iter().copied()).cwd(dir).output();
    let (stdout, stderr) = text(&out);
    (out.status.code(), stdout, stderr)
}

/// Starts a 2-node cluster (4 CPUs in all) and waits until it is up.
pub(crate) fn up(lab: &Lab, dir: &Path, name: &str, extra: &[&str]) -> Job {
    up_nodes(lab, dir, name, "2", extra)
}

/// Starts a cluster of `nodes` nodes and waits until it is up.
pub(crate) fn up_nodes(lab: &Lab, dir: &Path, name: &str, nodes: &str, extra: &[&str]) -> Job {
    let load_env = lab.load_env();
    let mut args = vec![
        "up",
        name,
        "--json",
        "-n",
        nodes,
        "--load-env",
        &load_env,
        "--object-store-memory",
        "100000000",
        "--time",
        "8",
    ];
    args.extend_from_slice(extra);
    let tmp_before = node_tmp_entries();
    let out = rayslurm(args).cwd(dir).output();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "up failed: {stderr}");
    assert!(
        stderr.contains(&format!("cluster {name} is up")),
        "{stderr}"
    );
    Job::launched(&out.stdout, dir.to_owned(), tmp_before)
}

/// `queue --json`: the jobs' statuses by id.
pub(crate) fn statuses(dir: &Path, name: &str) -> Vec<(u64, String)> {
    let (code, stdout, stderr) = rs(dir, &["queue", name, "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["id"].as_u64().unwrap(),
                j["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Waits until `ok` holds for the queue, at most `limit`.
pub(crate) fn wait_queue(
    dir: &Path,
    name: &str,
    limit: Duration,
    ok: impl Fn(&[(u64, String)]) -> bool,
) {
    let t0 = Instant::now();
    loop {
        let s = statuses(dir, name);
        if ok(&s) {
            return;
        }
        assert!(t0.elapsed() < limit, "queue still {s:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

pub(crate) fn status_of(s: &[(u64, String)], id: u64) -> &str {
    s.iter()
        .find(|(i, _)| *i == id)
        .map_or("", |(_, st)| st.as_str())
}

pub(crate) fn exec_detached(dir: &Path, name: &str, args: &[&str]) -> u64 {
    let mut all = vec!["exec", name, "-d"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = rs(dir, &all);
    assert_eq!(code, Some(0), "{stderr}");
    stdout.trim().parse().unwrap()
}
