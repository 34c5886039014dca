//! End-to-end tests of `--per-node` runs and `--setup` on the real test cluster: the command on
//! every node with the rank environment, a real distributed framework (JAX) forming one group
//! across the nodes, setup with a barrier, fail-fast, and a clean end.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::harness::{Job, assert_clean, copy_example, launch, launch_in};
use crate::harness::{expand_nodes, lab, processes_with};

/// The lines of the log that rank output prefixed with `[RANK NODE] ` and start with `what`.
fn rank_lines(job: &Job, what: &str) -> Vec<String> {
    job.log_text()
        .lines()
        .filter(|l| l.starts_with('[') && l.contains(&format!("] {what}")))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_node_runs_the_command_with_its_ranks_after_its_setup() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // Setup writes its node's rank on the node's own /tmp at its very end (after a second: a
    // command started beside the setup, not after it, finds nothing); the command reads it.
    let setup = "sleep 1; echo \"$RAYSLURM_NODE_RANK\" > /tmp/rstest-setup-marker-$SLURM_JOB_ID";
    let cmd = "marker=$(cat /tmp/rstest-setup-marker-$SLURM_JOB_ID 2>/dev/null || echo none); \
               rm -f /tmp/rstest-setup-marker-$SLURM_JOB_ID; \
               echo \"ranks rank=$RANK node_rank=$RAYSLURM_NODE_RANK sky=$SKYPILOT_NODE_RANK \
               world=$WORLD_SIZE local=$LOCAL_RANK nodes=$RAYSLURM_NUM_NODES \
               master=$MASTER_ADDR:$MASTER_PORT head=$RAYSLURM_HEAD_IP \
               ips=$(echo \"$RAYSLURM_NODE_IPS\" | paste -sd,) setup-wrote=$marker.\"";
    let job = launch(
        lab,
        "pernode",
        &["--per-node", "-n", "3", "--setup", setup, "--command", cmd],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    let ips: Vec<String> = nodes.iter().map(|n| lab.ip_of(n)).collect();
    let lines = rank_lines(&job, "ranks ");
    assert_eq!(lines.len(), 3, "{log}");
    let master = format!("master={}:", ips[0]);
    for (k, node) in nodes.iter().enumerate() {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("[{k} {node}] ")))
            .unwrap_or_else(|| panic!("rank {k} on {node}:\n{log}"));
        for part in [
            format!("rank={k} "),
            format!("node_rank={k} "),
            format!("sky={k} "),
            "world=3 ".to_owned(),
            "local=0 ".to_owned(),
            "nodes=3 ".to_owned(),
            format!("head={} ", ips[0]),
            format!("ips={}", ips.join(",")),
            // Its own node's setup had ended: the rank it wrote is there.
            format!("setup-wrote={k}."),
        ] {
            assert!(line.contains(&part), "{part} in {line}");
        }
        assert!(line.contains(&master), "{line}");
    }
    let ports: BTreeSet<&str> = lines
        .iter()
        .map(|l| {
            l.split("master=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(ports.len(), 1, "one rendezvous for all: {ports:?}");
    assert_clean(&job);
}

#[test]
fn tasks_per_node_give_each_task_its_rank_and_setup_runs_once_a_node() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let job = launch(
        lab,
        "pertask",
        &[
            "--per-node",
            "-n",
            "2",
            "--tasks-per-node",
            "2",
            "--setup",
            "echo setup-ran-on-$RAYSLURM_NODE_RANK",
            "--command",
            "echo \"task rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE node=$RAYSLURM_NODE_RANK\"",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let lines = rank_lines(&job, "task ");
    assert_eq!(lines.len(), 4, "{log}");
    for rank in 0..4 {
        let line = lines
            .iter()
            .find(|l| l.contains(&format!("rank={rank} ")))
            .unwrap_or_else(|| panic!("rank {rank}:\n{log}"));
        assert!(line.contains("world=4"), "{line}");
        assert!(line.contains(&format!("local={} ", rank % 2)), "{line}");
    }
    assert_eq!(
        rank_lines(&job, "setup-ran-on-").len(),
        2,
        "once a node: {log}"
    );
    assert_clean(&job);
}

#[test]
fn a_real_jax_group_forms_across_the_nodes() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("jax");
    copy_example(&dir, "jax_allgather.py");
    let load_env = format!("source {}/bin/activate", lab.jax_venv.display());
    let job = crate::harness::launch_from(
        &dir,
        "jax",
        &load_env,
        &[
            "--per-node",
            "-n",
            "3",
            "--command",
            "python jax_allgather.py",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let lines = rank_lines(&job, "rank ");
    assert_eq!(lines.len(), 3, "{log}");
    for rank in 0..3 {
        assert!(
            lines.iter().any(|l| l.contains(&format!(
                "rank {rank} of 3 on node {rank} gathered [0, 10, 20]"
            ))),
            "rank {rank}: {log}"
        );
    }
    assert_clean(&job);
}

#[test]
fn a_setup_that_fails_on_one_node_fails_the_run_naming_it() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // The other nodes' setups would take minutes: the failing one ends the run at once.
    let setup = "if [ \"$RAYSLURM_NODE_RANK\" = 2 ]; then echo broken-setup; exit 3; fi; sleep 120";
    let job = launch(
        lab,
        "setupfails",
        &[
            "--per-node",
            "-n",
            "3",
            "--setup",
            setup,
            "--command",
            "echo should-not-run",
        ],
    );
    let started = job.wait_started();
    let (info, log) = job.expect_startup_failure(Duration::from_secs(300));
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "the run waited for the other setups: {:?}",
        started.elapsed()
    );
    let third = &expand_nodes(&info["NodeList"])[2];
    assert!(
        log.contains(&format!("setup failed on {third} with exit code 3")),
        "{log}"
    );
    assert!(
        log.contains(&format!("[setup {third}] broken-setup")),
        "its output: {log}"
    );
    assert!(!log.contains("should-not-run"), "{log}");
    assert_clean(&job);
}

#[test]
fn a_workers_failed_setup_ends_a_ray_job_while_the_heads_setup_still_runs() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // The head's own setup takes minutes; a worker's fails at once. The head once saw the
    // worker's failure only when its own setup had ended.
    let setup = "if [ \"$RAYSLURM_NODE_RANK\" = 1 ]; then exit 4; fi; sleep 120";
    let job = launch(
        lab,
        "raysetupfails",
        &[
            "-n",
            "2",
            "--setup",
            setup,
            "--command",
            "echo should-not-run",
        ],
    );
    let started = job.wait_started();
    let (info, log) = job.expect_startup_failure(Duration::from_secs(300));
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "the run waited for the head's setup: {:?}",
        started.elapsed()
    );
    let second = &expand_nodes(&info["NodeList"])[1];
    assert!(
        log.contains(&format!("setup failed on {second} with exit code 4")),
        "{log}"
    );
    assert_clean(&job);
}

