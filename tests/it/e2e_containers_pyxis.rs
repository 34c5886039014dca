//! End to end, with pyxis and enroot (built from the vendored releases by
//! tests/cluster/build-pyxis.sh, loaded into the lab's Debian Slurm by cluster.sh) and the lab's
//! Debian 12 image as SquashFS: every program of the run is a Slurm step of its own in the run's
//! one container on each node, which is gone from every node after the run, however it ended.
//! The lab's Ray venv is mounted at its own path, and its `bin` put first on the image's PATH.
//!
//! The container tests' own step (`RAYSLURM_TEST_CONTAINERS=1`), as e2e_containers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::e2e_containers::{
    MARKER, PROBE, Place, SETUP_PROBE, assert_image_failed_at_start_up, assert_probed_inside,
    lab_with_image,
};
use crate::e2e_shared::{project_dir, sh_as};
use crate::harness::{
    Job, Lab, NODE_TMP, Turn, assert_clean, expand_nodes, launch_in, two_at_once_on,
};

/// The lab, and the image as pyxis takes it, when pyxis is loaded.
fn lab_with_pyxis(test: &str) -> Option<(&'static Lab, Turn, PathBuf)> {
    let (lab, turn, image) = lab_with_image(test)?;
    let help = std::process::Command::new("srun")
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("--container-image"),
        "pyxis is not loaded into the test cluster: run `bash tests/cluster/build-pyxis.sh`, then `bash tests/cluster/cluster.sh up`"
    );
    Some((lab, turn, image.with_extension("sqsh")))
}

fn in_pyxis(lab: &Lab, image: &Path) -> Vec<String> {
    vec![
        format!("--container-image={}", image.display()),
        "--container-runtime=pyxis".to_owned(),
        format!("--container-mounts={}", lab.venv.display()),
    ]
}

/// The run's containers (`pyxis_rayslurm-JOB.R`, in any user's enroot data) left on any node.
fn containers_left(job_id: &str) -> Vec<PathBuf> {
    let name = format!("rayslurm-{job_id}.");
    let list = |p: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(p)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    list(Path::new(NODE_TMP))
        .iter()
        .flat_map(|node| list(&node.join("enroot")))
        .flat_map(|user| list(&user.join("data")))
        .filter(|c| c.file_name().unwrap().to_string_lossy().contains(&name))
        .collect()
}

/// Waits a little for the nodes' teardown, then says what is left of the run's containers.
fn assert_no_container(job_id: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while !containers_left(job_id).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(containers_left(job_id), Vec::<PathBuf>::new());
}

/// `args` and the flags that put the run in `image` with pyxis.
fn with_pyxis(lab: &Lab, image: &Path, args: &[&str]) -> Vec<String> {
    let flags = in_pyxis(lab, image);
    args.iter().map(|a| (*a).to_owned()).chain(flags).collect()
}

/// [`launch_in`] `dir` with `args`, in `image` with pyxis.
fn launch_in_pyxis(lab: &Lab, image: &Path, dir: &Path, name: &str, args: &[&str]) -> Job {
    let argv = with_pyxis(lab, image, args);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    launch_in(lab, dir, name, &argv)
}

#[test]
fn a_ray_run_in_a_pyxis_image_runs_its_setup_driver_and_tasks_inside_it_on_every_node() {
    let Some((lab, _turn, image)) = lab_with_pyxis("a_ray_run_in_a_pyxis_image") else {
        return;
    };
    let dir = lab.workdir("pray");
    std::fs::write(dir.join("probe.py"), PROBE).unwrap();
    let job = launch_in_pyxis(
        lab,
        &image,
        &dir,
        "pray",
        &[
            "-n",
            "2",
            "--setup",
            SETUP_PROBE,
            "--command",
            "python probe.py",
        ],
    );
    assert_probed_inside(&job);
    assert_clean(&job);
    assert_no_container(&job.id);
}

