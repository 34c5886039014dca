//! End-to-end tests of task files (`launch TASK.yaml`, docs/task-files.md) on the real test
//! cluster: the seeds' keys, with `setup` and `run` replaced by local commands (no internet and
//! no torch on the test nodes). A SkyPilot-style task runs setup then run on every node with
//! its envs, secrets, workdir and the `SKYPILOT_*` variables; `ray_job: true` runs `run` on the
//! head of a Ray cluster instead. The seeds' own files run as written but for the steps that
//! need the internet, each node in a new, empty directory of its own (the seeds'
//! `git clone`, `mkdir`, `tar` would collide in one shared directory); `up NAME cluster.yaml`
//! then `exec NAME job.yaml` run seed 003's pair.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::clusters::lab_cluster::{rs, up};
use crate::harness::{Job, Lab, assert_clean, expand_nodes, lab, launch_in};

/// The rank-prefixed lines of the log that start with `what`.
fn rank_lines(job: &Job, what: &str) -> Vec<String> {
    job.log_text()
        .lines()
        .filter(|l| l.starts_with('[') && l.contains(&format!("] {what}")))
        .map(str::to_owned)
        .collect()
}

/// Seed 001's shape (`name`, `resources`, `num_nodes`, `setup`, `run` on every node), plus
/// `envs`, `secrets` and `workdir`.
const PER_NODE_TASK: &str = r#"name: minGPT-ddp-local
resources:
  cpus: 1
num_nodes: 2
workdir: code
envs:
  LOGLEVEL: INFO
  STEPS: 3
secrets:
  TOKEN: not-so-secret
setup: |
  echo "$SKYPILOT_NODE_RANK" > /tmp/rstest-task-setup-$SLURM_JOB_ID
run: |
  test -f /tmp/rstest-task-setup-$SLURM_JOB_ID && rm -f /tmp/rstest-task-setup-$SLURM_JOB_ID
  marker=$?
  MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)
  echo "task rank=$SKYPILOT_NODE_RANK nodes=$SKYPILOT_NUM_NODES master=$MASTER_ADDR log=$LOGLEVEL steps=$STEPS token=$TOKEN here=$(cat here.txt) marker=$marker"
"#;

#[test]
fn e2e_task_file_runs_setup_and_run_on_every_node() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("taskfile");
    std::fs::create_dir_all(dir.join("code")).unwrap();
    std::fs::write(dir.join("code/here.txt"), "in-workdir").unwrap();
    std::fs::write(dir.join("task.yaml"), PER_NODE_TASK).unwrap();
    // `--per-node` again on the command line only keeps the harness from adding a Ray option.
    let job = launch_in(lab, &dir, "taskfile", &["task.yaml", "--per-node"]);
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    assert_eq!(nodes.len(), 2, "{log}");
    let master = lab.ip_of(&nodes[0]);
    let lines = rank_lines(&job, "task ");
    assert_eq!(lines.len(), 2, "{log}");
    for (k, node) in nodes.iter().enumerate() {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("[{k} {node}] ")))
            .unwrap_or_else(|| panic!("rank {k} on {node}:\n{log}"));
        for part in [
            format!("rank={k} "),
            "nodes=2 ".to_owned(),
            format!("master={master} "),
            "log=INFO steps=3 token=not-so-secret".to_owned(),
            "here=in-workdir".to_owned(),
            "marker=0".to_owned(),
        ] {
            assert!(line.contains(&part), "{part} in {line}");
        }
    }
    assert_clean(&job);
}

/// `ray_job: true`: `run` on the head of a Ray cluster of `num_nodes` nodes, with `envs`.
const RAY_TASK: &str = r#"num_nodes: 2
envs:
  GREETING: hello-ray
run: |
  python -c 'import os, ray; ray.init(); print("raytask", os.environ["GREETING"], len([n for n in ray.nodes() if n["Alive"]]), int(ray.cluster_resources()["CPU"]))'
rayslurm:
  ray_job: true
  object_store_memory: 100000000
"#;

#[test]
fn e2e_task_file_ray_job_runs_on_the_head_of_a_ray_cluster() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("taskray");
    std::fs::write(dir.join("ray_task.yaml"), RAY_TASK).unwrap();
    let job = launch_in(lab, &dir, "taskray", &["ray_task.yaml"]);
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let line = log
        .lines()
        .find(|l| l.contains("raytask "))
        .unwrap_or_else(|| panic!("{log}"));
    // Both nodes joined, each with its 2 CPUs; one command, not one a node.
    assert!(line.ends_with("raytask hello-ray 2 4"), "{line}");
    assert_eq!(log.matches("raytask hello-ray").count(), 1, "{log}");
    assert_clean(&job);
}

