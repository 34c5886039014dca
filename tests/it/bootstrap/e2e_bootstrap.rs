//! End-to-end tests of the bootstrap on the real test cluster with real Ray
//! (`bash tests/cluster/cluster.sh up`; skipped loudly without it, failing under CI=true).

use std::path::Path;
use std::time::Duration;

use crate::harness::{
    Job, NODE_TMP, TEST_MADE, assert_clean, copy_example, lab, launch, launch_with_env, leftovers,
    node_tmp_entries, rayslurm, temp_root_name, text, two_at_once_on,
};

#[test]
fn three_nodes_form_a_cluster_and_the_command_sees_them() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("copy");
    copy_example(&dir, "ray_nodes.py");
    let script = dir.join("ray_nodes.py");
    let cmd = format!(
        "python {} && env | grep -E '^(RAYSLURM_|RAY_ADDRESS=|PYTHONUNBUFFERED=)' && printf 'IPS<%s>\\n' \"$RAYSLURM_NODE_IPS\" && echo \"devices=${{CUDA_VISIBLE_DEVICES-}}\"",
        script.display()
    );
    let job =
        crate::harness::launch_with_dashboard(lab, &dir, "three", &["-n", "3", "--command", &cmd]);
    let info = job.wait(Duration::from_secs(240));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
    assert!(log.contains("nodes alive: 3 (rayslurm says 3)"), "{log}");
    assert!(log.contains("total = 500000500000 from 3 nodes"), "{log}");
    // The job's nodes, head first, and their IPs (the lab may have more nodes than the job).
    let nodes = crate::harness::expand_nodes(&info["NodeList"]);
    for node in &nodes {
        assert!(
            log.contains(&format!("  {node} ")),
            "{node} ran a task: {log}"
        );
    }
    assert!(log.contains("RAYSLURM_NUM_NODES=3"), "{log}");
    assert!(log.contains("RAYSLURM_NODE_RANK=0"), "{log}");
    let head_ip = lab.ip_of(&nodes[0]);
    assert!(
        log.contains(&format!("RAYSLURM_HEAD_IP={head_ip}")),
        "{log}"
    );
    assert!(log.contains(&format!("RAY_ADDRESS={head_ip}:")), "{log}");
    // A whole node comes with all its GPUs (the lab's nodes 1 to 6 have some): what Slurm
    // made visible, counted.
    let devices = log
        .lines()
        .find_map(|l| l.strip_prefix("devices="))
        .unwrap_or_else(|| panic!("{log}"));
    let gpus = devices.split(',').filter(|d| !d.is_empty()).count();
    assert!(
        log.contains(&format!("RAYSLURM_NUM_GPUS_PER_NODE={gpus}\n")),
        "{log}"
    );
    assert!(
        log.contains(&format!("Ray dashboard on {} at 127.0.0.1:", nodes[0])),
        "{log}"
    );
    assert!(log.contains("PYTHONUNBUFFERED=1"), "{log}");
    // RAYSLURM_NODE_IPS is one IP a line, head first.
    let ips_at = log.find("IPS<").expect("IPS printed") + "IPS<".len();
    let ips_end = ips_at + log[ips_at..].find('>').expect("IPS closed");
    let ips: Vec<&str> = log[ips_at..ips_end].lines().collect();
    assert_eq!(ips.len(), 3, "{ips:?}");
    assert_eq!(ips[0], head_ip, "head first");
    let mut sorted: Vec<String> = ips.iter().map(|s| (*s).to_owned()).collect();
    sorted.sort();
    let mut expected: Vec<String> = nodes.iter().map(|n| lab.ip_of(n)).collect();
    expected.sort();
    assert_eq!(sorted, expected);
    assert_eq!(job.state()["ending"], "completed");
    assert!(
        !job.ray_logs().exists(),
        "a run that succeeds keeps no Ray logs"
    );
    assert_clean(&job);
}

