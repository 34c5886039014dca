//! A cluster's files directory: what `rsync-up` copies (as `ray rsync_up` copies to a cloud
//! cluster's nodes), `files/` in the cluster's private directory on the shared filesystem, so
//! every node sees it, and the cluster's jobs find it as `$RAYSLURM_CLUSTER_FILES`. A
//! destination is a relative path that stays inside it: `..`, an absolute path, and a path
//! through a link (one that could lead out of it) are refused, and so is a source link that
//! leads out of the source (its copy would lead out of the directory).

use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::{UsageError, show};
use crate::sys::tree_copy::{all_files, copy_entry};

/// The variable a cluster's jobs (`exec`, `submit`) find the files directory by.
pub(crate) const FILES_ENV: &str = "RAYSLURM_CLUSTER_FILES";

/// The cluster's files directory, in its private directory `run_dir`.
pub(crate) fn files_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("files")
}

/// What a copy placed: where, how many files, how many bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    pub(crate) path: PathBuf,
    pub(crate) files: usize,
    pub(crate) bytes: u64,
}

/// `dst` as a path inside the files directory: relative, without `..`; `.` or empty is the
/// directory itself.
pub(crate) fn destination(dst: &str) -> Result<PathBuf, UsageError> {
    let path = Path::new(dst);
    let mut inside = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => inside.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(UsageError::new(format!(
                    "DST {} leaves the cluster's files directory (`..`)",
                    show(dst)
                ))
                .hint("give a path inside it, e.g. `data/train.csv`"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(UsageError::new(format!(
                    "DST {} is absolute: it is taken inside the cluster's files directory",
                    show(dst)
                ))
                .hint("give a relative path, e.g. `data/` (jobs find it as $RAYSLURM_CLUSTER_FILES/data)"));
            }
        }
    }
    Ok(inside)
}

/// Copies `src` (a file or a directory, whose files go into `dst`) into the files directory of
/// `run_dir`, at `dst` (from [`destination`]); a file onto an existing directory, or onto a
/// `dst` ending in `/`, goes in it under its own name.
pub(crate) fn place(run_dir: &Path, src: &Path, dst: &Path, into_dir: bool) -> Result<Placed> {
    let root = files_dir(run_dir);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&root)
        .or_else(|e| if root.is_dir() { Ok(()) } else { Err(e) })
        .with_context(|| format!("cannot create `{}`", root.display()))?;
    let meta = std::fs::symlink_metadata(src).map_err(|e| {
        UsageError::new(format!(
            "cannot read SRC {}: {e}",
            show(&src.display().to_string())
        ))
    })?;
    let mut target = root.join(dst);
    no_link_on_the_way(&root, dst)?;
    if meta.is_dir() {
        let files = all_files(src)?;
        for rel in &files {
            leaves_the_source(src, rel)?;
        }
        let mut bytes = 0;
        for rel in &files {
            no_link_on_the_way(&root, &dst.join(rel))?;
            copy_over(&src.join(rel), &target.join(rel))?;
            bytes += std::fs::symlink_metadata(src.join(rel)).map_or(0, |m| m.len());
        }
        return Ok(Placed {
            path: target,
            files: files.len(),
            bytes,
        });
    }
    if meta.file_type().is_symlink() {
        return Err(UsageError::new(format!(
            "SRC {} is a link: give the file or directory it leads to",
            show(&src.display().to_string())
        ))
        .into());
    }
    if into_dir || dst.as_os_str().is_empty() || target.is_dir() {
        let name = src.file_name().context("SRC has no name")?;
        target = target.join(name);
        no_link_on_the_way(&root, target.strip_prefix(&root).unwrap_or(dst))?;
    }
    copy_over(src, &target)?;
    Ok(Placed {
        path: target,
        files: 1,
        bytes: meta.len(),
    })
}

/// `to` replaced by a copy of `from`.
fn copy_over(from: &Path, to: &Path) -> Result<()> {
    if std::fs::symlink_metadata(to).is_ok_and(|m| !m.is_dir()) {
        std::fs::remove_file(to).with_context(|| format!("cannot replace `{}`", to.display()))?;
    }
    copy_entry(from, to)
}

