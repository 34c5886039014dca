//! End to end, on the real test cluster, with a real container runtime: Charliecloud (`ch-run`,
//! Debian's), the wrapping kind, and the lab's Debian 12 image (tests/cluster/images.sh), whose
//! marker file tells a program that ran inside it from one that did not. The lab's Ray venv is
//! mounted at its own path (`--container-mounts`); everything else of the run is the image's.
//!
//! Their own step of tests/run.sh (`RAYSLURM_TEST_CONTAINERS=1`, which also builds the image);
//! without it they skip, saying so, and under CI (`CI=true`) they fail unless
//! `RAYSLURM_TEST_CONTAINERS=0` skips them on purpose.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::{
    Job, Lab, Turn, assert_clean, expand_nodes, lab, leftovers, node_tmp_entries, processes_with,
    rayslurm, text,
};

/// The marker file's text in the lab's image (images.sh's `MARKER_TEXT`).
pub(crate) const MARKER: &str = "rayslurm-test-image debian12";

/// The lab and the image, when the container tests are asked for.
pub(crate) fn lab_with_image() -> Option<(&'static Lab, Turn, PathBuf)> {
    if std::env::var("RAYSLURM_TEST_CONTAINERS").as_deref() != Ok("1") {
        let why = "the container tests run in their own step (bash tests/step.sh containers)";
        crate::harness::skip(
            &crate::harness::this_test(),
            why,
            Some("RAYSLURM_TEST_CONTAINERS"),
        );
        return None;
    }
    let (lab, turn) = lab()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/images.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg("env")
        .output()
        .unwrap();
    let env = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = |key: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        value("RAYSLURM_LAB_IMAGE_BUILT"),
        "1",
        "the lab's image is not built: run `bash tests/cluster/images.sh up`"
    );
    assert_eq!(value("RAYSLURM_LAB_IMAGE_MARKER"), MARKER);
    Some((lab, turn, PathBuf::from(value("RAYSLURM_LAB_IMAGE"))))
}

/// The flags that put a run in the image, the lab's venv mounted at its own path.
fn in_image(lab: &Lab, image: &Path) -> Vec<String> {
    vec![
        format!("--container-image={}", image.display()),
        "--container-runtime=charliecloud".to_owned(),
        format!("--container-mounts={}", lab.venv.display()),
    ]
}

/// A test's working directory and run records, both in the lab's shared directory, which the
/// image has a directory for (Charliecloud mounts only there; the harness's own run records are
/// in the checkout, which the image does not know).
pub(crate) struct Place {
    pub(crate) dir: PathBuf,
    state: PathBuf,
}

impl Place {
    pub(crate) fn new(lab: &Lab, name: &str) -> Self {
        Self {
            dir: lab.workdir(name),
            state: lab.workdir(&format!("{name}-state")),
        }
    }

    /// rayslurm `args` here: exit code, stdout, stderr.
    pub(crate) fn rs(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = rayslurm(args.iter().copied())
            .cwd(&self.dir)
            .env("RAYSLURM_STATE_DIR", &self.state)
            .output();
        let (stdout, stderr) = text(&out);
        (out.status.code(), stdout, stderr)
    }

    /// `launch` (or `up`) with the lab's Ray, in the image (`image_flags`), as the job it
    /// submitted.
    pub(crate) fn submit(&self, lab: &Lab, image_flags: &[String], args: &[&str]) -> Job {
        let load_env = lab.load_env();
        let mut argv = vec!["--json", "--load-env", &load_env, "--time", "10"];
        if !args.contains(&"--per-node") {
            argv.extend(["--object-store-memory", "100000000"]);
        }
        argv.extend(image_flags.iter().map(String::as_str));
        let argv: Vec<&str> = args.iter().copied().chain(argv).collect();
        let tmp_before = node_tmp_entries();
        let (code, stdout, stderr) = self.rs(&argv);
        assert_eq!(code, Some(0), "{stderr}");
        Job::launched(stdout.as_bytes(), self.dir.clone(), tmp_before)
    }
}

/// Every Ray node runs a task that reports its host and the marker it sees.
pub(crate) const PROBE: &str = r#"import os, socket, ray
ray.init()
marker = lambda: open("/etc/rayslurm-image-marker").read().strip()
print("driver", marker(), flush=True)
@ray.remote(num_cpus=0)
def where():
    return socket.gethostname(), marker(), os.environ.get("TMPDIR")
ips = [n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]]
for host, seen, tmp in sorted(ray.get([where.options(resources={f"node:{ip}": 0.01}).remote() for ip in ips])):
    print("task", host, seen, "tmpdir", tmp, flush=True)
"#;

/// The setup (`SETUP_PROBE`) and [`PROBE`] of a 2-node Ray run ran inside the image: the
/// driver, a task on each node, and each node's setup saw the image's marker.
pub(crate) fn assert_probed_inside(job: &Job) {
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    assert_eq!(nodes.len(), 2, "{log}");
    assert!(log.contains(&format!("\ndriver {MARKER}\n")), "{log}");
    for node in &nodes {
        // Ray's processes have the run's temp root as TMPDIR inside the image, as outside.
        assert!(
            log.contains(&format!("task {node} {MARKER} tmpdir /tmp/rs")),
            "{log}"
        );
        assert!(
            log.contains(&format!("[setup {node}] setup {MARKER}")),
            "{log}"
        );
    }
}