/// A Ray run's command (on the head, its output inherited): its exit code is the job's, and the
/// bytes it prints reach the log unchanged, UTF-8 or not (a regression of the per-node runs:
/// `per_node::e2e_per_node::output_that_is_not_utf8_passes_through_unchanged`). One run checks both: a
/// Ray start of 2 nodes is seconds of the lab's 2 cores.
#[test]
fn a_ray_commands_exit_code_is_the_jobs_and_its_output_passes_through_unchanged() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // Also: a head-only flag reaches the head alone (a worker would refuse it), and without a
    // dashboard no dashboard is announced.
    let job = launch(
        lab,
        "exit3",
        &[
            "-n",
            "2",
            "--ray-head-args=--include-dashboard=false",
            "--command",
            r"printf 'caf\351 ray\n'; echo about to fail; exit 3",
        ],
    );
    let info = job.wait(Duration::from_secs(180));
    assert_eq!(info["JobState"], "FAILED", "log:\n{}", job.log_text());
    assert_eq!(info["ExitCode"], "3:0");
    let bytes = std::fs::read(&job.log).unwrap();
    let want = b"caf\xe9 ray\n";
    assert!(
        bytes.windows(want.len()).any(|w| w == want),
        "caf\\xe9 in the log:\n{}",
        job.log_text()
    );
    let state = job.state();
    assert_eq!(state["exit_code"], 3);
    assert_eq!(state["ending"], "failed");
    let log = job.log_text();
    assert!(log.contains("about to fail"), "{log}");
    assert!(log.contains("cluster ready: 2 node(s)"), "{log}");
    assert!(!log.contains("Ray dashboard on"), "{log}");
    assert_clean(&job);
}

#[test]
fn scancel_during_the_run_leaves_no_ray_process() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // A head and a worker: each node's Ray must go (a third node would only be another
    // worker, a Ray start more on the lab's 2 cores, and a wait for 3 free nodes).
    let job = launch(
        lab,
        "cancel",
        &["-n", "2", "--command", "echo command-started; sleep 300"],
    );
    job.wait_for_log("command-started", Duration::from_secs(180));
    assert!(
        !leftovers(&job.id).is_empty(),
        "Ray runs during the job (the check can see it)"
    );
    let (info, log) = job.kill_and_expect_end(|| job.scancel(), Duration::from_secs(60));
    assert_eq!(info["JobState"], "CANCELLED", "log:\n{log}");
    assert_clean(&job);
}

/// Two Ray runs share one node, each told only what its allocation holds: its one CPU and its
/// memory (less the object store), not the machine's. (Ray's share of memory was a test of its
/// own, one Ray start more on the lab's 2 cores.)
#[test]
fn two_jobs_share_a_node_and_ray_is_told_each_ones_cpu_and_memory() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let node = lab.node_of_its_own(0);
    let cmd = "python -c 'import ray, time; ray.init(); r = ray.cluster_resources(); \
               print(\"cpus\", r[\"CPU\"]); \
               print(\"ray-memory\", int(r[\"memory\"]), int(r[\"object_store_memory\"])); \
               time.sleep(8)'";
    // 1500 MB each: both fit in the node's 4000.
    let args = ["--mem", "1500M", "--command", cmd];
    let dir = lab.workdir("share");
    for (job, info) in two_at_once_on(lab, &dir, &node, ["share-a", "share-b"], &args) {
        let log = job.log_text();
        assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
        assert!(
            log.contains("cpus 1.0"),
            "Ray is told the job's one CPU: {log}"
        );
        ray_is_told_the_allocations_memory(&log);
        assert_clean(&job);
    }
}

/// The `ray-memory MEMORY OBJECT_STORE` line of a run of 1500 MB (`--mem 1500M`) with the
/// tests' 100 MB object store: Ray's memory is the allocation's, less the store, not the
/// machine's, and the log says so.
fn ray_is_told_the_allocations_memory(log: &str) {
    let line = log
        .lines()
        .find(|l| l.starts_with("ray-memory "))
        .unwrap_or_else(|| panic!("no ray-memory line:\n{log}"));
    let numbers: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect();
    // 1500 MiB allocated, less the 100 MB object store the tests ask for.
    let expected = (1500u64 << 20) - 100_000_000;
    assert!(
        numbers[0].abs_diff(expected) < expected / 100,
        "Ray's memory {} is the allocation's {expected}\n{log}",
        numbers[0]
    );
    assert!(
        log.contains("Ray gets 1404 MB of memory and a 95 MB object store"),
        "{log}"
    );
}

