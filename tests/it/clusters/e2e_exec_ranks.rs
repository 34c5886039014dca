//! End-to-end tests of `exec --per-node` on a persistent cluster: one rank on each of N
//! distinct nodes with the rank environment of a `--per-node` launch, a real JAX group formed
//! across them, GPUs as Ray hands them out, fail-fast, queueing until nodes have room, cancel.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::clusters::lab_cluster::{exec_detached, rs, status_of, statuses, up, wait_queue};
use crate::harness::{assert_clean, lab};

#[test]
fn exec_per_node_runs_one_rank_on_each_node() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("execranks");
    let name = format!("ranks{}", std::process::id());
    // Ray is told each node has a GPU (the lab has none), as `--ray-args` does for a site whose
    // Slurm does not count its GPUs.
    let cluster = up(lab, &dir, &name, &["--ray-args=--num-gpus=1"]);
    ranks_get_their_environment_and_gpu(&dir, &name);
    a_jax_group_forms_across_the_ranks(lab, &dir, &name);
    the_first_failing_rank_stops_the_others(&dir, &name);
    a_job_waits_for_nodes_and_cancel_stops_its_ranks(&dir, &name);
    more_ranks_than_nodes_is_refused(&dir, &name);
    let (code, _, stderr) = rs(&dir, &["down", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(60));
    assert_clean(&cluster);
}

/// The lines of `out` from rank `r` (its `[R NODE] ` prefix taken off).
fn rank_lines(out: &str, r: u32) -> Vec<String> {
    out.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(&format!("[{r} "))?;
            Some(rest.split_once("] ")?.1.to_owned())
        })
        .collect()
}

