//! End to end, on the real test cluster, with a real container runtime: Charliecloud (`ch-run`,
//! Debian's), the wrapping kind, and the lab's Debian 12 image (tests/cluster/images.sh), whose
//! marker file tells a program that ran inside it from one that did not. The lab's Ray venv is
//! mounted at its own path (`--container-mounts`); everything else of the run is the image's.
//!
//! Their own step of tests/run.sh (`RAYSLURM_TEST_CONTAINERS=1`, which also builds the image);
//! without it they skip, saying so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::e2e_clusters::{rs, up_nodes};
use crate::harness::{Lab, Turn, assert_clean, expand_nodes, lab, launch_in};

/// The marker file's text in the lab's image (images.sh's `MARKER_TEXT`).
const MARKER: &str = "rayslurm-test-image debian12";

/// The lab and the image, when the container tests are asked for.
fn lab_with_image(test: &str) -> Option<(&'static Lab, Turn, PathBuf)> {
    if std::env::var("RAYSLURM_TEST_CONTAINERS").as_deref() != Ok("1") {
        eprintln!(
            "SKIPPED {test}: the container tests run in their own step (RAYSLURM_TEST_CONTAINERS=1 bash tests/run.sh)"
        );
        return None;
    }
    let (lab, turn) = lab(test)?;
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

/// Every Ray node runs a task that reports its host and the marker it sees.
const PROBE: &str = r#"import os, socket, ray
ray.init()
marker = lambda: open("/etc/rayslurm-image-marker").read().strip()
print("driver", marker(), flush=True)
@ray.remote(num_cpus=0)
def where():
    return socket.gethostname(), marker()
ips = [n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]]
for host, seen in sorted(ray.get([where.options(resources={f"node:{ip}": 0.01}).remote() for ip in ips])):
    print("task", host, seen, flush=True)
print("tmpdir", os.environ.get("TMPDIR"), flush=True)
"#;

#[test]
fn a_ray_run_in_an_image_runs_its_setup_driver_and_tasks_inside_it_on_every_node() {
    let Some((lab, _turn, image)) = lab_with_image("a_ray_run_in_an_image_runs_inside_it") else {
        return;
    };
    let dir = lab.workdir("cray");
    std::fs::write(dir.join("probe.py"), PROBE).unwrap();
    let mut args = vec![
        "-n",
        "2",
        "--setup",
        "echo setup $(cat /etc/rayslurm-image-marker)",
        "--command",
        "python probe.py",
    ];
    let image_args = in_image(lab, &image);
    args.extend(image_args.iter().map(String::as_str));
    let job = launch_in(lab, &dir, "cray", &args);
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    assert_eq!(nodes.len(), 2, "{log}");
    assert!(log.contains(&format!("\ndriver {MARKER}\n")), "{log}");
    for node in &nodes {
        assert!(log.contains(&format!("task {node} {MARKER}")), "{log}");
        assert!(
            log.contains(&format!("[setup {node}] setup {MARKER}")),
            "{log}"
        );
    }
    // The run's temp root is the program's TMPDIR inside the image too.
    assert!(log.contains("tmpdir /tmp/rs"), "{log}");
    assert_clean(&job);
}

#[test]
fn a_per_node_run_in_an_image_runs_every_rank_inside_it() {
    let Some((lab, _turn, image)) = lab_with_image("a_per_node_run_in_an_image") else {
        return;
    };
    let dir = lab.workdir("cpernode");
    let mut args = vec![
        "--per-node",
        "-n",
        "2",
        "--command",
        "echo rank=$RAYSLURM_NODE_RANK $(cat /etc/rayslurm-image-marker) in=$(pwd)",
    ];
    let image_args = in_image(lab, &image);
    args.extend(image_args.iter().map(String::as_str));
    let job = launch_in(lab, &dir, "cpernode", &args);
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
    let Some((lab, _turn, image)) = lab_with_image("an_image_that_cannot_start") else {
        return;
    };
    let dir = lab.workdir("cmissing");
    let missing = image.with_file_name("no-such-image");
    let mut args = vec!["-n", "2", "--command", "echo should-not-run"];
    let image_args = in_image(lab, &missing);
    args.extend(image_args.iter().map(String::as_str));
    let job = launch_in(lab, &dir, "cmissing", &args);
    let (info, log) = job.expect_startup_failure(Duration::from_secs(120));
    let head = &expand_nodes(&info["NodeList"])[0];
    assert!(
        log.contains(&format!(
            "the image `{}` (charliecloud) cannot run on {head}: ",
            missing.display()
        )),
        "{log}"
    );
    // Charliecloud's own words.
    assert!(log.contains("can't stat"), "{log}");
    assert_clean(&job);
}

#[test]
fn a_cluster_in_an_image_runs_its_exec_jobs_inside_it() {
    let Some((lab, _turn, image)) = lab_with_image("a_cluster_in_an_image") else {
        return;
    };
    let dir = lab.workdir("ccluster");
    let name = format!("cimage{}", std::process::id());
    let image_args = in_image(lab, &image);
    let extra: Vec<&str> = image_args.iter().map(String::as_str).collect();
    let cluster = up_nodes(lab, &dir, &name, "1", &extra);
    let (code, stdout, stderr) = rs(
        &dir,
        &[
            "exec",
            &name,
            "--command",
            "echo job $(cat /etc/rayslurm-image-marker)",
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("job {MARKER}")), "{stdout}");
    let (code, _, stderr) = rs(&dir, &["down", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(60));
    assert_clean(&cluster);
}
