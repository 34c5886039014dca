//! Task files and the run's image: SkyPilot's `resources: image_id: docker:IMAGE`, as each
//! runtime takes it, and the `rayslurm:` section's `container_*` keys; refusals at their line.

use std::path::Path;

use crate::harness::Ran;
use crate::launch::{launch_in, normalise, state};

/// `launch TASK.yaml` in `dir` (which holds `img.sqsh`), with `args`.
fn launch_task(dir: &Path, task: &str, args: &[&str]) -> Ran {
    std::fs::write(dir.join("img.sqsh"), "").unwrap();
    std::fs::write(dir.join("task.yaml"), task).unwrap();
    let mut argv = vec!["task.yaml", "--dry-run"];
    argv.extend_from_slice(args);
    launch_in(dir, &argv).run()
}

/// SkyPilot's `resources: image_id: docker:IMAGE` is the run's image, as each runtime takes it
/// (refused for Charliecloud, which runs local images only); `rayslurm:` takes the four keys.
#[test]
fn task_files_give_the_image() {
    let task =
        "run: python train.py\nresources:\n  image_id: docker:nvcr.io/nvidia/pytorch:24.05-py3\n";
    for (runtime, written) in [
        ("pyxis", "'nvcr.io#nvidia/pytorch:24.05-py3'"),
        ("apptainer", "docker://nvcr.io/nvidia/pytorch:24.05-py3"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ran = launch_task(dir.path(), task, &["--container-runtime", runtime]);
        assert!(
            ran.stdout
                .contains(&format!("  --container-image {written} \\\n")),
            "{runtime}: {}{}",
            ran.stdout,
            ran.stderr
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let ran = launch_task(dir.path(), task, &["--container-runtime", "charliecloud"]);
    assert_eq!(ran.output.status.code(), Some(2), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("is a registry image, and charliecloud"),
        "{}",
        ran.stderr
    );
    let own = "run: python train.py\nrayslurm:\n  container_image: ./img.sqsh\n  container_mounts: [/data, /opt/venv:/venv:ro]\n  container_workdir: /workspace\n  container_runtime: apptainer\n";
    let dir = tempfile::tempdir().unwrap();
    let ran = launch_task(dir.path(), own, &[]);
    let s = normalise(&ran.stdout, dir.path());
    for line in [
        "  --container-image [DIR]/img.sqsh \\\n",
        "  --container-mounts /data:/data,/opt/venv:/venv:ro \\\n",
        "  --container-workdir /workspace \\\n",
        "  --container-runtime apptainer \\\n",
    ] {
        assert!(s.contains(line), "{line}\n{s}{}", ran.stderr);
    }
}

/// A task file's image that cannot be one is refused as `FILE:LINE: FIELD: why`.
#[test]
fn task_files_with_a_bad_image_are_refused_at_its_line() {
    for (task, want) in [
        (
            "run: x\nresources:\n  image_id: ami-0123456789\n",
            "task.yaml:3: resources.image_id: `ami-0123456789` is not `docker:IMAGE`",
        ),
        (
            "run: x\nresources:\n  image_id:\n    us-east-1: ami-1\n",
            "task.yaml:4: resources.image_id: holds a cloud's machine images, one a region, and no `docker` image",
        ),
        (
            "run: x\nimage_id: docker:ubuntu\n",
            "task.yaml:2: image_id: it goes under `resources:`",
        ),
        (
            "run: x\nrayslurm:\n  container_image: ./missing.sqsh\n",
            "task.yaml:3: rayslurm.container_image: --container-image `./missing.sqsh` is a path",
        ),
        (
            "run: x\nrayslurm:\n  container_workdir: rel\n",
            "task.yaml:3: rayslurm.container_workdir: --container-workdir `rel` is not an absolute path",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ran = launch_task(dir.path(), task, &["--container-runtime", "pyxis"]);
        assert_eq!(ran.output.status.code(), Some(2), "{task}: {}", ran.stderr);
        assert!(ran.stderr.contains(want), "{task}: {}", ran.stderr);
        assert!(!state(dir.path()).exists(), "{task} wrote the state");
    }
}
