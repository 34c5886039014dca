//! The rayslurm binary the compute nodes run.
//!
//! A job may wait in the queue for days; the user may upgrade or move rayslurm meanwhile. So
//! `launch` copies its own executable into the user's private tree (`bin/` of the state
//! directory, which the nodes see as they see the user's home), named by its SHA-256, and the
//! script runs that copy after checking the digest (see [`super::prelude`]). No other user can
//! put a program there, and a copy that changed is never run.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::sys::digest::{sha256_file, sha256_hex};
use crate::sys::private_tree::PrivateDir;
use crate::sys::staged_file::Staged;

/// This build's copy for the nodes: where it is (or would be) and its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeBinary {
    pub(crate) path: PathBuf,
    pub(crate) sha256: String,
}

/// Finds this build's copy in `bin`, copying it there if it is missing or changed. With
/// `dry_run` nothing is copied: only the name it would have is returned.
pub(crate) fn node_visible_copy(bin: &PrivateDir, dry_run: bool) -> Result<NodeBinary> {
    let exe = std::env::current_exe().context("cannot find the running rayslurm executable")?;
    let bytes = std::fs::read(&exe).with_context(|| format!("cannot read `{}`", exe.display()))?;
    let sha256 = sha256_hex(&bytes);
    let target = bin.path().join(name(&sha256));
    let copy = NodeBinary {
        path: target.clone(),
        sha256,
    };
    if dry_run || is_intact(&target, &copy.sha256) {
        return Ok(copy);
    }
    let mut staged = Staged::new(bin.path(), "copy", 0o700)?;
    staged.write_all(&bytes)?;
    staged.replace(&target)?;
    Ok(copy)
}

/// `rayslurm-{version}-{first 16 hex digits of the digest}`.
fn name(sha256: &str) -> String {
    format!(
        "rayslurm-{}-{}",
        env!("CARGO_PKG_VERSION"),
        &sha256[..16.min(sha256.len())]
    )
}

fn is_intact(path: &Path, sha256: &str) -> bool {
    sha256_file(path).is_ok_and(|d| d == sha256)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_copy_is_named_by_its_digest_private_and_replaced_when_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = PrivateDir::open_root(&tmp.path().join("state"))
            .unwrap()
            .dir("bin")
            .unwrap();
        let dry = node_visible_copy(&bin, true).unwrap();
        assert!(!dry.path.exists(), "a dry run copies nothing");
        let copy = node_visible_copy(&bin, false).unwrap();
        assert_eq!(copy, dry);
        assert!(
            copy.path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with(&copy.sha256[..16])
        );
        let mode = std::fs::metadata(&copy.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::write(&copy.path, b"#!/bin/sh\necho planted\n").unwrap();
        let again = node_visible_copy(&bin, false).unwrap();
        assert!(
            is_intact(&again.path, &again.sha256),
            "the changed copy is replaced"
        );
    }
}