/// Seed 003's `cluster.yaml` shape, for `up NAME cluster.yaml`: its nodes, a `workdir` (where
/// the cluster runs, nothing copied) and a setup that installs into it once, on one node. No
/// `accelerators:`: the lab has no GPUs (sbatch refuses any GPU request); Ray is told of one
/// on each node instead.
const CLUSTER: &str = r#"num_nodes: 2

workdir: code
setup: |
  # Install dependencies.
  if [ "$RAYSLURM_NODE_RANK" = 0 ]; then python3 -m venv --without-pip .venv; fi
  echo "cluster setup of node $RAYSLURM_NODE_RANK in $PWD"
"#;

/// Seed 003's `job.yaml` shape onto that cluster: `num_nodes: 2` with a GPU each, `envs` and
/// `setup`; run from the cluster's workdir, it finds the cluster's venv.
const CLUSTER_JOB: &str = r#"num_nodes: 2
resources:
  accelerators: H100:1
envs:
  PHASE: train
setup: |
  echo "setup on $SKYPILOT_NODE_RANK"
run: |
  # Run training script.
  source .venv/bin/activate
  echo "job rank=$SKYPILOT_NODE_RANK nodes=$SKYPILOT_NUM_NODES phase=$PHASE cuda=$CUDA_VISIBLE_DEVICES venv=$VIRTUAL_ENV"
"#;

#[test]
fn e2e_task_file_up_then_exec_runs_a_multi_node_job_on_a_cluster() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("taskexec");
    let code = dir.join("code");
    std::fs::create_dir(&code).unwrap();
    std::fs::write(dir.join("cluster.yaml"), CLUSTER).unwrap();
    std::fs::write(code.join("job.yaml"), CLUSTER_JOB).unwrap();
    let name = format!("taskexec{}", std::process::id());
    let cluster = up(
        lab,
        &dir,
        &name,
        &["cluster.yaml", "--ray-args=--num-gpus=1"],
    );
    let (code_ok, stdout, stderr) = rs(&code, &["exec", &name, "job.yaml"]);
    assert_eq!(code_ok, Some(0), "{stdout}\n{stderr}");
    let venv = code.join(".venv");
    for r in 0..2 {
        let mine: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("[{r} ")))
            .collect();
        assert!(
            mine.iter().any(|l| l.ends_with(&format!("setup on {r}"))),
            "{stdout}"
        );
        let job = format!(
            "job rank={r} nodes=2 phase=train cuda=0 venv={}",
            venv.display()
        );
        assert!(mine.iter().any(|l| l.ends_with(&job)), "{job}: {stdout}");
    }
    let (code_ok, _, stderr) = rs(&dir, &["down", &name]);
    assert_eq!(code_ok, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(60));
    let log = cluster.log_text();
    for r in 0..2 {
        let setup = format!("cluster setup of node {r} in {}", code.display());
        assert!(log.contains(&setup), "{setup}: {log}");
    }
    assert_clean(&cluster);
}

/// A seed's task file (examples/seeds/) as written, but for the steps in `local`, each
/// `(as written, instead)`: those that need the internet, GPUs or tools the nodes lack.
fn seed_offline(file: &str, local: &[(&str, String)]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/seeds")
        .join(file);
    let mut text = std::fs::read_to_string(path).unwrap();
    for (written, instead) in local {
        assert!(text.contains(written), "{file} no longer has `{written}`");
        text = text.replacen(written, instead, 1);
    }
    text
}

