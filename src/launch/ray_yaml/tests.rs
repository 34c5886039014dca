//! Ray's cluster YAML into `up`'s words: every field, every refusal with its line.

use std::path::Path;

use super::read;

/// The cluster YAML `text`, read from a file `c.yaml` in `dir`: its words, or the error's
/// message.
fn words_of(dir: &Path, text: &str) -> Result<Vec<String>, String> {
    std::fs::write(dir.join("c.yaml"), text).unwrap();
    read(Path::new("c.yaml"), dir)
        .map(|c| c.words())
        .map_err(|e| e.message)
}

fn refused(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    words_of(dir.path(), text).expect_err(text)
}

const HEAD: &str = "cluster_name: lab\nprovider: {type: slurm}\n";

#[test]
fn the_example_is_the_heads_flags_and_two_worker_types() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let cluster = read(Path::new("ray-cluster.yaml"), &example).unwrap();
    assert_eq!(cluster.name, "raylab");
    assert_eq!(
        cluster.words(),
        [
            "--time=2:00:00",
            "--partition=lab",
            "--cpus-per-task=2",
            "--ray-head-args=--num-cpus=2",
            "--setup=set -e\nmkdir -p \"$HOME/raylab\"\necho \"head on $(hostname)\"",
            "--worker-idle-timeout=300",
            "--max-nodes=5",
            "--worker-type=gpu: --time 2:00:00 --partition gpu --num-gpus l4:1 --cpus-per-task 2 --setup 'mkdir -p \"$HOME/raylab\"' --resources '{\"CPU\":2,\"GPU\":1}' --labels accelerator=l4 --max-workers 2",
            "--worker-type=cpu: --time 2:00:00 --partition scavenger --cpus-per-task 2 --preemptible --setup 'mkdir -p \"$HOME/raylab\"' --resources '{\"CPU\":2}' --max-workers 2 --idle-timeout 120",
        ]
    );
    assert_eq!(cluster.worker_types[0].0, 28, "the gpu type's line");
}

#[test]
fn a_head_alone_is_ups_own_flags() {
    let dir = tempfile::tempdir().unwrap();
    let text = "cluster_name: solo\nmax_workers: 0\nprovider:\n  type: slurm\n  account: proj\n  load_env: source venv/bin/activate\n  sbatch_arg: [--comment=x]\ndocker:\n  image: rayproject/ray:2.60.0\nsetup_commands: [pip list]\nworker_setup_commands: [never]\nhead_node_type: h\navailable_node_types:\n  h:\n    resources: {CPU: 4, GPU: 0, accel: 2, memory: 1000}\n    labels: {zone: a}\n    node_config: {num-nodes: 2, exclusive: false, time: '30', mem: 4G}\n";
    let words = words_of(dir.path(), text).unwrap();
    assert_eq!(
        words,
        [
            "--account=proj".to_owned(),
            "--load-env=source venv/bin/activate".into(),
            "--sbatch-arg=--comment=x".into(),
            "--container-image=docker://rayproject/ray:2.60.0".into(),
            "--num-nodes=2".into(),
            "--no-exclusive".into(),
            "--time=30".into(),
            "--mem=4G".into(),
            r#"--ray-head-args=--num-cpus=4 --num-gpus=0 --memory=1000 '--resources={"accel":2}' --labels=zone=a"#.into(),
            "--setup=pip list".into(),
        ]
    );
}

#[test]
fn workers_get_their_setup_image_and_the_sites_options_under_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let text = "cluster_name: c\nmax_workers: 3\nprovider: {type: slurm, partition: site, qos: normal}\ndocker: {head_image: /img/head.sqsh, worker_image: /img/w.sqsh}\nhead_setup_commands: [make head]\nhead_node_type: h\navailable_node_types:\n  h: {resources: {}, node_config: {}, max_workers: 1}\n  w:\n    resources: {}\n    min_workers: 1\n    worker_setup_commands: [make w]\n    docker: {worker_image: /img/own.sqsh}\n    node_config: {qos: high}\n  v:\n    resources: {}\n    node_config: {}\n";
    let words = words_of(dir.path(), text).unwrap();
    assert_eq!(
        words,
        [
            "--partition=site",
            "--qos=normal",
            "--container-image=/img/head.sqsh",
            "--setup=make head",
            "--max-nodes=4",
            // The head's type grown: its own options are the head's already.
            "--worker-type=h: --setup true --container-image /img/w.sqsh --max-workers 1",
            "--worker-type=w: --partition site --qos high --setup 'make w' --container-image /img/own.sqsh --min-workers 1 --max-workers 3",
            "--worker-type=v: --partition site --qos normal --setup true --container-image /img/w.sqsh --max-workers 3",
        ]
    );
}

