//! Copying a tree of files as a snapshot keeps it: files with their owner's permission bits,
//! symbolic links as links (never followed), directories made private (0700). The launcher
//! takes a workdir's snapshot with it, and every node copies the snapshot to its own disk.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Copies one file or symbolic link (as a link), making its parents.
pub(crate) fn copy_entry(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(parent)
            .with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    let meta = std::fs::symlink_metadata(from)
        .with_context(|| format!("cannot read `{}`", from.display()))?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(from)?;
        std::os::unix::fs::symlink(&target, to)
            .with_context(|| format!("cannot make the link `{}`", to.display()))?;
    } else {
        std::fs::copy(from, to).with_context(|| format!("cannot copy `{}`", from.display()))?;
        // Its owner's bits only: the copy lives in a private tree.
        let mode = meta.permissions().mode() & 0o700;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode | 0o600))?;
    }
    Ok(())
}

/// Every file and link under `dir`, relative to it (links not followed).
pub(crate) fn all_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let here = dir.join(&rel);
        for entry in
            std::fs::read_dir(&here).with_context(|| format!("cannot read `{}`", here.display()))?
        {
            let entry = entry?;
            let path = rel.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Copies the whole tree `from` into the directory `to`; how many files and links.
pub(crate) fn copy_into(from: &Path, to: &Path) -> Result<usize> {
    let files = all_files(from)?;
    for rel in &files {
        copy_entry(&from.join(rel), &to.join(rel))?;
    }
    Ok(files.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_copied_with_its_links_and_modes() {
        let src = tempfile::tempdir().unwrap();
        let s = src.path();
        std::fs::create_dir_all(s.join("d/e")).unwrap();
        std::fs::write(s.join("d/e/run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(s.join("d/e/run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("/nonexistent/target", s.join("dangling")).unwrap();
        let dest = tempfile::tempdir().unwrap();
        let to = dest.path().join("copy");
        std::fs::create_dir(&to).unwrap();
        assert_eq!(copy_into(s, &to).unwrap(), 2);
        let mode = std::fs::metadata(to.join("d/e/run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(
            std::fs::read_link(to.join("dangling")).unwrap(),
            Path::new("/nonexistent/target")
        );
    }
}
