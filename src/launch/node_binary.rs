//! The rayslurm binary the compute nodes run.
//!
//! A job may wait in the queue for days; the user may upgrade or move rayslurm meanwhile. So
//! `launch` copies its own executable into the user's private tree (`bin/` of the state
//! directory, which the nodes see as they see the user's home), named by its SHA-256, and the
//! script runs that copy after checking the digest (see [`super::digest_check`]). No other user can
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

/// The private tree's folder of binary copies.
pub(crate) const BIN: &str = "bin";

/// Finds this build's copy in the private tree's `bin/`, copying it there if it is missing or
/// changed. With `dry_run` nothing is made or copied: only the name it would have is returned.
pub(crate) fn node_visible_copy(root: &PrivateDir, dry_run: bool) -> Result<NodeBinary> {
    let exe = std::env::current_exe().context("cannot find the running rayslurm executable")?;
    let bytes = std::fs::read(&exe).with_context(|| format!("cannot read `{}`", exe.display()))?;
    let sha256 = sha256_hex(&bytes);
    let target = root.path().join(BIN).join(name(&sha256));
    let copy = NodeBinary {
        path: target.clone(),
        sha256,
    };
    if dry_run {
        return Ok(copy);
    }
    let bin = root.dir(BIN).map_err(crate::state_dir::tree_error)?;
    if is_intact(&target, &copy.sha256) {
        // Fresh again: a prune beside this launch leaves it alone until the run is recorded.
        touch(&target);
        return Ok(copy);
    }
    let mut staged = Staged::new(bin.path(), "copy", 0o700)?;
    staged.write_all(&bytes)?;
    staged.replace(&target)?;
    Ok(copy)
}

/// How long a copy nothing names is kept after it was last used: a launch beside this one
/// may have placed or reused it and not yet recorded its run.
pub(crate) const PRUNE_GRACE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes the copies in the private tree's `bin/` that `keep` does not want (by file name)
/// and that were not used for `grace`: copies that no recorded run names any more. Returns
/// what was removed.
pub(crate) fn prune(
    root: &Path,
    keep: &dyn Fn(&str) -> bool,
    grace: std::time::Duration,
) -> Result<Vec<PathBuf>> {
    let dir = root.join(BIN);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", dir.display())),
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Only copies: never a half-written one (`.copy-*`) or anything else.
        if !name.starts_with("rayslurm-") || keep(&name) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        let idle = meta
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .unwrap_or_default();
        if meta.is_file() && idle >= grace && std::fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    Ok(removed)
}

/// `rayslurm-{version}-{first 16 hex digits of the digest}`.
fn name(sha256: &str) -> String {
    format!(
        "rayslurm-{}-{}",
        env!("CARGO_PKG_VERSION"),
        &sha256[..16.min(sha256.len())]
    )
}

/// Sets a copy's modification time to now (best effort: a copy not touched only loses its
/// grace period, see [`prune`]).
fn touch(path: &Path) {
    // Read-only: a copy a job is running cannot be opened for writing (`Text file busy`).
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

fn is_intact(path: &Path, sha256: &str) -> bool {
    sha256_file(path).is_ok_and(|d| d == sha256)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_copies_nothing_names_and_unused_for_the_grace_are_pruned() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join(BIN);
        std::fs::create_dir(&bin).unwrap();
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        for name in [
            "rayslurm-0.1.0-old",
            "rayslurm-0.1.0-named",
            ".copy-x",
            "notes",
        ] {
            let f = std::fs::File::create(bin.join(name)).unwrap();
            f.set_modified(long_ago).unwrap();
        }
        std::fs::write(bin.join("rayslurm-0.1.0-fresh"), "").unwrap();
        let keep = |name: &str| name == "rayslurm-0.1.0-named";
        let removed = prune(tmp.path(), &keep, PRUNE_GRACE).unwrap();
        assert_eq!(removed, [bin.join("rayslurm-0.1.0-old")]);
        let mut left: Vec<String> = std::fs::read_dir(&bin)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".copy-x",
                "notes",
                "rayslurm-0.1.0-fresh",
                "rayslurm-0.1.0-named"
            ]
        );
    }

    #[test]
    fn the_copy_is_named_by_its_digest_private_and_replaced_when_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = PrivateDir::open_root(&tmp.path().join("state")).unwrap();
        let dry = node_visible_copy(&root, true).unwrap();
        assert!(!dry.path.exists(), "a dry run copies nothing");
        assert!(!root.path().join(BIN).exists(), "nor makes `bin/`");
        let copy = node_visible_copy(&root, false).unwrap();
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
        let again = node_visible_copy(&root, false).unwrap();
        assert!(
            is_intact(&again.path, &again.sha256),
            "the changed copy is replaced"
        );
    }
}
