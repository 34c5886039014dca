//! `rayslurm --version` names the build: a bug report or a node's failure says which binary ran.

use crate::harness::rayslurm;

#[test]
fn version_names_commit_and_target() {
    rayslurm(["--version"])
        .expect_status(0)
        .expect_stdout_matches(
            r"^rayslurm \d+\.\d+\.\d+\S* \(([0-9a-f]{7,}|unknown) [a-z0-9_]+-[a-z0-9_-]+\)\n$",
        )
        .run();
}