/// Two ranks on each node run in one container there, made once; the last rank out of a node
/// removes it.
#[test]
fn a_per_node_run_in_a_pyxis_image_runs_every_rank_inside_it_and_leaves_no_container() {
    let Some((lab, _turn, image)) = lab_with_pyxis("a_per_node_run_in_a_pyxis_image") else {
        return;
    };
    let dir = lab.workdir("ppernode");
    // The ranks end one after another, the last a second after the first.
    let command =
        "sleep $((RANK % 2)); echo rank=$RANK $(cat /etc/rayslurm-image-marker) in=$(pwd)";
    let job = launch_in_pyxis(
        lab,
        &image,
        &dir,
        "ppernode",
        &[
            "--per-node",
            "-n",
            "2",
            "--tasks-per-node",
            "2",
            "--command",
            command,
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    for rank in 0..4 {
        let node = &nodes[rank / 2];
        let line = format!("[{rank} {node}] rank={rank} {MARKER} in={}", dir.display());
        assert!(log.contains(&line), "{line} in:\n{log}");
    }
    assert_clean(&job);
    assert_no_container(&job.id);
}

#[test]
fn an_image_pyxis_cannot_start_fails_the_run_at_start_up_with_its_words() {
    let Some((lab, _turn, _image)) = lab_with_pyxis("an_image_pyxis_cannot_start") else {
        return;
    };
    let dir = lab.workdir("pbad");
    let bad = dir.join("not-an-image.sqsh");
    std::fs::write(&bad, "not squashfs\n").unwrap();
    let job = launch_in_pyxis(
        lab,
        &bad,
        &dir,
        "pbad",
        &["-n", "2", "--command", "echo should-not-run"],
    );
    let log = assert_image_failed_at_start_up(&job, &bad, "pyxis");
    // pyxis's and enroot's own words.
    assert!(log.contains("Invalid image format"), "{log}");
    assert!(!log.contains("should-not-run\n"), "{log}");
    assert_clean(&job);
    assert_no_container(&job.id);
}

/// A persistent cluster in the image: a Ray job and a per-node job `exec`ed onto it run inside;
/// `down` (Slurm ends the job: no new step can start then) leaves no container.
#[test]
fn a_cluster_in_a_pyxis_image_runs_its_exec_jobs_inside_it_and_down_leaves_no_container() {
    let Some((lab, _turn, image)) = lab_with_pyxis("a_cluster_in_a_pyxis_image") else {
        return;
    };
    let place = Place::new(lab, "pcluster");
    let name = format!("pimage{}", std::process::id());
    let cluster = place.submit(lab, &in_pyxis(lab, &image), &["up", &name, "-n", "2"]);
    for (what, extra) in [("job", None), ("rank", Some("--per-node"))] {
        let command = format!("echo {what} $(cat /etc/rayslurm-image-marker)");
        let mut args = vec!["exec", &name];
        args.extend(extra);
        args.extend(["--command", &command]);
        let (code, stdout, stderr) = place.rs(&args);
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
        assert!(stdout.contains(&format!("{what} {MARKER}")), "{stdout}");
    }
    let (code, _, stderr) = place.rs(&["down", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(60));
    assert_clean(&cluster);
    assert_no_container(&cluster.id);
}

/// A member of the group, not root, whose site has pyxis remap them to root inside
/// (`--container-remap-root`, here by pyxis's own variable): the owner checks of the run's
/// files (its token, the cluster's file that `exec` reads) hold, since the files Ray writes
/// inside are the member's on the node; `exec` reaches the cluster and the job sees uid 0.
#[test]
fn a_member_remapped_to_root_inside_a_pyxis_image_runs_a_cluster_with_its_checks() {
    let Some((lab, _turn, image)) = lab_with_pyxis("a_member_remapped_to_root_in_pyxis") else {
        return;
    };
    let dir = project_dir("premap");
    let name = format!("premap{}", std::process::id());
    let flags = in_pyxis(lab, &image).join(" ");
    let script = format!(
        "export PYXIS_CONTAINER_REMAP_ROOT=1
\"$RAYSLURM\" up {name} -n 2 --time 5 --object-store-memory 100000000 --load-env 'source {venv}/bin/activate' {flags} || exit 1
\"$RAYSLURM\" exec {name} --command 'echo inside uid=$(id -u) $(cat /etc/rayslurm-image-marker)'; code=$?
\"$RAYSLURM\" down {name}
exit $code",
        venv = lab.venv.display()
    );
    let out = sh_as("rsalice", &dir, &script);
    let (stdout, stderr) = crate::harness::text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("inside uid=0 {MARKER}")),
        "{stdout}\n{stderr}"
    );
    let job = stdout
        .lines()
        .chain(stderr.lines())
        .find_map(|l| l.split(", job ").nth(1))
        .and_then(|rest| rest.split(';').next())
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("the cluster's job in:\n{stdout}\n{stderr}"));
    crate::harness::wait_job_end(&job, Duration::from_secs(60));
    assert_no_container(&job);
}

/// Two runs in the image on one node at once: each has a container and a temp root of its own,
/// both end well, and neither leaves anything.
#[test]
fn two_runs_in_a_pyxis_image_on_one_node_share_neither_container_nor_temp_root() {
    let Some((lab, _turn, image)) = lab_with_pyxis("two_runs_in_a_pyxis_image_on_one_node") else {
        return;
    };
    let node = lab.node_of_its_own(0);
    let dir = lab.workdir("ptwo");
    // The container's name, and the temp root that Ray's task sees.
    let command = r#"echo in $RAYSLURM_IN_CONTAINER $(cat /etc/rayslurm-image-marker); python -c 'import os, ray; ray.init(); print("tmp", ray.get(ray.remote(lambda: os.environ["TMPDIR"]).remote()))'; sleep 3"#;
    let args = with_pyxis(lab, &image, &["--command", command]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for (job, info) in two_at_once_on(lab, &dir, &node, ["ptwo-a", "ptwo-b"], &args) {
        let log = job.log_text();
        assert_eq!(info["JobState"], "COMPLETED", "{log}");
        let id = &job.id;
        for own in [
            format!("in rayslurm-{id}.0 {MARKER}\n"),
            format!("tmp /tmp/rs0-{id}.0\n"),
        ] {
            assert!(log.contains(&own), "{own} in:\n{log}");
        }
        assert_clean(&job);
        assert_no_container(&job.id);
    }
}
