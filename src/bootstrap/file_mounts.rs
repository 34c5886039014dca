//! A run's file mounts placed on a node: the node's first task, as it makes its workdir,
//! copies each one the manifest beside the snapshot names (`handoff::file_mounts`) to its
//! destination under the user's home or the node's `/tmp`, making the directories on the way.
//! Those in the image are bind mounts and need nothing here. A home on a shared filesystem
//! is written by every node at once: each file is copied to a new name beside its
//! destination and renamed onto it, so that a reader sees the old file or the whole new one,
//! and nodes that write the same file leave the same file.
//!
//! `/tmp` is everyone's: another user may have made the destination's first directory there
//! (open to him, or a link), to read what the run puts in it or to hand it files of his. That
//! directory is made private here, or must be the user's own, a directory no one else may
//! write; else the run fails naming it. A file directly in `/tmp` is written only as a new
//! file (`O_EXCL`, `O_NOFOLLOW`), never through a name another user holds.

use std::path::{Path, PathBuf};

use crate::bootstrap::root_view;
use crate::handoff::file_mounts::{Place, read_beside};
use crate::sys::private_tree::is_mine;
use crate::sys::tree_copy::{all_files, copy_entry};

/// Places the file mounts of the run whose snapshot is `snapshot`, and readies the private
/// view of the node those outside home and `/tmp` are shown in ([`view`]); how many were
/// placed.
pub(crate) fn place(snapshot: &Path) -> Result<usize, String> {
    let mounts = read_beside(snapshot)?;
    let mut placed = 0;
    for m in &mounts {
        let dest = match &m.place {
            Place::Home(rel) => home()?.join(rel),
            Place::NodeTmp(path) => path.clone(),
            Place::InImage(_) | Place::Root(_) => continue,
        };
        let in_tmp_itself = dest.parent() == Some(Path::new("/tmp"));
        if m.storage {
            if matches!(m.place, Place::NodeTmp(_)) && !in_tmp_itself {
                claim_in_tmp(&dest, &m.from)?;
            }
            link_storage(&m.from, &dest)?;
        } else {
            if matches!(m.place, Place::NodeTmp(_)) {
                claim_in_tmp(&dest, &m.from)?;
            }
            // A file directly in /tmp is written by `claim_in_tmp`.
            if !in_tmp_itself || m.from.is_dir() {
                place_tree(&m.from, &dest).map_err(|e| {
                    format!(
                        "cannot place the file mount `{}` at `{}`: {e:#}",
                        m.from.display(),
                        dest.display()
                    )
                })?;
            }
        }
        placed += 1;
    }
    root_view::init(snapshot, &mounts)?;
    Ok(placed)
}

/// Readies, for this process, the private view the run's file mounts outside home and `/tmp`
/// are shown in (a node's other tasks, which find the workdir made).
pub(crate) fn view(snapshot: &Path) -> Result<(), String> {
    root_view::init(snapshot, &read_beside(snapshot)?)
}

/// A named storage shown at `dest` (under the home or `/tmp`): a link to its directory,
/// made anew, or the user's own link there already, replaced. Anything else there is not
/// touched.
fn link_storage(storage: &Path, dest: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let link = || std::os::unix::fs::symlink(storage, dest);
    match std::fs::symlink_metadata(dest) {
        Err(_) => {
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
            }
        }
        Ok(meta) if meta.is_symlink() && is_mine(meta.uid()) => {
            if std::fs::read_link(dest).is_ok_and(|to| to == storage) {
                return Ok(());
            }
            std::fs::remove_file(dest)
                .map_err(|e| format!("cannot replace `{}`: {e}", dest.display()))?;
        }
        Ok(_) => {
            return Err(format!(
                "`{}` is there and is not a link of yours: the storage `{}` cannot be shown there; move it away or give the storage another destination",
                dest.display(),
                storage.display()
            ));
        }
    }
    link().map_err(|e| {
        format!(
            "cannot link `{}` to the storage `{}`: {e}",
            dest.display(),
            storage.display()
        )
    })
}