#[test]
fn ipv6_head_address_works() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let cmd = "echo \"address=$RAY_ADDRESS\"; python -c 'import ray; ray.init(); print(\"alive\", sum(n[\"Alive\"] for n in ray.nodes()))'";
    let job = launch(
        lab,
        "ipv6",
        &["-n", "2", "--ip-family", "6", "--command", cmd],
    );
    let info = job.wait(Duration::from_secs(180));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
    let address = log
        .lines()
        .find_map(|l| l.strip_prefix("address="))
        .expect("address printed");
    let host = address
        .strip_prefix('[')
        .and_then(|a| a.split_once("]:"))
        .map(|(h, _)| h);
    assert!(
        host.is_some_and(|h| lab.node_ips6.iter().any(|ip| ip == h)),
        "bracketed IPv6 of a node: {address}"
    );
    assert!(log.contains("alive 2"), "{log}");
    assert_clean(&job);
}

#[test]
fn a_worker_that_cannot_start_fails_the_job_fast() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("badworker");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // `ray` that refuses to start on every node but the head (the job's first node).
    crate::harness::shim(
        &bin,
        "ray",
        &format!(
            "head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)\nif [ \"$(hostname)\" != \"$head\" ]; then echo 'simulated: cannot start ray here' >&2; exit 7; fi\nexec {}/bin/ray \"$@\"",
            lab.venv.display()
        ),
    );
    let load_env = format!("{}; export PATH={}:$PATH", lab.load_env(), bin.display());
    let tmp_before = node_tmp_entries();
    let out = rayslurm([
        "launch",
        "--json",
        "--exp-name",
        "badworker",
        "--load-env",
        &load_env,
        "-n",
        "2",
        "--time",
        "10",
        "--object-store-memory",
        "100000000",
        "--command",
        "echo should-not-run",
    ])
    .cwd(&dir)
    .output();
    assert!(out.status.success(), "{}", text(&out).1);
    let job = Job::launched(&out.stdout, dir, tmp_before);
    let (info, log) = job.expect_startup_failure(Duration::from_secs(120));
    let worker = crate::harness::expand_nodes(&info["NodeList"])
        .pop()
        .unwrap();
    assert!(
        log.contains(&format!("Ray on node {worker} failed to start")),
        "{log}"
    );
    assert!(
        log.contains("simulated: cannot start ray here"),
        "the cause is shown: {log}"
    );
    // The failed node keeps what `ray start` said, beside the job's log.
    let kept = job
        .ray_logs()
        .join("attempt-0")
        .join(&worker)
        .join("ray-start.out");
    let kept_text = std::fs::read_to_string(&kept).unwrap_or_default();
    assert!(
        kept_text.contains("simulated: cannot start ray here"),
        "{}: {kept_text}\nlog:\n{log}",
        kept.display()
    );
    let run_time = info["RunTime"].clone();
    assert!(
        run_time.starts_with("00:00:") || run_time.starts_with("00:01:"),
        "failed fast: {run_time}"
    );
    assert!(job.dir.exists());
    assert_clean(&job);
}