fn ranks_get_their_environment_and_gpu(dir: &Path, name: &str) {
    let report = "echo rank=$RANK world=$WORLD_SIZE node=$RAYSLURM_NODE_RANK/$RAYSLURM_NUM_NODES \
                  sky=$SKYPILOT_NODE_RANK master=$MASTER_ADDR:$MASTER_PORT \
                  cuda=$CUDA_VISIBLE_DEVICES gpus=$RAYSLURM_NUM_GPUS_PER_NODE host=$(hostname) \
                  setup=$(ls rstest-setup-* | wc -l)";
    let (code, stdout, stderr) = rs(
        dir,
        &[
            "exec",
            name,
            "--per-node",
            "-n",
            "2",
            "--num-gpus",
            "1",
            "--setup",
            "sleep 2; touch rstest-setup-$RANK; echo setting up",
            "--command",
            report,
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let mut hosts = Vec::new();
    let mut masters = Vec::new();
    for r in 0..2 {
        let lines = rank_lines(&stdout, r);
        assert!(lines.iter().any(|l| l == "setting up"), "{stdout}");
        let line = lines
            .iter()
            .find(|l| l.starts_with("rank="))
            .unwrap_or_else(|| panic!("no report of rank {r}: {stdout}"));
        assert!(
            line.starts_with(&format!("rank={r} world=2 node={r}/2 sky={r} ")),
            "{line}"
        );
        // Ray gave each rank the one GPU of its node; both setups ended before either command.
        assert!(line.contains(" cuda=0 gpus=1 "), "{line}");
        assert!(line.ends_with(" setup=2"), "{line}");
        hosts.push(
            line.split(" host=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_owned(),
        );
        masters.push(
            line.split(" master=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_owned(),
        );
    }
    assert_ne!(hosts[0], hosts[1], "two ranks on one node: {stdout}");
    assert_eq!(masters[0], masters[1], "{stdout}");
    // Without --per-node, a job with a GPU sees it too.
    let (code, stdout, stderr) = rs(
        dir,
        &[
            "exec",
            name,
            "--num-gpus",
            "1",
            "--command",
            "echo cuda=$CUDA_VISIBLE_DEVICES",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("cuda=0"), "{stdout}");
}

/// A real rendezvous: the ranks form one JAX process group at MASTER_ADDR:MASTER_PORT.
fn a_jax_group_forms_across_the_ranks(lab: &crate::harness::Lab, dir: &Path, name: &str) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jax_allgather.py");
    std::fs::copy(&example, dir.join("jax_allgather.py")).unwrap();
    let python = lab.jax_venv.join("bin/python");
    let (code, stdout, stderr) = rs(
        dir,
        &[
            "exec",
            name,
            "--per-node",
            "--",
            python.to_str().unwrap(),
            "jax_allgather.py",
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for r in 0..2 {
        assert!(
            rank_lines(&stdout, r)
                .iter()
                .any(|l| l == &format!("rank {r} of 2 on node {r} gathered [0, 10]")),
            "{stdout}"
        );
    }
}

fn the_first_failing_rank_stops_the_others(dir: &Path, name: &str) {
    let t0 = Instant::now();
    let (code, stdout, stderr) = rs(
        dir,
        &[
            "exec",
            name,
            "--per-node",
            "-n",
            "2",
            "--command",
            "if [ $RANK = 1 ]; then sleep 1; exit 3; fi; exec sleep 3011",
        ],
    );
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("rank 1 on ") && stdout.contains("exited with code 3 (the first to fail)"),
        "{stdout}"
    );
    // Loose: the other rank was stopped, not waited for (it sleeps for 50 minutes).
    assert!(
        t0.elapsed() < Duration::from_secs(120),
        "{:?}",
        t0.elapsed()
    );
    assert_no_process("sleep 3011");
}

/// Waits (at most 30 s) until no process's command line is `pattern`.
fn assert_no_process(pattern: &str) {
    let t0 = Instant::now();
    loop {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &format!("^{pattern}$")])
            .output()
            .unwrap();
        if !out.status.success() {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "`{pattern}` still runs: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A job whose ranks need both nodes' CPUs holds them; the next waits in Ray's queue until the
/// first is cancelled, and then runs.
fn a_job_waits_for_nodes_and_cancel_stops_its_ranks(dir: &Path, name: &str) {
    let first = exec_detached(
        dir,
        name,
        &["--per-node", "--num-cpus", "2", "--", "sleep", "3012"],
    );
    let log_of = |id: u64| {
        let (_, out, _) = rs(dir, &["logs", name, &id.to_string()]);
        out
    };
    let t0 = Instant::now();
    while !log_of(first).contains("ranks on ") {
        assert!(t0.elapsed() < Duration::from_secs(60), "{}", log_of(first));
        std::thread::sleep(Duration::from_millis(500));
    }
    let second = exec_detached(
        dir,
        name,
        &["--per-node", "--num-cpus", "1", "--", "echo", "second-ran"],
    );
    let t0 = Instant::now();
    while !log_of(second).contains("waiting for 2 nodes") {
        assert!(t0.elapsed() < Duration::from_secs(60), "{}", log_of(second));
        std::thread::sleep(Duration::from_millis(500));
    }
    let waiting = log_of(second);
    assert!(!waiting.contains("second-ran"), "{waiting}");
    let (code, _, stderr) = rs(dir, &["cancel", name, &first.to_string()]);
    assert_eq!(code, Some(0), "{stderr}");
    wait_queue(dir, name, Duration::from_secs(60), |s| {
        status_of(s, first) == "STOPPED" && status_of(s, second) == "SUCCEEDED"
    });
    assert_no_process("sleep 3012");
    assert_eq!(rank_lines(&log_of(second), 1), ["second-ran"]);
    let _ = statuses(dir, name);
}

fn more_ranks_than_nodes_is_refused(dir: &Path, name: &str) {
    let (code, _, stderr) = rs(dir, &["exec", name, "--per-node", "-n", "3", "--", "true"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("-n 3: cluster `{name}` has 2 nodes")),
        "{stderr}"
    );
}