/// Readies `dest`, under `/tmp`, for this user's copy of `copy`: its first directory below
/// `/tmp` made (mode 0700) or found the user's own and closed to others; a file directly in
/// `/tmp` written here, as a new file, in place of one of the user's own.
fn claim_in_tmp(dest: &Path, copy: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    let Some(first) = dest
        .strip_prefix("/tmp")
        .ok()
        .and_then(|rel| rel.components().next())
    else {
        return Err(format!("`{}` is not under /tmp", dest.display()));
    };
    let top = Path::new("/tmp").join(first);
    let not_yours = |what: &str| {
        format!(
            "`{}` is there and {what}: another user may have made it; give the file mount another destination under /tmp (or one in the workdir or under ~/)",
            top.display()
        )
    };
    if top == dest && !copy.is_dir() {
        if let Ok(meta) = std::fs::symlink_metadata(dest) {
            if !meta.is_file() || !is_mine(meta.uid()) {
                return Err(not_yours("is not a file of yours"));
            }
            std::fs::remove_file(dest)
                .map_err(|e| format!("cannot replace `{}`: {e}", dest.display()))?;
        }
        let mut to = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(dest)
            .map_err(|e| format!("cannot create `{}`: {e}", dest.display()))?;
        let mut from = std::fs::File::open(copy)
            .map_err(|e| format!("cannot read `{}`: {e}", copy.display()))?;
        std::io::copy(&mut from, &mut to)
            .map_err(|e| format!("cannot write `{}`: {e}", dest.display()))?;
        return Ok(());
    }
    match std::fs::DirBuilder::new().mode(0o700).create(&top) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(&top)
                .map_err(|e| format!("cannot read `{}`: {e}", top.display()))?;
            if !meta.is_dir() {
                Err(not_yours("is not a directory"))
            } else if !is_mine(meta.uid()) {
                Err(not_yours(&format!("belongs to uid {}", meta.uid())))
            } else if meta.mode() & 0o022 != 0 {
                Err(not_yours(&format!(
                    "others may write in it (mode {:o})",
                    meta.mode() & 0o7777
                )))
            } else {
                Ok(())
            }
        }
        Err(e) => Err(format!("cannot create `{}`: {e}", top.display())),
    }
}

/// The user's home on this node.
fn home() -> Result<PathBuf, String> {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.dir)
        .ok_or_else(|| "the user's home is not known on this node (no $HOME)".to_owned())
}

/// Copies the file or tree `from` onto `dest`, each file by a rename.
fn place_tree(from: &Path, dest: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(from)?.is_dir() {
        std::fs::create_dir_all(dest)?;
        for rel in all_files(from)? {
            place_file(&from.join(&rel), &dest.join(&rel))?;
        }
        Ok(())
    } else {
        place_file(from, dest)
    }
}

/// Copies one file to a name of this process's beside `dest`, then renames it onto `dest`.
fn place_file(from: &Path, dest: &Path) -> anyhow::Result<()> {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let host = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dest.with_file_name(format!(".{name}.rs-{host}-{}", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    copy_entry(from, &temp)?;
    std::fs::rename(&temp, dest).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::file_mounts::{MANIFEST, Placed, dir_beside};

    #[test]
    fn mounts_are_placed_under_tmp_and_replace_what_was_there() {
        let run = tempfile::tempdir().unwrap();
        let snapshot = run.path().join("snapshot");
        let beside = dir_beside(&snapshot);
        std::fs::create_dir_all(beside.join("0/sub")).unwrap();
        std::fs::write(beside.join("0/sub/a"), "new").unwrap();
        std::fs::write(beside.join("1"), "file").unwrap();
        let out = tempfile::tempdir_in("/tmp").unwrap();
        let dir = out.path().join("x/d");
        let file = out.path().join("f");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a"), "old").unwrap();
        let manifest = vec![
            Placed {
                copy: "0".into(),
                place: Place::NodeTmp(dir.clone()),
                storage: None,
            },
            Placed {
                copy: "1".into(),
                place: Place::NodeTmp(file.clone()),
                storage: None,
            },
            Placed {
                copy: "2".into(),
                place: Place::InImage("/inputs".into()),
                storage: None,
            },
        ];
        std::fs::write(
            beside.join(MANIFEST),
            serde_json::to_string(&manifest).unwrap(),
        )
        .unwrap();
        assert_eq!(place(&snapshot), Ok(2));
        assert_eq!(std::fs::read_to_string(dir.join("sub/a")).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "file");
        // Nothing of this process's is left beside them.
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 2);
        assert_eq!(std::fs::read_dir(dir.join("sub")).unwrap().count(), 1);
        // A directory open to others is refused by name, and nothing is written in it.
        use std::os::unix::fs::PermissionsExt;
        let open = tempfile::tempdir_in("/tmp").unwrap();
        std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::write(
            beside.join(MANIFEST),
            serde_json::to_string(&[Placed {
                copy: "0".into(),
                place: Place::NodeTmp(open.path().join("d")),
                storage: None,
            }])
            .unwrap(),
        )
        .unwrap();
        let err = place(&snapshot).unwrap_err();
        assert!(err.contains("others may write in it (mode 777)"), "{err}");
        assert_eq!(std::fs::read_dir(open.path()).unwrap().count(), 0);
        // A run without file mounts places nothing.
        assert_eq!(place(&run.path().join("other/snapshot")), Ok(0));
    }
}