/// The run failed at start-up, saying that `image` cannot run with `runtime` on its head node;
/// the log, for the runtime's own words.
pub(crate) fn assert_image_failed_at_start_up(job: &Job, image: &Path, runtime: &str) -> String {
    let (info, log) = job.expect_startup_failure(Duration::from_secs(120));
    let head = &expand_nodes(&info["NodeList"])[0];
    let said = format!(
        "the image `{}` ({runtime}) cannot run on {head}: ",
        image.display()
    );
    assert!(log.contains(&said), "{said} in:\n{log}");
    log
}

/// A setup that says the marker it sees.
pub(crate) const SETUP_PROBE: &str = "echo setup $(cat /etc/rayslurm-image-marker)";

#[test]
fn a_ray_run_in_an_image_runs_its_setup_driver_and_tasks_inside_it_on_every_node() {
    let Some((lab, _turn, image)) = lab_with_image() else {
        return;
    };
    let place = Place::new(lab, "cray");
    std::fs::write(place.dir.join("probe.py"), PROBE).unwrap();
    let args = [
        "launch",
        "--exp-name",
        "cray",
        "-n",
        "2",
        "--setup",
        SETUP_PROBE,
        "--command",
        "python probe.py",
    ];
    let job = place.submit(lab, &in_image(lab, &image), &args);
    assert_probed_inside(&job);
    assert_clean(&job);
}

#[test]
fn a_per_node_run_in_an_image_runs_every_rank_inside_it() {
    let Some((lab, _turn, image)) = lab_with_image() else {
        return;
    };
    let place = Place::new(lab, "cpernode");
    let args = [
        "launch",
        "--exp-name",
        "cpernode",
        "--per-node",
        "-n",
        "2",
        "--command",
        "echo rank=$RAYSLURM_NODE_RANK $(cat /etc/rayslurm-image-marker) in=$(pwd)",
    ];
    let job = place.submit(lab, &in_image(lab, &image), &args);
    let dir = &place.dir;
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    for (rank, node) in nodes.iter().enumerate() {
        let line = format!("[{rank} {node}] rank={rank} {MARKER} in={}", dir.display());
        assert!(log.contains(&line), "{line} in:\n{log}");
    }
    assert_clean(&job);
}

#[test]
fn an_image_that_cannot_start_fails_the_run_at_start_up_with_the_runtimes_words() {
    let Some((lab, _turn, _image)) = lab_with_image() else {
        return;
    };
    let place = Place::new(lab, "cmissing");
    // A directory that is no image (an image path that does not exist on the login node is
    // refused by `launch` before anything is submitted: tests/it/containers/cli.rs).
    let missing = lab.workdir("not-an-image");
    let args = [
        "launch",
        "--exp-name",
        "cmissing",
        "-n",
        "2",
        "--command",
        "echo should-not-run",
    ];
    let job = place.submit(lab, &in_image(lab, &missing), &args);
    let log = assert_image_failed_at_start_up(&job, &missing, "charliecloud");
    // Charliecloud's own words.
    assert!(log.contains("ch-run"), "{log}");
    assert!(log.contains("can't bind"), "{log}");
    assert_clean(&job);
}

#[test]
fn a_cluster_in_an_image_runs_its_exec_jobs_inside_it() {
    let Some((lab, _turn, image)) = lab_with_image() else {
        return;
    };
    let place = Place::new(lab, "ccluster");
    let name = format!("cimage{}", std::process::id());
    let cluster = place.submit(lab, &in_image(lab, &image), &["up", &name, "-n", "1"]);
    let (code, stdout, stderr) = place.rs(&[
        "exec",
        &name,
        "--command",
        "echo job $(cat /etc/rayslurm-image-marker)",
    ]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("job {MARKER}")), "{stdout}");
    let (code, _, stderr) = place.rs(&["down", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(60));
    assert_clean(&cluster);
}

/// A run in an image whose bootstrap is SIGKILLed: the head's watchdog (on the node, outside the
/// image) stops Ray's processes and the command inside the image, on every node, within 15 s.
#[test]
fn a_killed_bootstrap_of_a_run_in_an_image_leaves_nothing() {
    let Some((lab, _turn, image)) = lab_with_image() else {
        return;
    };
    let place = Place::new(lab, "ckilled");
    let sleep = "sleep 4321.75";
    let command = format!("echo command-started; {sleep}");
    let args = [
        "launch",
        "--exp-name",
        "ckilled",
        "-n",
        "2",
        "--command",
        &command,
    ];
    let job = place.submit(lab, &in_image(lab, &image), &args);
    job.wait_for_log("command-started", Duration::from_secs(300));
    let state = job.log.with_extension("state.json");
    let state = state.to_string_lossy();
    let watchdogs = processes_with(&["--watchdog", &state]);
    let head: Vec<u32> = processes_with(&["bootstrap", &state])
        .into_iter()
        .filter(|pid| !watchdogs.contains(pid))
        .collect();
    assert_eq!(head.len(), 1, "the head's bootstrap: {head:?}");
    assert!(!leftovers(&job.id).is_empty(), "Ray runs in the image");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(head[0] as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let killed_at = Instant::now();
    loop {
        let left = (leftovers(&job.id), processes_with(&[sleep]));
        if left.0.is_empty() && left.1.is_empty() {
            break;
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(15),
            "15 s after the bootstrap was killed, still there: {left:?}\n{}",
            job.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(job.state()["ending"], "killed", "{}", job.log_text());
    job.wait(Duration::from_secs(60));
    assert_clean(&job);
}