#[test]
fn a_cloud_provider_is_refused_at_its_line_with_what_to_write() {
    let e =
        refused("cluster_name: x\nmax_workers: 2\nprovider:\n  type: aws\n  region: us-west-2\n");
    assert!(
        e.starts_with("c.yaml:4: provider.type: aws: rayslurm runs Ray on Slurm"),
        "{e}"
    );
    assert!(e.contains("write `provider: {type: slurm}`"), "{e}");
    for kind in ["gcp", "azure", "kuberay", "vsphere", "local"] {
        let e = refused(&format!("cluster_name: x\nprovider: {{type: {kind}}}\n"));
        assert!(
            e.contains(&format!(
                "provider.type: {kind}: rayslurm runs Ray on Slurm"
            )),
            "{e}"
        );
    }
}

#[test]
fn what_means_nothing_on_slurm_is_refused_by_line() {
    let cases: &[(&str, &str)] = &[
        (
            "auth:\n  ssh_user: ubuntu\n",
            "c.yaml:3: auth: rayslurm logs in to no node",
        ),
        (
            "head_start_ray_commands:\n  - ray stop\n",
            "c.yaml:3: head_start_ray_commands: rayslurm starts Ray itself",
        ),
        (
            "worker_start_ray_commands: [ray start]\n",
            "with `rayslurm up --ray-args",
        ),
        (
            "initialization_commands: [apt-get install x]\n",
            "c.yaml:3: initialization_commands: there is no step before the setup",
        ),
        (
            "head_node: {}\n",
            "c.yaml:3: head_node: the format of Ray before 1.0",
        ),
        ("worker_nodes: {}\n", "write `available_node_types`"),
        ("no_restart: true\n", "c.yaml:3: no_restart:"),
        (
            "docker: {image: x, run_options: [--ulimit nofile=65536]}\n",
            "c.yaml:3: docker.run_options: rayslurm runs the image with the site's container runtime",
        ),
        (
            "max_worker: 2\n",
            "c.yaml:3: max_worker: not a field of Ray's cluster YAML at the top level (Ray's schema says: Additional properties are not allowed ('max_worker' was unexpected)); did you mean `max_workers`?",
        ),
        (
            "min_workers: 1\n",
            "('min_workers' was unexpected)); did you mean `max_workers`?",
        ),
        ("provider_x: 1\n", "did you mean `provider`?"),
        (
            "max_workers: -1\n",
            "c.yaml:3: max_workers: give a whole number of at least 0",
        ),
        ("idle_timeout_minutes: soon\n", "give a number"),
        (
            "file_mounts: {}\nmax_workers: x\n",
            "c.yaml:4: max_workers:",
        ),
        (
            "file_mounts: {data/train: ./train}\n",
            "c.yaml:3: file_mounts.data/train: `data/train` is relative, and Ray's remote paths are not: write `~/data/train` (under your home on each node) or an absolute path such as `/tmp/data/train` or `/data/train`",
        ),
        (
            "file_mounts:\n  /a: ./a\n  ~bob/x: ./x\n",
            "c.yaml:5: file_mounts.~bob/x: the destination `~bob/x`: only `~/PATH` (your own home) is expanded",
        ),
        (
            "file_mounts: {/opt/../etc: ./x}\n",
            "c.yaml:3: file_mounts./opt/../etc: the destination `/opt/../etc` goes up with `..`",
        ),
        (
            "file_mounts: {}\nmax_workers: x\n",
            "c.yaml:4: max_workers:",
        ),
        (
            "head_node_type: h\n",
            "c.yaml:3: head_node_type: `h` is not one of",
        ),
    ];
    for (tail, want) in cases {
        let e = refused(&format!("{HEAD}{tail}"));
        assert!(e.contains(want), "{tail}: {e}");
    }
    let e = refused("provider: {type: slurm}\n");
    assert!(e.starts_with("c.yaml: cluster_name: is missing"), "{e}");
    let e = refused("cluster_name: x\n");
    assert!(e.contains("provider: is missing"), "{e}");
    let e = refused("cluster_name: 'a b'\nprovider: {type: slurm}\n");
    assert!(e.contains("c.yaml:1: cluster_name: invalid NAME"), "{e}");
    let e = refused(&format!("{HEAD}provider:\n  type: slurm\n"));
    assert!(e.contains("duplicate mapping key"), "{e}");
}

