//! GPU names on the lab's typed GPUs (tests/cluster/cluster.sh: `gpu:a100_80gb:4,gpu:l4:4` on
//! node1-2, `gpu:h100:8` on node3-4, `gpu:4` without a type on node5-6, which also make the
//! partition `labgpu`), each device a fake `/dev/nvidiaN`, so that Slurm itself gives the
//! devices (`CUDA_VISIBLE_DEVICES`) or refuses the request. The runs share their nodes
//! (`--no-exclusive`): an exclusive job is given every GPU of its nodes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{
    Job, Lab, NO_DASHBOARD, assert_clean, lab, node_tmp_entries, rayslurm, scontrol_job, text,
    unique_name,
};

/// `launch --json` of `args` from `dir`, sharing nodes unless `args` say `--exclusive` (the
/// last wins), as [`crate::harness::launch_in`] does but keeping what the launch said on
/// stderr.
fn launch_seen(lab: &Lab, dir: &Path, name: &str, args: &[&str]) -> (Job, String) {
    let load_env = lab.load_env();
    let mut argv = vec![
        "launch",
        "--json",
        "--exp-name",
        name,
        "--load-env",
        &load_env,
    ];
    argv.extend(["--time", "10", "--no-exclusive"]);
    argv.extend_from_slice(args);
    let before = node_tmp_entries();
    let out = rayslurm(argv).cwd(dir).output();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "launch failed: {stderr}");
    (Job::launched(&out.stdout, dir.to_owned(), before), stderr)
}

/// A Ray run on 2 nodes of SkyPilot's `A100-80GB`: the site's `a100_80gb`, on node1 and node2,
/// 2 devices each, and Ray told 4 GPUs in all; one `sinfo` call.
const RAY_A100: &str = r#"num_nodes: 2
resources:
  accelerators: A100-80GB:2
run: |
  python -c 'import os, ray; ray.init(); print("gpus", os.environ["CUDA_VISIBLE_DEVICES"], int(ray.cluster_resources()["GPU"]))'
rayslurm:
  ray_job: true
  object_store_memory: 100000000
"#;

#[test]
fn e2e_a_skypilot_gpu_name_runs_on_the_nodes_of_the_sites_type() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("gpuname");
    std::fs::write(dir.join("task.yaml"), RAY_A100).unwrap();
    let (job, stderr) = launch_seen(lab, &dir, "gpuname", &["-v", "task.yaml", NO_DASHBOARD]);
    assert!(
        stderr.contains("accelerators: A100-80GB:2 is the site's a100_80gb:2\n"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("sinfo -h -N").count(), 1, "{stderr}");
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert_eq!(info["NodeList"], "node[1-2]", "{log}");
    assert!(log.lines().any(|l| l == "gpus 0,1 4"), "{log}");
    assert_clean(&job);
}