#[test]
fn a_rank_that_fails_gives_its_code_and_the_others_are_stopped() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let cmd = "if [ \"$RANK\" = 1 ]; then sleep 3; echo rank-1-fails; exit 7; fi; sleep 4242.5";
    let job = launch(
        lab,
        "failfast",
        &["--per-node", "-n", "3", "--command", cmd],
    );
    job.wait_for_log("rank-1-fails", Duration::from_secs(300));
    let failed_at = Instant::now();
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert!(
        failed_at.elapsed() < Duration::from_secs(30),
        "the run ended {:?} after rank 1 failed\n{log}",
        failed_at.elapsed()
    );
    assert_eq!(info["JobState"], "FAILED", "{log}");
    assert_eq!(
        info["ExitCode"], "7:0",
        "the failing rank's own code: {log}"
    );
    let second = &expand_nodes(&info["NodeList"])[1];
    assert!(
        log.contains(&format!(
            "rank 1 on {second} exited with code 7, the first to fail"
        )),
        "{log}"
    );
    assert_eq!(job.state()["exit_code"], 7);
    assert!(
        processes_with(&["sleep 4242.5"]).is_empty(),
        "the other ranks are gone"
    );
    assert_clean(&job);
}

#[test]
fn scancel_of_a_per_node_run_leaves_nothing() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let job = launch(
        lab,
        "pernodecancel",
        &[
            "--per-node",
            "-n",
            "3",
            "--command",
            "echo rank-started; sleep 4343.5",
        ],
    );
    job.wait_for_log("rank-started", Duration::from_secs(300));
    assert!(!processes_with(&["sleep 4343.5"]).is_empty());
    let (info, log) = job.kill_and_expect_end(|| job.scancel(), Duration::from_secs(60));
    assert_eq!(info["JobState"], "CANCELLED", "{log}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(&["sleep 4343.5"]).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(processes_with(&["sleep 4343.5"]), Vec::<u32>::new());
    assert_clean(&job);
}