/// A bare git repository at `at` (on the shared filesystem) whose one commit holds `files`:
/// what a seed's setup clones, as a `file://` URL.
fn bare_repo(at: &Path, files: &[(&str, &str)]) -> String {
    let src = at.with_extension("src");
    for (path, text) in files {
        let path = src.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    let src_text = src.to_str().unwrap();
    git(&["-C", src_text, "init", "-q"]);
    git(&["-C", src_text, "add", "."]);
    git(&["-C", src_text, "commit", "-qm", "upstream"]);
    git(&["clone", "-q", "--bare", src_text, at.to_str().unwrap()]);
    format!("file://{}", at.display())
}

/// Each node's directory, from the log's `workdir on NODE: PATH (new and empty)` lines.
fn empty_workdirs(log: &str, nodes: &[String]) -> Vec<String> {
    nodes
        .iter()
        .map(|node| {
            let said = format!("workdir on {node}: ");
            let line = log
                .lines()
                .find(|l| l.contains(&said) && l.ends_with(" (new and empty)"))
                .unwrap_or_else(|| panic!("no empty workdir on {node}:\n{log}"));
            let path = line.split(&said).nth(1).unwrap();
            let path = path.trim_end_matches(" (new and empty)").to_owned();
            assert!(path.starts_with("/tmp/rs"), "{line}");
            path
        })
        .collect()
}

/// The run's line of rank `k` on `node` that starts with `what`, without its prefix.
fn rank_line(log: &str, k: usize, node: &str, what: &str) -> String {
    let prefix = format!("[{k} {node}] {what} ");
    log.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line:\n{log}"))
        .to_owned()
}

/// What a setup says when it meets another node's files: none of it may be in the log.
const COLLISIONS: [&str; 3] = ["fatal:", "File exists", "already exists"];

/// Runs `task` (written as `task.yaml` in a fresh directory) as the seeds' users would, with
/// `--num-gpus 0` over their `accelerators:` (the lab has no GPUs, and sbatch refuses any GPU
/// request there): the job and Slurm's view of it once it has ended.
fn launch_task(lab: &Lab, name: &str, task: &str) -> (Job, HashMap<String, String>) {
    let dir = lab.workdir(name);
    std::fs::write(dir.join("task.yaml"), task).unwrap();
    // `--per-node` again only keeps the harness from adding a Ray option.
    let job = launch_in(
        lab,
        &dir,
        name,
        &["task.yaml", "--num-gpus", "0", "--per-node"],
    );
    let info = job.wait(Duration::from_secs(400));
    (job, info)
}

/// [`launch_task`] for a task that must complete on 2 nodes: the job, its nodes and its log.
fn launch_seed(lab: &Lab, name: &str, task: &str) -> (Job, Vec<String>, String) {
    let (job, info) = launch_task(lab, name, task);
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    assert_eq!(nodes.len(), 2, "{log}");
    (job, nodes, log)
}

/// Seed 001's minGPT task: `git clone` (without its `|| true`), `git filter-branch`, a venv
/// and an install in its setup, torchrun in its run, on each node in an empty directory of its
/// own. Plus `set -e` and `mkdir data` at the end of the setup, which fails on one node when
/// two share a directory: the same task with `empty_workdir: false` shows that it fails the run
/// (CI once saw both clones fail, each on the other's files, and the steps after them pass).
#[test]
fn e2e_task_file_seed_001_sets_up_each_node_in_a_directory_of_its_own() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let upstream = lab.workdir("seed001-upstream");
    let repo = bare_repo(
        &upstream.join("examples.git"),
        &[
            ("README.md", "pytorch/examples, offline\n"),
            (
                "distributed/minGPT-ddp/requirements.txt",
                "# nothing to install offline\n",
            ),
            ("distributed/minGPT-ddp/mingpt/main.py", "print('minGPT')\n"),
        ],
    );
    let task = seed_offline(
        "001-mingpt-ddp.yaml",
        &[
            // `set -e`: a step of the setup that fails fails it (in the shared variant, which
            // step meets the other node's depends on timing: without it, a clone that fails
            // and is followed by steps that pass ends the setup well).
            (
                "git clone --depth 1 https://github.com/pytorch/examples || true",
                format!("set -e\n    git clone --depth 1 {repo} examples"),
            ),
            // uv makes no temp files; ensurepip and pip do, in TMPDIR, and leave them when the
            // run stops them (the shared variant's fail-fast): here they stay in the workdir.
            ("uv venv --python 3.10", "TMPDIR=$PWD python3 -m venv .venv".into()),
            (
                "    uv pip install -r requirements.txt \"numpy<2\" \"torch==2.7.1+cu118\" --extra-index-url https://download.pytorch.org/whl/cu118",
                "    TMPDIR=$PWD pip install --no-index -r requirements.txt\n    mkdir data".into(),
            ),
            (
                "    torchrun \\",
                "    python3 -c 'import os, sys; print(\"torchrun\", sys.prefix, os.getcwd(), *sys.argv[1:])' \\".into(),
            ),
        ],
    );
    let shared = std::thread::scope(|s| {
        let shared = s.spawn(|| {
            let task = format!("{task}\nrayslurm:\n  empty_workdir: false\n");
            let (job, info) = launch_task(lab, "seed001shared", &task);
            (info["JobState"].clone(), job.log_text())
        });
        let (job, nodes, log) = launch_seed(lab, "seed001", &task);
        let workdirs = empty_workdirs(&log, &nodes);
        let master = lab.ip_of(&nodes[0]);
        for (k, node) in nodes.iter().enumerate() {
            let wd = &workdirs[k];
            assert_eq!(
                rank_line(&log, k, node, "torchrun"),
                format!(
                    "{wd}/examples/.venv {wd}/examples/mingpt --nnodes=2 --nproc_per_node=0 \
                     --node_rank={k} --master_addr={master} --master_port=8008 main.py"
                ),
                "{log}"
            );
        }
        for collision in COLLISIONS {
            assert!(!log.contains(collision), "{collision}: {log}");
        }
        assert!(
            !job.dir.join("examples").exists(),
            "setup ran in the shared directory"
        );
        assert_clean(&job);
        shared.join().unwrap()
    });
    // One shared directory: the nodes' setups meet (which step first depends on timing: the
    // second `git clone` into the first's directory, or the second `mkdir data`), and a setup
    // that fails fails the run.
    let (state, log) = shared;
    assert_eq!(state, "FAILED", "{log}");
    assert!(
        log.lines()
            .any(|l| l.starts_with("[setup node") && COLLISIONS.iter().any(|c| l.contains(c))),
        "{log}"
    );
    assert!(log.contains("error: setup failed on "), "{log}");
}

