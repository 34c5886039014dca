//! `rayslurm --version` names the build: a bug report or a node's failure says which binary ran.

use crate::harness::{rayslurm, text};

#[test]
fn version_names_commit_and_target() {
    let out = rayslurm(["--version"]).output();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let re = regex::Regex::new(
        r"^rayslurm \d+\.\d+\.\d+\S* \(([0-9a-f]{7,}|unknown) [a-z0-9_]+-[a-z0-9_-]+\)\n$",
    )
    .unwrap();
    assert!(re.is_match(&stdout), "{stdout}");
}
