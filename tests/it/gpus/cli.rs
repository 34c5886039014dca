//! What a launch does with a GPU name where the lab cannot show it: a site that cannot be
//! asked (the name goes as written, and a warning says so), a fraction of a GPU, and the exact
//! refusal of a name the site lacks, with the one `sinfo` call it takes.

use super::slurm_unreachable;
use crate::harness::{rayslurm, shim};
use crate::launch::{launch_in, state};

/// A site of one partition and two nodes, as `sinfo -h -N -O ...` prints it; each call is
/// noted in `sinfo.calls`.
fn fake_site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("sinfo.calls");
    shim(
        dir.path(),
        "sinfo",
        &format!(
            "echo \"$*\" >> '{}'\n\
             echo 'n1|gpu*|idle|gpu:a100_80gb:4(S:0),gpu:l4:2|gpu:a100_80gb:0(IDX:N/A),gpu:l4:0(IDX:N/A)|'\n\
             echo 'n2|gpu*|mixed|gpu:h200:8(S:0-1)|gpu:h200:8(IDX:0-7)|'",
            calls.display()
        ),
    );
    dir
}

#[test]
fn an_unknown_type_is_refused_listing_the_sites_types_after_one_sinfo_call() {
    let dir = tempfile::tempdir().unwrap();
    let site = fake_site();
    std::fs::write(
        dir.path().join("task.yaml"),
        "run: x\nresources:\n  accelerators: {V100: 2, T4: 1}\n",
    )
    .unwrap();
    launch_in(dir.path(), &["task.yaml"])
        .shims(site.path())
        .expect_status(2)
        .expect_stderr_contains(
            "error: task.yaml:3: resources.accelerators: none of the candidates can be had here: V100:2 (not on this site), T4:1 (not on this site); this site's GPU types are a100_80gb, h200, l4\n",
        )
        .expect_stderr_contains("`rayslurm gpus` lists them")
        .run();
    let calls = std::fs::read_to_string(site.path().join("sinfo.calls")).unwrap();
    assert_eq!(
        calls,
        "-h -N -O NodeHost:0|,Partition:0|,StateLong:0|,Gres:0|,GresUsed:0|\n"
    );
    assert!(!state(dir.path()).exists(), "wrote the state tree");
    // The command line's own: a usage error naming the flag.
    launch_in(
        dir.path(),
        &["--exp-name", "x", "--command", "true", "--num-gpus", "A100-40GB:1"],
    )
    .shims(site.path())
    .expect_status(2)
    .expect_stderr_contains(
        "error: --num-gpus `A100-40GB:1`: `A100-40GB` is not a GPU type of this site (its a100_80gb does not say the memory `A100-40GB` names): its types are a100_80gb, h200, l4",
    )
    .run();
}

#[test]
fn where_slurm_cannot_be_asked_the_name_goes_as_written_and_a_warning_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let no_slurm = slurm_unreachable();
    let ran = launch_in(
        dir.path(),
        &[
            "--dry-run",
            "--exp-name",
            "x",
            "--command",
            "true",
            "--num-gpus",
            "{H100:8,A100-80GB:4}",
        ],
    )
    .shims(no_slurm.path())
    .expect_status(0)
    .expect_stderr_contains(
        "warning: --num-gpus: Slurm could not be asked for the site's GPU types (`SLURM_TIME_FORMAT=standard sinfo -h -N -O",
    )
    .expect_stderr_contains(
        "Unable to contact slurm controller (connect failure)), so `H100:8` is asked as written\n",
    )
    .run();
    assert!(
        ran.stdout.contains("#SBATCH --gpus-per-task=H100:8\n"),
        "{}",
        ran.stdout
    );
    // `gpus` has nothing to show without Slurm: a failure that says so.
    rayslurm(["gpus"])
        .shims(no_slurm.path())
        .expect_status(1)
        .expect_stderr_contains("Unable to contact slurm controller")
        .expect_stderr_contains("hint: run on a Slurm login node")
        .run();
}

#[test]
fn a_fraction_of_a_gpu_is_refused_saying_what_to_ask_for() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("task.yaml"),
        "run: x\nresources:\n  accelerators: L4:0.5\n",
    )
    .unwrap();
    launch_in(dir.path(), &["task.yaml", "--dry-run"])
        .expect_status(2)
        .expect_stderr_contains("task.yaml:3: resources.accelerators: `L4:0.5` asks for a part of a GPU, which Slurm does not give (a job gets whole GPUs): ask for `L4:1` and share it inside the job (Ray: `@ray.remote(num_gpus=0.5)` on each task)")
        .run();
    launch_in(
        dir.path(),
        &[
            "--dry-run",
            "--exp-name",
            "x",
            "--command",
            "true",
            "--num-gpus",
            "h100:0.25",
        ],
    )
    .expect_status(2)
    .expect_stderr_contains("ask for `h100:1`")
    .run();
}

/// A partition of `gpu_partitions` goes into an `#SBATCH` line: one word, refused before Slurm
/// is asked.
#[test]
fn a_gpu_partition_that_is_not_one_word_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("site.toml");
    std::fs::write(
        &config,
        "[launch]\ngpu_partitions = { v100 = \"lab\\n#SBATCH --x\" }\n",
    )
    .unwrap();
    launch_in(
        dir.path(),
        &[
            "--dry-run",
            "--exp-name",
            "x",
            "--command",
            "true",
            "--num-gpus",
            "V100:1",
        ],
    )
    .env("RAYSLURM_CONFIG", &config)
    .expect_status(2)
    .expect_stderr_contains(
        "error: gpu_partitions.v100 `lab\\n#SBATCH --x` contains the control character",
    )
    .run();
}