/// Seed 000's ResNet task: `git clone` (no `|| true` in the seed), a data set fetched and
/// unpacked with `tar` (copied from the shared filesystem instead of `wget`), and the launcher
/// in its run, on each node in an empty directory of its own.
#[test]
fn e2e_task_file_seed_000_clones_and_unpacks_on_each_node() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let upstream = lab.workdir("seed000-upstream");
    let repo = bare_repo(
        &upstream.join("pytorch-distributed-resnet.git"),
        &[
            ("requirements.txt", "# nothing to install offline\n"),
            ("resnet_ddp.py", "print('resnet')\n"),
        ],
    );
    std::fs::create_dir_all(upstream.join("cifar/cifar-10-batches-py")).unwrap();
    std::fs::write(upstream.join("cifar/cifar-10-batches-py/data_batch_1"), "x").unwrap();
    let tarball = upstream.join("cifar-10-python.tar.gz");
    let out = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(upstream.join("cifar"))
        .arg("cifar-10-batches-py")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let task = seed_offline(
        "000-resnet-distributed.yaml",
        &[
            ("pip3 install --upgrade pip", "pip3 --version".into()),
            (
                "git clone https://github.com/michaelzhiluo/pytorch-distributed-resnet",
                format!("git clone {repo}"),
            ),
            (
                "pip3 install -r requirements.txt torch==1.12.1+cu113 --extra-index-url https://download.pytorch.org/whl/cu113",
                "pip3 install --no-index -r requirements.txt".into(),
            ),
            (
                "wget -c --quiet https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                format!("cp {} .", tarball.display()),
            ),
            (
                "python3 -m torch.distributed.launch \\",
                "python3 -c 'import os, sys; print(\"launch\", os.getcwd(), \",\".join(sorted(os.listdir(\"data\"))), *sys.argv[1:])' \\".into(),
            ),
        ],
    );
    let (job, nodes, log) = launch_seed(lab, "seed000", &task);
    let workdirs = empty_workdirs(&log, &nodes);
    let master = lab.ip_of(&nodes[0]);
    for (k, node) in nodes.iter().enumerate() {
        assert_eq!(
            rank_line(&log, k, node, "launch"),
            format!(
                "{}/pytorch-distributed-resnet cifar-10-batches-py,cifar-10-python.tar.gz \
                 --nproc_per_node=0 --node_rank={k} --nnodes=2 --master_addr={master} \
                 --master_port=8008 resnet_ddp.py --num_epochs 20",
                workdirs[k]
            ),
            "{log}"
        );
    }
    for collision in COLLISIONS {
        assert!(!log.contains(collision), "{collision}: {log}");
    }
    assert!(!job.dir.join("pytorch-distributed-resnet").exists());
    assert_clean(&job);
}
