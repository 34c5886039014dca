//! `--num-gpus [TYPE:]N`: N GPUs on each node, of TYPE where given, in the site's directive
//! (docs/gpus.md), whatever `--tasks-per-node` is; and what Ray is told.

use super::{launch_in, normalise};
use crate::gpus::slurm_unreachable;

/// A dry run's script where Slurm cannot be asked for its GPU types, so that a type goes as
/// written (tests/it/gpus/ has the site's names).
fn dry_run(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let no_slurm = slurm_unreachable();
    let mut argv = vec!["--dry-run", "--exp-name", "exp"];
    argv.extend_from_slice(args);
    let ran = launch_in(dir.path(), &argv)
        .shims(no_slurm.path())
        .expect_status(0)
        .run();
    normalise(&ran.stdout, dir.path())
}

/// The script's `#SBATCH` GPU line for `args` (a dry run), or `None`.
fn gpu_line(args: &[&str]) -> Option<String> {
    let mut argv = vec!["--command", "true"];
    argv.extend_from_slice(args);
    let script = dry_run(&argv);
    let lines: Vec<&str> = script
        .lines()
        .filter(|l| l.starts_with("#SBATCH --gpus") || l.starts_with("#SBATCH --gres"))
        .collect();
    assert!(lines.len() <= 1, "{lines:?}");
    lines.first().map(|l| (*l).to_owned())
}

#[test]
fn num_gpus_is_per_node_whatever_the_tasks_per_node() {
    // Was `--gpus-per-task=8`: 64 GPUs a node.
    assert_eq!(
        gpu_line(&["--per-node", "--tasks-per-node", "8", "--num-gpus", "8"]).as_deref(),
        Some("#SBATCH --gpus-per-task=1")
    );
    assert_eq!(
        gpu_line(&["--per-node", "--tasks-per-node", "3", "--num-gpus", "4"]).as_deref(),
        Some("#SBATCH --gpus-per-node=4")
    );
    assert_eq!(
        gpu_line(&[
            "--tasks-per-node",
            "8",
            "--num-gpus",
            "8",
            "--gpu-directive",
            "gres"
        ])
        .as_deref(),
        Some("#SBATCH --gres=gpu:8")
    );
    assert_eq!(gpu_line(&["--num-gpus", "0"]), None);
}

#[test]
fn num_gpus_takes_a_type_in_each_directive() {
    for (how, want) in [
        ("gpus-per-task", "#SBATCH --gpus-per-task=a100:4"),
        ("gpus-per-node", "#SBATCH --gpus-per-node=a100:4"),
        ("gres", "#SBATCH --gres=gpu:a100:4"),
    ] {
        assert_eq!(
            gpu_line(&["-n", "2", "--num-gpus", "a100:4", "--gpu-directive", how]).as_deref(),
            Some(want),
            "{how}"
        );
    }
}

#[test]
fn ray_is_told_the_count_per_node() {
    let script = dry_run(&[
        "--command",
        "true",
        "--num-gpus",
        "h100:8",
        "--tasks-per-node",
        "2",
    ]);
    assert!(script.contains("--requested-gpus 8 "), "{script}");
}