#[test]
fn a_node_types_cloud_settings_and_unknown_keys_are_refused_by_line() {
    let with = |t: &str| {
        refused(&format!(
            "{HEAD}head_node_type: h\navailable_node_types:\n  h:\n{t}"
        ))
    };
    let e = with("    resources: {}\n    node_config:\n      InstanceType: m5.large\n");
    assert!(e.contains("c.yaml:8: available_node_types.h.node_config.InstanceType: a cloud's machine type: give the node's Slurm resources instead: `cpus_per_task`, `mem`, `num_gpus`"), "{e}");
    let e = with("    resources: {}\n    node_config: {machineType: n1, ImageId: x}\n");
    assert!(
        e.contains("node_config.machineType: a cloud's machine type"),
        "{e}"
    );
    let e = with("    resources: {}\n    node_config: {ImageId: ami-1}\n");
    assert!(e.contains("container_image"), "{e}");
    let e =
        with("    resources: {}\n    node_config: {InstanceMarketOptions: {MarketType: spot}}\n");
    assert!(e.contains("preemptible: true"), "{e}");
    let e = with("    resources: {}\n    node_config: {partiton: gpu}\n");
    assert!(
        e.contains("node_config.partiton: not an option of a worker type")
            && e.contains("did you mean `partition`?"),
        "{e}"
    );
    let e = with("    node_config: {}\n");
    assert!(
        e.contains("c.yaml:5: available_node_types.h: has no `resources`"),
        "{e}"
    );
    let e = with("    resources: {CPU: 1.5}\n    node_config: {}\n");
    assert!(
        e.contains("c.yaml:6: available_node_types.h.resources.CPU: give a whole number"),
        "{e}"
    );
    let e = with("    resources: {}\n    node_config: {}\n    min_worker: 1\n");
    assert!(e.contains("c.yaml:8: available_node_types.h.min_worker: not a field of Ray's cluster YAML at a node type") && e.contains("did you mean `min_workers`?"), "{e}");
    let e = with("    resources: {}\n    node_config: {}\n    initialization_commands: [x]\n");
    assert!(
        e.contains("c.yaml:8: available_node_types.h.initialization_commands"),
        "{e}"
    );
    let e =
        with("    resources: {}\n    node_config: {}\n    min_workers: 3\n    max_workers: 1\n");
    assert!(
        e.contains("c.yaml:9: available_node_types.h.max_workers: 1 is less than min_workers 3"),
        "{e}"
    );
    let e = refused(&format!(
        "{HEAD}head_node_type: h\navailable_node_types:\n  h: {{resources: {{}}, node_config: {{}}}}\n  ray.worker.gpu: {{resources: {{}}, node_config: {{}}}}\n"
    ));
    assert!(
        e.contains("c.yaml:6: available_node_types.ray.worker.gpu: a worker type's name")
            && e.contains("`ray-worker-gpu`"),
        "{e}"
    );
    let e = refused(&format!(
        "{HEAD}available_node_types:\n  h: {{resources: {{}}, node_config: {{}}}}\n"
    ));
    assert!(e.contains("head_node_type: is missing"), "{e}");
}

/// Ray's `file_mounts` are `up`'s `--file-mount`s, after the cluster's other flags.
#[test]
fn file_mounts_are_file_mount_flags() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{HEAD}file_mounts:\n  ~/cfg.json: ./cfg.json\n  /data/train: ~/train\n  /tmp/x: ./x\n"
    );
    assert_eq!(
        words_of(dir.path(), &text).unwrap(),
        [
            "--file-mount=~/cfg.json=./cfg.json",
            "--file-mount=/data/train=~/train",
            "--file-mount=/tmp/x=./x",
        ]
    );
}

#[test]
fn what_needs_nothing_here_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{HEAD}upscaling_speed: 1.0\nrsync_exclude: ['**/.git']\ncluster_synced_files: []\nfile_mounts_sync_continuously: false\nmetadata: {{a: b}}\ninitialization_commands: []\ndocker: {{image: x, pull_before_run: true}}\nhead_node_type: h\navailable_node_types:\n  h: {{resources: {{}}, node_config: {{}}, priority: 2}}\n"
    );
    std::fs::write(dir.path().join("c.yaml"), text).unwrap();
    let cluster = read(Path::new("c.yaml"), dir.path()).unwrap();
    let notices = cluster.notices.join("\n");
    for said in [
        "c.yaml: `upscaling_speed` needs nothing here",
        "`rsync_exclude` needs nothing here: `rayslurm rsync-up` copies what you name",
        "`cluster_synced_files` needs nothing here: every node sees",
        "`file_mounts_sync_continuously` needs nothing here",
        "`docker.pull_before_run` needs nothing here",
        "`available_node_types.h.priority` needs nothing here",
    ] {
        assert!(notices.contains(said), "{said}: {notices}");
    }
    assert_eq!(cluster.words(), ["--container-image=docker://x"]);
}

#[test]
fn a_task_file_or_a_name_is_told_from_a_cluster_yaml() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.yaml"),
        "run: python x.py\nresources: {cpus: 2}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("c.yaml"), HEAD).unwrap();
    assert!(super::is_ray_cluster_file(Path::new("c.yaml"), dir.path()));
    assert!(!super::is_ray_cluster_file(Path::new("t.yaml"), dir.path()));
    assert!(!super::is_ray_cluster_file(
        Path::new("none.yaml"),
        dir.path()
    ));
    std::fs::create_dir(dir.path().join("conf")).unwrap();
    std::fs::write(dir.path().join("conf/c"), HEAD).unwrap();
    for file in ["c.yaml", "c.yml", "conf/c", "./conf/c", "missing.yaml"] {
        assert!(super::names_a_file(file, dir.path()), "{file}");
    }
    // A name that is no file is a name (refused as one where it is not).
    for name in ["lab", "my-cluster.v2", "a_b+1", "a/b", "conf"] {
        assert!(!super::names_a_file(name, dir.path()), "{name}");
    }
}
