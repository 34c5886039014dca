//! End to end, in the lab's image with pyxis: a task file's `file_mounts` whose destinations
//! a bare node would refuse (`/inputs`, a file under `/etc`) are bind mounts of the copies
//! made at submission, seen inside the image on every node. The container tests' own step
//! (`RAYSLURM_TEST_CONTAINERS=1`), as `e2e_pyxis.rs`.

use std::time::Duration;

use super::e2e_charliecloud::lab_with_image;
use crate::harness::{assert_clean, expand_nodes, launch_in};

#[test]
fn file_mounts_anywhere_in_a_pyxis_image_are_bound_on_every_node() {
    let Some((lab, _turn, image)) = lab_with_image() else {
        return;
    };
    let image = image.with_extension("sqsh");
    let dir = lab.workdir("pmounts");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/a.csv"), "bound-dir").unwrap();
    std::fs::write(dir.join("cfg.json"), "bound-file").unwrap();
    std::fs::write(
        dir.join("task.yaml"),
        "num_nodes: 2\nfile_mounts:\n  /inputs: ./data\n  /etc/rstest-cfg.json: cfg.json\nrun: |\n  echo \"inimage $(cat /inputs/a.csv) $(cat /etc/rstest-cfg.json) $(cat /etc/rayslurm-image-marker)\"\n",
    )
    .unwrap();
    let job = launch_in(
        lab,
        &dir,
        "pmounts",
        &[
            "task.yaml",
            "--per-node",
            &format!("--container-image={}", image.display()),
            "--container-runtime=pyxis",
            &format!("--container-mounts={}", lab.venv.display()),
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    assert_eq!(nodes.len(), 2, "{log}");
    for (k, node) in nodes.iter().enumerate() {
        let want = format!(
            "[{k} {node}] inimage bound-dir bound-file {}",
            super::e2e_charliecloud::MARKER
        );
        assert!(log.lines().any(|l| l == want), "{want}\n{log}");
    }
    assert_clean(&job);
}
