//! A cluster with 1,000 jobs waiting in Ray's queue: each `exec` that queued them made one
//! request to Ray's Jobs API (its submission: Ray's list of jobs, as long as the queue, is not
//! read), one whose record was lost has its id kept (Ray refuses it, and the next is taken),
//! `queue` shows all of them from one request, and `down` stops them without waiting for the
//! pending ones.

use std::time::Duration;

use crate::clusters::lab_cluster::{exec_detached, rs, up_nodes};
use crate::harness::assert_clean;

/// The Jobs API requests that `-v` echoed on `stderr`.
fn requests(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("# Ray's Jobs API: "))
        .collect()
}

/// A cluster of one 2-CPU node (a scale node) runs one job of 2 CPUs and queues 1,000 more
/// behind it.
#[test]
fn a_queue_of_1000_jobs_is_one_request_to_see_and_each_submission_one_request() {
    let Some((lab, _turn, _alone)) = super::lab_scale(1) else {
        return;
    };
    let dir = lab.workdir("queue1000");
    let name = format!("q1000x{}", std::process::id());
    let cluster = up_nodes(lab, &dir, &name, "1", &["-p", &lab.scale_partition]);
    let holder = exec_detached(&dir, &name, &["--num-cpus", "2", "--", "sleep", "3600"]);
    assert_eq!(holder, 1);
    for n in 2..=1000 {
        let id = exec_detached(&dir, &name, &["--num-cpus", "2", "--", "true"]);
        assert_eq!(id, n);
    }
    let (code, stdout, stderr) = rs(
        &dir,
        &["-v", "exec", &name, "-d", "--num-cpus", "2", "--", "true"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "1001", "{stderr}");
    let asked = requests(&stderr);
    assert_eq!(asked.len(), 1, "the 1,001st submission: {stderr}");
    assert!(
        asked[0].starts_with("# Ray's Jobs API: POST http://"),
        "{stderr}"
    );
    // A record lost (the last one's): Ray still has its id, so the next submission is refused
    // it and takes the next.
    let records = cluster.log.with_extension("d").join("jobs");
    std::fs::remove_file(records.join("1001.json")).unwrap();
    let (code, stdout, stderr) = rs(
        &dir,
        &["-v", "exec", &name, "-d", "--num-cpus", "2", "--", "true"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "1002", "{stderr}");
    let asked = requests(&stderr);
    assert_eq!(
        asked.len(),
        2,
        "id 1001 refused by Ray, then 1002: {stderr}"
    );
    assert!(!records.join("1001.json").exists());

    let (code, stdout, stderr) = rs(&dir, &["-v", "queue", &name, "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let asked = requests(&stderr);
    assert_eq!(asked.len(), 1, "{stderr}");
    assert!(asked[0].ends_with("/api/jobs/"), "{stderr}");
    let queue: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let jobs = queue["jobs"].as_array().unwrap();
    assert_eq!(
        jobs.len(),
        1001,
        "1 to 1000 and 1002: 1001's record is lost"
    );
    let status = |id: u64| {
        jobs.iter()
            .find(|j| j["id"] == id)
            .map(|j| j["status"].as_str().unwrap().to_owned())
    };
    assert_eq!(status(1).as_deref(), Some("RUNNING"), "{stdout:.2000}");
    let pending = jobs.iter().filter(|j| j["status"] == "PENDING").count();
    assert_eq!(pending, 1000, "{stdout:.2000}");

    let (code, _, stderr) = rs(&dir, &["down", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "stopped 1002 job(s) of cluster {name} (1 running, waited for)"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("could not stop the jobs"), "{stderr}");
    cluster.wait(Duration::from_secs(120));
    assert_clean(&cluster);
}
