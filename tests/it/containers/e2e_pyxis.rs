//! End to end, with pyxis and enroot (built from the vendored releases by
//! tests/cluster/build-pyxis.sh, loaded into the lab's Debian Slurm by cluster.sh) and the lab's
//! Debian 12 image as SquashFS: every program of the run is a Slurm step of its own in the run's
//! one container on each node, which is gone from every node after the run, however it ended.
//! The lab's Ray venv is mounted at its own path, and its `bin` put first on the image's PATH.
//! The container's name has a random part; and tried as `rsbob` against runs of `rsalice`
//! (docs/security.md), enroot's directories that are not hers alone fail her run at start-up.
//!
//! The container tests' own step (`RAYSLURM_TEST_CONTAINERS=1`), as `e2e_charliecloud.rs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::containers::e2e_charliecloud::{
    MARKER, PROBE, Place, SETUP_PROBE, assert_image_failed_at_start_up, assert_probed_inside,
    lab_with_image,
};
use crate::harness::{
    Job, Lab, NODE_TMP, Turn, assert_clean, expand_nodes, launch_in, temp_root_name, two_at_once_on,
};
use crate::shared_cluster::two_users::{project_dir, sh_as};

/// The lab, and the image as pyxis takes it, when pyxis is loaded.
fn lab_with_pyxis() -> Option<(&'static Lab, Turn, PathBuf)> {
    let (lab, turn, image) = lab_with_image()?;
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
    let Some((lab, _turn, image)) = lab_with_pyxis() else {
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
    let Some((lab, _turn, image)) = lab_with_pyxis() else {
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
    let Some((lab, _turn, _image)) = lab_with_pyxis() else {
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
    let Some((lab, _turn, image)) = lab_with_pyxis() else {
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
    let Some((lab, _turn, image)) = lab_with_pyxis() else {
        return;
    };
    let dir = project_dir("premap");
    let name = format!("premap{}", std::process::id());
    let flags = in_pyxis(lab, &image).join(" ");
    // Not on the nodes where the tests of rsalice's enroot directories remove and make it.
    let others = format!("{},{}", lab.node_of_its_own(0), lab.node_of_its_own(1));
    let script = format!(
        "export PYXIS_CONTAINER_REMAP_ROOT=1
\"$RAYSLURM\" up {name} -n 2 --time 5 --object-store-memory 100000000 --sbatch-arg=--exclude={others} --load-env 'source {venv}/bin/activate' {flags} || exit 1
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

/// Two runs in the image on one node at once: each has a container (its name with a random
/// part of its own) and a temp root of its own, both end well, and neither leaves anything.
#[test]
fn two_runs_in_a_pyxis_image_on_one_node_share_neither_container_nor_temp_root() {
    let Some((lab, _turn, image)) = lab_with_pyxis() else {
        return;
    };
    let node = lab.node_of_its_own(0);
    let dir = lab.workdir("ptwo");
    // The container's name, and the temp root that Ray's task sees.
    let command = r#"echo in $RAYSLURM_IN_CONTAINER $(cat /etc/rayslurm-image-marker); python -c 'import os, ray; ray.init(); print("tmp", ray.get(ray.remote(lambda: os.environ["TMPDIR"]).remote()))'; sleep 3"#;
    let args = with_pyxis(lab, &image, &["--command", command]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut randoms = Vec::new();
    for (job, info) in two_at_once_on(lab, &dir, &node, ["ptwo-a", "ptwo-b"], &args) {
        let log = job.log_text();
        assert_eq!(info["JobState"], "COMPLETED", "{log}");
        let id = &job.id;
        let name = format!(r"in rayslurm-{id}\.0-([0-9a-f]{{16}}) {MARKER}\n");
        let found = regex::Regex::new(&name).unwrap().captures(&log);
        let found = found.unwrap_or_else(|| panic!("{name} in:\n{log}"));
        randoms.push(found[1].to_owned());
        let tmp = format!("tmp /tmp/{}\n", temp_root_name(id, 0));
        assert!(log.contains(&tmp), "{tmp} in:\n{log}");
        assert_clean(&job);
        assert_no_container(&job.id);
    }
    assert_ne!(randoms[0], randoms[1]);
}

/// rsalice's uid, whose enroot directories on a node are `/tmp/enroot/user-UID`.
fn rsalice_uid() -> u32 {
    let out = std::process::Command::new("id")
        .args(["-u", "rsalice"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// A node's enroot directory of rsalice's, as the host sees it (the node's /tmp is
/// `NODE_TMP/NODE`); removed (as root) when dropped, so that her later runs there start afresh.
struct EnrootUserDir(PathBuf);

impl EnrootUserDir {
    /// The directory on `node`, gone first: the node as before rsalice's first run there.
    fn fresh(node: &str) -> Self {
        let dir = Path::new(NODE_TMP)
            .join(node)
            .join(format!("enroot/user-{}", rsalice_uid()));
        let _ = std::fs::remove_dir_all(&dir);
        Self(dir)
    }

    /// Every path below the directory (itself included) whose owner is not `uid`.
    fn not_owned_by(&self, uid: u32) -> Vec<String> {
        use std::os::unix::fs::MetadataExt;
        let mut found = Vec::new();
        let mut todo = vec![self.0.clone()];
        while let Some(p) = todo.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.uid() != uid {
                found.push(format!("{} (uid {})", p.display(), meta.uid()));
            }
            if meta.is_dir() {
                todo.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            }
        }
        found
    }
}

impl Drop for EnrootUserDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// rsalice launches a run of one node in the image on `node` from a project directory, held
/// (released by [`release`]), so that its job id is known before it starts: the job. Without
/// Ray, the command prints the image's marker as the run's root filesystem has it.
fn rsalice_launches_held(lab: &Lab, image: &Path, node: &str, name: &str) -> Job {
    let dir = project_dir(name);
    let script = format!(
        "\"$RAYSLURM\" launch --json --exp-name {name} -n 1 -w {node} --no-ray --time 5 --sbatch-arg=--hold --load-env 'source {venv}/bin/activate' {flags} --command 'echo marker $(cat /etc/rayslurm-image-marker); echo should-not-run'",
        venv = lab.venv.display(),
        flags = in_pyxis(lab, image).join(" ")
    );
    let out = sh_as("rsalice", &dir, &script);
    let (stdout, stderr) = crate::harness::text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    Job::launched(stdout.as_bytes(), dir, crate::harness::node_tmp_entries())
}

fn release(job: &Job) {
    let out = std::process::Command::new("scontrol")
        .args(["release", &job.id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// rsbob, a member of rsalice's group with a shell on a node, makes her enroot directory there
/// before her first pyxis run on it (the lab keeps enroot's directories in the node's sticky
/// /tmp/enroot, one a user, as sites do), open to all, with a container of his in it under the
/// name her run's container had before it had a random part (`rayslurm-JOB.0`): a real one,
/// made by his enroot from the image, whose marker says it is his, open for her enroot to start
/// (`chmod -R a+rwX`). Her run fails at start-up,
/// naming the directory, its owner and mode; it makes nothing in his directory, and his root
/// filesystem never runs as her.
#[test]
fn rsbobs_enroot_directory_made_for_rsalice_on_a_node_fails_her_pyxis_run_at_start_up() {
    let Some((lab, _turn, image)) = lab_with_pyxis() else {
        return;
    };
    let node = lab.node_of_its_own(0);
    let planted = EnrootUserDir::fresh(&node);
    let job = rsalice_launches_held(lab, &image, &node, "pplanted");
    let data = planted.0.join("data");
    let plant = format!(
        "set -e
mkdir -m 777 {user} {data}
own=$(mktemp -d)
ENROOT_DATA_PATH={data} ENROOT_RUNTIME_PATH=$own/run ENROOT_CACHE_PATH=$own/cache enroot create -n pyxis_rayslurm-{id}.0 {image} >/dev/null
rm -rf \"$own\"
echo \"rsbob's root filesystem\" > {data}/pyxis_rayslurm-{id}.0/etc/rayslurm-image-marker
chmod -R a+rwX {data}/pyxis_rayslurm-{id}.0",
        user = planted.0.display(),
        data = data.display(),
        id = job.id,
        image = image.display()
    );
    let out = sh_as("rsbob", Path::new("/tmp"), &plant);
    assert!(out.status.success(), "{:?}", crate::harness::text(&out));
    release(&job);
    let (_, log) = job.expect_startup_failure(Duration::from_secs(120));
    let uid = rsalice_uid();
    for said in [
        format!("enroot's data directory for you on {node}, `/tmp/enroot/user-{uid}/data`"),
        format!(
            "`/tmp/enroot/user-{uid}` (owner uid 1002 (rsbob), mode 0777) belongs to another user"
        ),
        "ask uid 1002 (rsbob) or the node's administrator to remove it".to_owned(),
    ] {
        assert!(log.contains(&said), "{said} in:\n{log}");
    }
    assert!(!log.contains("rsbob's root filesystem"), "{log}");
    let bob = 1002;
    assert_eq!(planted.not_owned_by(bob), Vec::<String>::new());
    // The control: rsalice's own enroot, pointed at that directory, starts rsbob's container
    // as hers: what the run refused would have run his root filesystem.
    let start = format!(
        "own=$(mktemp -d) && ENROOT_DATA_PATH={data} ENROOT_RUNTIME_PATH=$own/run ENROOT_CACHE_PATH=$own/cache enroot start pyxis_rayslurm-{id}.0 cat /etc/rayslurm-image-marker; rm -rf \"$own\"",
        data = data.display(),
        id = job.id
    );
    let out = sh_as("rsalice", Path::new("/tmp"), &start);
    assert!(
        crate::harness::text(&out)
            .0
            .contains("rsbob's root filesystem"),
        "control: {:?}",
        crate::harness::text(&out)
    );
}

/// rsalice's own enroot data directory on a node, left open to all (`chmod 777`, below her 0755 directory): rsbob puts a
/// container in it under the name her run's container had before it had a random part. Her
/// run fails at start-up, naming the directory, its owner and mode, and `chmod 700`; nothing
/// of the run is put there.
#[test]
fn a_container_rsbob_puts_in_rsalices_open_enroot_directory_fails_her_pyxis_run_at_start_up() {
    let Some((lab, _turn, image)) = lab_with_pyxis() else {
        return;
    };
    let node = lab.node_of_its_own(1);
    let mine = EnrootUserDir::fresh(&node);
    let data = mine.0.join("data");
    let open = format!(
        "mkdir -m 755 {} && mkdir -m 777 {}",
        mine.0.display(),
        data.display()
    );
    let out = sh_as("rsalice", Path::new("/tmp"), &open);
    assert!(out.status.success(), "{:?}", crate::harness::text(&out));
    let job = rsalice_launches_held(lab, &image, &node, "popen");
    let plant = format!(
        "mkdir -m 755 {data}/pyxis_rayslurm-{id}.0 && touch {data}/pyxis_rayslurm-{id}.0/rsbobs",
        data = data.display(),
        id = job.id
    );
    let out = sh_as("rsbob", Path::new("/tmp"), &plant);
    assert!(out.status.success(), "{:?}", crate::harness::text(&out));
    release(&job);
    let (_, log) = job.expect_startup_failure(Duration::from_secs(120));
    let uid = rsalice_uid();
    for said in [
        format!(
            "`/tmp/enroot/user-{uid}/data` (owner uid {uid} (rsalice), mode 0777) can be written by others"
        ),
        format!("make it private: `chmod 700 /tmp/enroot/user-{uid}/data` on {node}"),
    ] {
        assert!(log.contains(&said), "{said} in:\n{log}");
    }
    let left: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // The control: rsbob's container is there, in her directory, as her programs see it.
    assert_eq!(left, [format!("pyxis_rayslurm-{}.0", job.id)]);
    let out = sh_as(
        "rsalice",
        Path::new("/tmp"),
        &format!("ls {}/pyxis_rayslurm-{}.0", data.display(), job.id),
    );
    assert_eq!(
        crate::harness::text(&out).0.trim(),
        "rsbobs",
        "control: {out:?}"
    );
}