/// A whole node (the CLI's default, `--exclusive`) comes with all 8 of node1's GPUs, of both
/// types, in the head's batch step, while the workers' step sees the 2 asked for: every node
/// tells Ray 2, so Ray has the 4 asked for, not 10.
#[test]
fn e2e_a_whole_node_tells_ray_the_gpus_asked_for_not_all_it_has() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("gpuwhole");
    let cmd = "python -c 'import os, ray; ray.init(); print(\"visible\", len(os.environ[\"CUDA_VISIBLE_DEVICES\"].split(\",\")), \"ray\", int(ray.cluster_resources()[\"GPU\"]))'";
    let (job, _) = launch_seen(
        lab,
        &dir,
        "gpuwhole",
        &[
            "-n",
            "2",
            "--exclusive",
            "--num-gpus",
            "a100_80gb:2",
            "--object-store-memory",
            "100000000",
            NO_DASHBOARD,
            "--command",
            cmd,
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    // The head sees the whole node's 8; Ray is told 2 a node.
    assert!(log.lines().any(|l| l == "visible 8 ray 4"), "{log}");
    assert_clean(&job);
}

/// A whole GPU node and a node without GPUs, no GPUs asked for: each rank counts its own
/// node's, none. The batch node's `CUDA_VISIBLE_DEVICES` (all its GPUs, a whole node's) once
/// reached the other node's rank through the step, which then counted 4.
#[test]
fn e2e_a_node_without_gpus_never_counts_the_batch_nodes() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let (gpu_node, plain) = ("node5", lab.nodes.last().unwrap().clone());
    assert!(
        lab.nodes.len() > 6,
        "a lab node without GPUs: {:?}",
        lab.nodes
    );
    let dir = lab.workdir("gpuplain");
    let nodes = format!("{gpu_node},{plain}");
    let (job, _) = launch_seen(
        lab,
        &dir,
        "gpuplain",
        &[
            "-n",
            "2",
            "--per-node",
            "--exclusive",
            "--node",
            &nodes,
            "--command",
            "echo \"gpus=$RAYSLURM_NUM_GPUS_PER_NODE on $(hostname)\"",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    for node in [gpu_node, plain.as_str()] {
        assert!(
            log.contains(&format!("gpus=0 on {node}\n")),
            "{node}: {log}"
        );
    }
    assert_clean(&job);
}

#[test]
fn e2e_an_unknown_gpu_type_is_refused_before_submission() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("gpuunknown");
    std::fs::write(
        dir.join("task.yaml"),
        "run: nvidia-smi\nresources:\n  accelerators: V100:2\n",
    )
    .unwrap();
    let name = unique_name("gpuunknown");
    rayslurm(["launch", "task.yaml", "--exp-name", &name])
        .cwd(&dir)
        .expect_status(2)
        .expect_stderr_contains(
            "error: task.yaml:3: resources.accelerators: `V100` is not a GPU type of this site: its types are a100_80gb, h100, l4 (and GPUs without a type)\n",
        )
        .run();
    rayslurm(["launch", "--exp-name", &name, "--command", "true", "--num-gpus", "H100-80GB:1"])
        .cwd(&dir)
        .expect_status(2)
        .expect_stderr_contains("error: --num-gpus `H100-80GB:1`: `H100-80GB` is not a GPU type of this site (its h100 does not say the memory `H100-80GB` names)")
        .run();
    let queued = Command::new("squeue")
        .args(["-h", "--name", &name])
        .output()
        .unwrap();
    assert_eq!(text(&queued).0, "", "a job was submitted");
}

/// A job of 8 h100 on node3 and node4, cancelled when dropped.
struct HoldH100(String);

impl HoldH100 {
    fn start() -> Self {
        let out = Command::new("sbatch")
            .args(["--parsable", "-p", "lab", "-N", "2", "-w", "node3,node4"])
            .args(["--gpus-per-node=h100:8", "--time=5", "--output=/dev/null"])
            .args(["-J", &unique_name("holdh100"), "--wrap", "sleep 300"])
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        let held = HoldH100(stdout.trim().to_owned());
        wait_until("the h100 job to run", Duration::from_secs(300), || {
            scontrol_job(&held.0)["JobState"] == "RUNNING"
        });
        held
    }
}

impl Drop for HoldH100 {
    fn drop(&mut self) {
        let _ = Command::new("scancel").arg(&self.0).status();
    }
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `rayslurm gpus --json`'s row of `gpu` in the partition `lab`: (total, free).
fn lab_row(gpu: &str) -> (u64, u64) {
    let out = rayslurm(["gpus", "--json"]).expect_status(0).run();
    let rows: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let row = (rows.as_array().unwrap().iter())
        .find(|r| r["partition"] == "lab" && r["gpu"] == gpu)
        .unwrap_or_else(|| panic!("no {gpu} in lab: {rows}"));
    (
        row["total"].as_u64().unwrap(),
        row["free"].as_u64().unwrap(),
    )
}

/// With every h100 held, `gpus` shows them taken, and candidates take the a100_80gb.
#[test]
fn e2e_candidates_take_the_type_with_free_nodes_and_gpus_shows_what_is_held() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let held = HoldH100::start();
    assert_eq!(lab_row("h100"), (16, 0));
    let table = rayslurm(["gpus"]).expect_status(0).run().stdout;
    let h100 = regex::Regex::new(r"(?m)^lab\* +h100 +2 +8 +16 +0$").unwrap();
    assert!(h100.is_match(&table), "{table}");
    assert_eq!(lab_row("a100_80gb").0, 8);
    let dir = lab.workdir("gpuchoice");
    std::fs::write(
        dir.join("task.yaml"),
        "resources:\n  accelerators: {H100:8, A100-80GB:4}\nrun: echo \"devices=$CUDA_VISIBLE_DEVICES\"\n",
    )
    .unwrap();
    let mut tries = 0;
    let (job, stderr) = loop {
        // Other tests' jobs may hold node1 and node2 for a while: wait for them.
        wait_until("a free a100_80gb node", Duration::from_secs(240), || {
            lab_row("a100_80gb").1 >= 4
        });
        let (job, stderr) = launch_seen(lab, &dir, "gpuchoice", &["task.yaml"]);
        if stderr.contains("accelerators: chose a100_80gb:4 (A100-80GB:4; ") {
            break (job, stderr);
        }
        // Another test took them between the look and the launch: the choice says so.
        assert!(
            stderr.contains("accelerators: chose h100:8 (H100:8; 0 nodes free, 1 needed: it waits), over a100_80gb:4 (0 nodes free)\n"),
            "{stderr}"
        );
        // (Or each of node1 and node2 has some free, not 4: another test's 2 each.)
        job.scancel();
        tries += 1;
        assert!(
            tries < 12,
            "no node had 4 a100_80gb free at each of 12 launches"
        );
        std::thread::sleep(Duration::from_secs(10));
    };
    assert!(
        stderr.contains("), over h100:8 (0 nodes free)\n"),
        "{stderr}"
    );
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(
        ["node1", "node2"].contains(&info["NodeList"].as_str()),
        "{info:?}"
    );
    assert!(log.contains("] devices=0,1,2,3\n"), "{log}");
    drop(held);
    assert_clean(&job);
}

#[test]
fn e2e_gpu_partitions_send_a_type_to_its_partition_untyped() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("gpupart");
    std::fs::write(
        dir.join("site.toml"),
        "[launch]\ngpu_partitions = { v100 = \"labgpu\" }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("task.yaml"),
        "num_nodes: 2\nresources:\n  accelerators: V100:2\nrun: echo \"devices=$CUDA_VISIBLE_DEVICES\"\n",
    )
    .unwrap();
    let load_env = lab.load_env();
    let before = node_tmp_entries();
    let out = rayslurm(["launch", "--json", "task.yaml", "--exp-name", "gpupart"])
        .arg("--load-env")
        .arg(&load_env)
        .arg("--time=10")
        .arg("--no-exclusive")
        .env("RAYSLURM_CONFIG", dir.join("site.toml"))
        .cwd(&dir)
        .output();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("accelerators: V100:2 is partition labgpu's GPUs (gpu_partitions): --partition labgpu, 2 GPUs a node without a type\n"),
        "{stderr}"
    );
    let job = Job::launched(&out.stdout, dir.clone(), before);
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert_eq!(info["Partition"], "labgpu", "{info:?}");
    assert_eq!(info["NodeList"], "node[5-6]", "{info:?}");
    assert_eq!(log.matches("] devices=0,1\n").count(), 2, "{log}");
    assert_clean(&job);
}
