//! SkyPilot's own smoke tests' expectations, as task files of the same shape run on the test
//! cluster (docs/task-files.md, "SkyPilot's variables" and "As SkyPilot's smoke tests expect"):
//! every variable SkyPilot documents for `setup` and `run`, each node's hostname from a 2-node
//! run, a failing rank that ends a 3-node run at once, and a rank that ends early while its
//! background processes live on until the whole run ends.

use std::time::{Duration, Instant};

use crate::harness::{assert_clean, expand_nodes, lab, launch_in, processes_with};

/// Every SkyPilot variable, printed by `setup` and by `run` on 2 nodes with 2 GPUs each (the
/// lab's fake `a100_80gb`, spelled as the site spells it).
const VARIABLES_TASK: &str = r#"num_nodes: 2
resources:
  accelerators: a100_80gb:2
setup: |
  echo "setupvars rank=$SKYPILOT_SETUP_NODE_RANK ips=$(echo "$SKYPILOT_SETUP_NODE_IPS" | wc -l) gpus=$SKYPILOT_SETUP_NUM_GPUS_PER_NODE nodes=$SKYPILOT_NUM_NODES task=$SKYPILOT_TASK_ID user=$SKYPILOT_USER"
run: |
  echo "My hostname: $(hostname)"
  echo "runvars rank=$SKYPILOT_NODE_RANK ips=$(echo "$SKYPILOT_NODE_IPS" | wc -l) gpus=$SKYPILOT_NUM_GPUS_PER_NODE nodes=$SKYPILOT_NUM_NODES task=$SKYPILOT_TASK_ID setup_rank=${SKYPILOT_SETUP_NODE_RANK-unset}"
  echo "clusterinfo $(echo "$SKYPILOT_CLUSTER_INFO" | python3 -c 'import json, sys; i = json.load(sys.stdin); print(i["cluster_name"], i["cloud"], i["region"], i["zone"])')"
"#;

#[test]
fn e2e_skypilots_variables_are_set_and_each_node_says_its_hostname() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("skyvars");
    std::fs::write(dir.join("skyvars.yaml"), VARIABLES_TASK).unwrap();
    let job = launch_in(lab, &dir, "skyvars", &["skyvars.yaml", "--per-node"]);
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    assert_eq!(nodes.len(), 2, "{log}");
    let task_id = "rayslurm-skyvars_";
    for (rank, node) in nodes.iter().enumerate() {
        assert!(
            log.contains(&format!("My hostname: {node}\n")),
            "{node}: {log}"
        );
        let line = |what: &str| {
            log.lines()
                .find(|l| l.contains(what) && l.contains(&format!("rank={rank} ")))
                .unwrap_or_else(|| panic!("{what} of rank {rank}: {log}"))
                .to_owned()
        };
        let setup = line("setupvars ");
        assert!(
            setup.contains(" ips=2 gpus=2 nodes=2 task=rayslurm-skyvars_"),
            "{setup}"
        );
        assert!(setup.contains(&format!("_{} user=", job.id)), "{setup}");
        assert!(!setup.ends_with("user="), "{setup}");
        let run = line("runvars ");
        assert!(run.contains(" ips=2 gpus=2 nodes=2 task="), "{run}");
        assert!(run.contains(task_id), "{run}");
        // The setup names are setup's alone, as in SkyPilot.
        assert!(run.ends_with("setup_rank=unset"), "{run}");
    }
    // One task ID for the whole run.
    let ids: std::collections::BTreeSet<&str> = log
        .split_whitespace()
        .filter(|w| w.starts_with("task="))
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let info_line = log
        .lines()
        .find(|l| l.contains("clusterinfo "))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        info_line.ends_with("clusterinfo skyvars Slurm rayslurmlab lab"),
        "{info_line}"
    );
    assert_clean(&job);
}

/// SkyPilot's multi-node failure shape: rank 1 fails while the others sleep.
const FAILING_RANK_TASK: &str = r#"num_nodes: 3
run: |
  if [ "$SKYPILOT_NODE_RANK" = 1 ]; then sleep 2; echo rank-1-fails-now; exit 1; fi
  sleep 4646.5
"#;

#[test]
fn e2e_a_failing_rank_of_a_three_node_task_ends_it_within_seconds() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("skyfail");
    std::fs::write(dir.join("skyfail.yaml"), FAILING_RANK_TASK).unwrap();
    let job = launch_in(lab, &dir, "skyfail", &["skyfail.yaml", "--per-node"]);
    job.wait_for_log("rank-1-fails-now", Duration::from_secs(300));
    let failed_at = Instant::now();
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert!(
        failed_at.elapsed() < Duration::from_secs(30),
        "the run ended {:?} after rank 1 failed\n{log}",
        failed_at.elapsed()
    );
    assert_eq!(info["JobState"], "FAILED", "{log}");
    assert!(processes_with(&["sleep 4646.5"]).is_empty(), "{log}");
    assert_clean(&job);
}

/// A rank that ends early leaves a background process behind; the other rank runs on.
const EARLY_RANK_TASK: &str = r#"num_nodes: 2
run: |
  if [ "$SKYPILOT_NODE_RANK" = 1 ]; then
    m=rstest-bg
    (exec -a "$m-MARK" sleep 300) &
    echo rank-1-ends-early
    exit 0
  fi
  while [ ! -e GO_ON ]; do sleep 0.2; done
  echo rank-0-ends
"#;

#[test]
fn e2e_a_rank_that_ends_early_keeps_its_background_processes_until_the_run_ends() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("skyearly");
    let go_on = dir.join("go-on");
    // The background process's name, this test's own (a marker no command line holds).
    let mark = format!("{}", std::process::id());
    let bg = format!("rstest-bg-{mark}");
    let task = EARLY_RANK_TASK
        .replace("GO_ON", &go_on.display().to_string())
        .replace("MARK", &mark);
    std::fs::write(dir.join("skyearly.yaml"), task).unwrap();
    let job = launch_in(lab, &dir, "skyearly", &["skyearly.yaml", "--per-node"]);
    job.wait_for_log("rank-1-ends-early", Duration::from_secs(300));
    // Rank 1's command has ended; its node's background process lives while rank 0 runs.
    std::thread::sleep(Duration::from_secs(3));
    let log = job.log_text();
    assert_eq!(
        processes_with(&[&bg]).len(),
        1,
        "rank 1's background process, while rank 0 still runs: {log}"
    );
    std::fs::write(&go_on, "").unwrap();
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains("rank-0-ends"), "{log}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(&[&bg]).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        processes_with(&[&bg]).is_empty(),
        "stopped at the run's end: {log}"
    );
    assert_clean(&job);
}