#[test]
fn ray_missing_on_a_worker_fails_the_job_fast() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // `ray` reaches PATH through a directory in the head node's own /tmp: the workers inherit
    // that PATH, but their /tmp has no such directory.
    let local = format!("{TEST_MADE}rayonly-{}", std::process::id());
    let load_env = format!(
        "mkdir -p /tmp/{local} && ln -sf {}/bin/ray /tmp/{local}/ray && export PATH=/tmp/{local}:$PATH",
        lab.venv.display()
    );
    let job = launch_with_env(
        lab,
        "noray",
        &load_env,
        &["-n", "2", "--command", "echo should-not-run"],
    );
    let (info, log) = job.expect_startup_failure(Duration::from_secs(120));
    let nodes = crate::harness::expand_nodes(&info["NodeList"]);
    let _ = std::fs::remove_dir_all(Path::new(NODE_TMP).join(&nodes[0]).join(&local));
    assert!(
        log.contains(&format!(
            "`ray` was not found on PATH on node {}; make --load-env put Ray on PATH on every node",
            nodes[1]
        )),
        "{log}"
    );
    // No node got as far as writing a Ray log; no empty directories are left for them.
    assert!(
        !job.ray_logs().join("attempt-0").join(&nodes[1]).exists(),
        "{log}"
    );
    let run_time = &info["RunTime"];
    assert!(run_time.starts_with("00:00:"), "failed fast: {run_time}");
    assert_clean(&job);
}

#[test]
fn hostile_command_runs_exactly_as_written() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let cmd = "printf '[%s]\\n' \"it's\" '$HOME stays' \"a \\\"quoted\\\" word\" 'ü 日本 🚀' \"$((6*7))\"\necho `echo backticks` ; echo \"two;\" && echo 'lines'";
    let job = launch(lab, "hostile", &["-n", "1", "--no-ray", "--command", cmd]);
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
    let expected =
        "[it's]\n[$HOME stays]\n[a \"quoted\" word]\n[ü 日本 🚀]\n[42]\nbackticks\ntwo;\nlines\n";
    assert!(log.contains(expected), "expected:\n{expected}\nlog:\n{log}");
}

#[test]
fn plain_multi_node_program_without_ray() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("plaincopy");
    copy_example(&dir, "hello_nodes.sh");
    let cmd = format!("bash {}", dir.join("hello_nodes.sh").display());
    let job = launch(lab, "plain", &["-n", "3", "--no-ray", "--command", &cmd]);
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
    for node in crate::harness::expand_nodes(&info["NodeList"]) {
        let ip = lab.ip_of(&node);
        assert!(
            log.contains(&format!("\n{node}\n")),
            "{node} answered: {log}"
        );
        assert!(log.contains(&format!("  {ip}\n")), "{ip} listed: {log}");
    }
    assert_eq!(job.state()["ending"], "completed");
}

/// A regression test: `/tmp/rs{uid}-{jobid}` was used when it existed (made by another user it
/// failed the run, a link had the bootstrap fill its target). Job ids are guessable; a name
/// that is taken gets a fresh suffix, and what was there is left alone.
#[test]
fn a_temp_root_name_taken_on_the_nodes_does_not_fail_the_run() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // Held, so that the names can be taken on its nodes before it starts: on every node of the
    // lab, as it may run on any. One node is named, so that its two nodes are sure to find the
    // name taken in both ways: a link on the named node, a directory on every other.
    let named = &lab.nodes[0];
    let job = launch(
        lab,
        "takenroot",
        &[
            "-n",
            "2",
            "-w",
            named,
            "--sbatch-arg=--hold",
            "--command",
            "true",
        ],
    );
    let target = lab.workdir("takenroot-target");
    let mut planted = Vec::new();
    for node in &lab.nodes {
        let name = Path::new(NODE_TMP)
            .join(node)
            .join(temp_root_name(&job.id, 0));
        if node == named {
            std::os::unix::fs::symlink(&target, &name).unwrap();
        } else {
            std::fs::create_dir(&name).unwrap();
        }
        planted.push(name);
    }
    let released = std::process::Command::new("scontrol")
        .args(["release", &job.id])
        .output()
        .unwrap();
    assert!(released.status.success(), "{released:?}");
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    for p in &planted {
        let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir(p));
    }
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert_eq!(job.state()["ending"], "completed", "{log}");
    let said = format!("`/tmp/{}` was there already", temp_root_name(&job.id, 0));
    assert_eq!(log.matches(&said).count(), 2, "{log}");
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "nothing written through the link"
    );
    assert_clean(&job);
}
