//! Slurm as the end-to-end tests ask it about their jobs: `scontrol`'s view of a job, whether a
//! state is final, waiting for a job's end, and a host list's node names.

use std::collections::HashMap;
use std::process::Command;

/// `scontrol show job ID` as key=value pairs (the job must still be known to slurmctld).
pub fn scontrol_job(job_id: &str) -> HashMap<String, String> {
    let out = Command::new("scontrol")
        .args(["show", "job", "-o", job_id])
        .output()
        .expect("scontrol runs");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Whether a Slurm job state (as `scontrol` or `status` name it) is one a job never leaves. Any
/// other name, known or not, is a job still under way: Slurm shows passing flags in its place
/// (`SIGNALING` for a moment while its `--signal` warning goes out).
pub fn is_ended_state(state: &str) -> bool {
    matches!(
        state,
        "COMPLETED"
            | "CANCELLED"
            | "FAILED"
            | "TIMEOUT"
            | "PREEMPTED"
            | "NODE_FAIL"
            | "BOOT_FAIL"
            | "DEADLINE"
            | "OUT_OF_MEMORY"
            | "REVOKED"
            | "SPECIAL_EXIT"
    )
}

/// Waits until the job has left the running states; returns its final `scontrol` view.
/// `limit` counts only the time the job runs: time queued behind other tests' jobs is not the
/// job's fault (it is capped separately, at 20 minutes).
pub fn wait_job_end(job_id: &str, limit: std::time::Duration) -> HashMap<String, String> {
    let start = std::time::Instant::now();
    let mut running_since: Option<std::time::Instant> = None;
    loop {
        let info = scontrol_job(job_id);
        let state = info.get("JobState").cloned().unwrap_or_default();
        match state.as_str() {
            _ if is_ended_state(&state) => return info,
            // A requeued job passes through REQUEUED on its way back to PENDING.
            "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "" => {}
            // RUNNING, CONFIGURING, COMPLETING, and the passing flags: SIGNALING while Slurm
            // delivers a signal (its time-limit warning sends SIGCONT first), STOPPED, ...
            _ => {
                running_since.get_or_insert_with(std::time::Instant::now);
            }
        }
        if let Some(since) = running_since {
            assert!(
                since.elapsed() < limit,
                "job {job_id} still {state} after running {limit:?}"
            );
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(1200),
            "job {job_id} still {state} after 20 minutes"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// Node names of a Slurm host list, as `scontrol show hostnames` prints them. A failed
/// `scontrol` or an empty list fails the test: every caller loops over the nodes to check
/// each, and no node would be no check at all.
pub fn expand_nodes(list: &str) -> Vec<String> {
    let out = Command::new("scontrol")
        .args(["show", "hostnames", list])
        .output()
        .expect("scontrol runs");
    assert!(
        out.status.success(),
        "scontrol show hostnames `{list}`: {out:?}"
    );
    let nodes: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    // Slurm shows a job without nodes as `(null)`, which scontrol echoes back as a name.
    assert!(
        !nodes.is_empty() && nodes.iter().all(|n| !n.contains('(')),
        "no node in the host list `{list}`: {nodes:?}"
    );
    nodes
}