/// Every existing part of `rel` under `root` is a real directory (the last may be a file):
/// none is a link, which could lead out of the files directory.
fn no_link_on_the_way(root: &Path, rel: &Path) -> Result<(), UsageError> {
    let mut at = root.to_owned();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(UsageError::new(format!(
                    "`{}` in the cluster's files directory is a link: nothing is copied through one, which could lead out of it",
                    at.strip_prefix(root).unwrap_or(&at).display()
                ))
                .hint("give another DST"));
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// A link among the source's files that leads out of the source (absolute, or up past its
/// top) is refused: its copy would lead out of the files directory.
fn leaves_the_source(src: &Path, rel: &Path) -> Result<(), UsageError> {
    let path = src.join(rel);
    let Ok(target) = std::fs::read_link(&path) else {
        return Ok(());
    };
    let mut depth = rel.components().count() - 1;
    let mut escapes = target.is_absolute();
    for part in target.components() {
        match part {
            Component::ParentDir if depth == 0 => escapes = true,
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    if escapes {
        return Err(UsageError::new(format!(
            "{} is a link to `{}`, out of SRC: its copy would lead out of the cluster's files directory",
            show(&path.display().to_string()),
            target.display()
        ))
        .hint("copy what it leads to instead, or remove the link from SRC"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destination_stays_inside_the_files_directory() {
        assert_eq!(destination("data/a.csv").unwrap(), Path::new("data/a.csv"));
        assert_eq!(destination("./x/./y/").unwrap(), Path::new("x/y"));
        assert_eq!(destination(".").unwrap(), Path::new(""));
        for bad in ["../x", "a/../../b", "/etc/passwd", "a/.."] {
            assert!(destination(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn files_and_directories_are_copied_in_and_links_out_refused() {
        let run = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        std::fs::write(src.path().join("a.txt"), "a").unwrap();
        std::fs::create_dir(src.path().join("d")).unwrap();
        std::fs::write(src.path().join("d/b.txt"), "bb").unwrap();
        std::os::unix::fs::symlink("b.txt", src.path().join("d/in")).unwrap();
        let placed = place(run.path(), src.path(), Path::new("data"), false).unwrap();
        let files = run.path().join("files");
        assert_eq!((placed.path, placed.files), (files.join("data"), 3));
        assert_eq!(
            std::fs::read_to_string(files.join("data/d/b.txt")).unwrap(),
            "bb"
        );
        // A file onto a directory goes in it; again, it replaces the copy.
        let one = src.path().join("a.txt");
        let placed = place(run.path(), &one, Path::new("data"), false).unwrap();
        assert_eq!(placed.path, files.join("data/a.txt"));
        let placed = place(run.path(), &one, Path::new("c.txt"), false).unwrap();
        assert_eq!(placed.path, files.join("c.txt"));
        place(run.path(), &one, Path::new("c.txt"), false).unwrap();
        // A link out of the source, and a link on the way in the files directory.
        std::os::unix::fs::symlink("/etc", src.path().join("d/out")).unwrap();
        let e = place(run.path(), src.path(), Path::new("again"), false).unwrap_err();
        assert!(format!("{e:#}").contains("out of SRC"), "{e:#}");
        std::fs::remove_file(src.path().join("d/out")).unwrap();
        std::os::unix::fs::symlink("../../x", src.path().join("d/up")).unwrap();
        assert!(place(run.path(), src.path(), Path::new("again"), false).is_err());
        std::fs::remove_file(src.path().join("d/up")).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), files.join("planted")).unwrap();
        let e = place(run.path(), &one, Path::new("planted/x"), false).unwrap_err();
        assert!(format!("{e:#}").contains("is a link"), "{e:#}");
        assert!(
            std::fs::read_dir(elsewhere.path())
                .unwrap()
                .next()
                .is_none()
        );
    }
}