#[test]
fn two_per_node_runs_on_one_node_get_different_master_ports() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let node = lab.node_of_its_own(2);
    // Each run holds its block until the test lets it go: `c` and `b` must come while `a`
    // lives, however long they queue behind other tests' jobs.
    let go = lab.workdir("portsgo").join("go");
    let cmd = format!(
        "echo \"port $MASTER_PORT\"; for i in $(seq 300); do [ -e {} ] && exit 0; sleep 1; done; exit 3",
        go.display()
    );
    let args = [
        "--per-node",
        "--no-exclusive",
        "-w",
        &node,
        "--command",
        &cmd,
    ];
    // The node has 2 CPUs, a run takes 1: `a` runs beside `c`, then beside `b`.
    let a = launch(lab, "portsa", &args);
    // The block stays held while the run lives, though nothing listens on MASTER_PORT: a run
    // that asks for the same block on that node is refused, not given the same port.
    a.wait_for_log("] port ", Duration::from_secs(120));
    let port_a: u16 = rank_lines(&a, "port ")[0]
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let base = (port_a - 9).to_string();
    let mut same = args.to_vec();
    same.extend(["--port-base", &base]);
    let c = launch(lab, "portsc", &same);
    let ic = c.wait(Duration::from_secs(120));
    assert_eq!(ic["JobState"], "FAILED", "{}", c.log_text());
    assert!(
        c.log_text().contains("are not all free"),
        "{}",
        c.log_text()
    );
    let b = launch(lab, "portsb", &args);
    b.wait_for_log("] port ", Duration::from_secs(120));
    std::fs::write(&go, "").unwrap();
    let (ia, ib) = (
        a.wait(Duration::from_secs(300)),
        b.wait(Duration::from_secs(300)),
    );
    assert_eq!(
        (ia["JobState"].as_str(), ib["JobState"].as_str()),
        ("COMPLETED", "COMPLETED")
    );
    let port = |job: &Job| {
        let lines = rank_lines(job, "port ");
        lines[0].rsplit(' ').next().unwrap().to_owned()
    };
    assert_ne!(port(&a), port(&b), "{}\n{}", a.log_text(), b.log_text());
    assert_clean(&a);
    assert_clean(&b);
    assert_clean(&c);
}

#[test]
fn the_torchrun_example_gets_its_rendezvous_from_the_rank_environment() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("torchrun");
    copy_example(&dir, "torchrun_nodes.sh");
    let job = launch_in(
        lab,
        &dir,
        "torchrun",
        &[
            "--per-node",
            "-n",
            "2",
            "--command",
            "bash torchrun_nodes.sh train.py",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    let head_ip = lab.ip_of(&nodes[0]);
    for (k, node) in nodes.iter().enumerate() {
        let expected = format!(
            "[{k} {node}] torch is not installed here; this node would run: torchrun --nnodes=2 --node-rank={k} --nproc-per-node=1 --master-addr={head_ip} --master-port="
        );
        assert!(log.contains(&expected), "{expected}\n{log}");
    }
    assert_eq!(
        rank_lines(&job, "head node: 2 node(s)").len(),
        1,
        "rank 0 only: {log}"
    );
    assert_clean(&job);
}

#[test]
fn no_prefix_output_without_a_last_newline_keeps_every_ranks_report() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // The ranks' output shares the step's stream with their reports: a last line with no
    // newline once glued onto the report, and the run failed with "only N of M ranks reported".
    let job = launch(
        lab,
        "noprefix",
        &[
            "--per-node",
            "-n",
            "2",
            "--no-prefix",
            "--command",
            "printf \"bare-$RANK\"",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    for rank in 0..2 {
        assert!(
            log.lines().any(|l| l == format!("bare-{rank}")),
            "rank {rank}'s line, unprefixed:\n{log}"
        );
    }
    assert_clean(&job);
}

/// A regression test: a line that was not UTF-8 stopped the head's reader of the ranks' output,
/// so srun died of SIGPIPE and the run failed as "only 0 of 2 ranks reported an end".
#[test]
fn output_that_is_not_utf8_passes_through_unchanged() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let cmd = r"printf 'caf\351 rank=%s\n' $RANK; printf '\377\376 no newline'";
    let job = launch(lab, "bytes", &["--per-node", "-n", "2", "--command", cmd]);
    let info = job.wait(Duration::from_secs(300));
    let log = std::fs::read(&job.log).unwrap();
    let shown = String::from_utf8_lossy(&log);
    assert_eq!(info["JobState"], "COMPLETED", "{shown}");
    assert_eq!(info["ExitCode"], "0:0", "{shown}");
    let nodes = expand_nodes(&info["NodeList"]);
    for (k, node) in nodes.iter().enumerate() {
        let prefix = format!("[{k} {node}] ");
        let wanted: [&[u8]; 2] = [
            &[
                prefix.as_bytes(),
                b"caf\xe9 rank=",
                k.to_string().as_bytes(),
                b"\n",
            ]
            .concat(),
            &[prefix.as_bytes(), b"\xff\xfe no newline\n"].concat(),
        ];
        for want in wanted {
            assert!(
                log.windows(want.len()).any(|w| w == want),
                "{:?} in the log:\n{shown}",
                String::from_utf8_lossy(want)
            );
        }
    }
    assert_clean(&job);
}
