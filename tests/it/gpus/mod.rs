//! GPU names as the site spells them (docs/gpus.md): `--num-gpus TYPE:N` and a task file's
//! `accelerators` looked up among the site's GRES types with one `sinfo` call, and `rayslurm
//! gpus`. The CLI tests here fake `sinfo` only for what the lab cannot do (a site that cannot
//! be asked, a fake site whose refusal is checked to the letter); `e2e_gpus.rs` runs the names
//! against the lab's typed GPUs (tests/cluster/cluster.sh: a100_80gb and l4 on node1-2, h100
//! on node3-4, GPUs without a type on node5-6, also the partition `labgpu`).

mod cli;
mod e2e_gpus;

use crate::harness::shim;

/// A directory for PATH whose `sinfo` and `sbatch` fail as they do where slurmctld cannot be
/// reached: the GPU names then go as written (with a warning), and a dry run's question to
/// Slurm gets no answer. The CLI tests of other features that dry-run a GPU type use it, so
/// that what they check does not depend on the lab's GPUs.
pub(crate) fn slurm_unreachable() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for client in ["sinfo", "sbatch"] {
        shim(
            dir.path(),
            client,
            &format!(
                "echo '{client}: error: Unable to contact slurm controller (connect failure)' >&2\nexit 1"
            ),
        );
    }
    dir
}
