//! `--storage DEST=NAME` (a task file's `file_mounts: {DEST: {name: NAME}}`, SkyPilot's bucket):
//! a directory of that name kept on the shared filesystem, in the state directory's
//! `storage/`, made at the first submission that names it and kept after the run, that every
//! node of the run sees at DEST as it is (a link under the home, `/tmp` or the workdir; a bind
//! in the image or in the private view of the node's filesystem elsewhere). What a run writes
//! there is there for the next run, as a bucket's objects are.

use std::path::{Path, PathBuf};

use crate::error::{UsageError, show};
use crate::launch::file_mounts::{FileMount, destination};

/// Where the storages are, in the state directory `state`.
pub(crate) fn root(state: &Path) -> PathBuf {
    state.join("storage")
}

/// `DEST=NAME` as `--storage` takes it, the storage kept under `root`.
pub(crate) fn parse(text: &str, root: &Path, in_image: bool) -> Result<FileMount, UsageError> {
    let bad = |why: String| {
        UsageError::new(format!("--storage {}: {why}", show(text))).hint(
            "write DEST=NAME, e.g. `--storage /checkpoints=ckpt` or `--storage ~/out=results`",
        )
    };
    let Some((dest, name)) = text.split_once('=') else {
        return Err(bad("there is no `=` between DEST and NAME".into()));
    };
    check_name(name).map_err(bad)?;
    let to = destination(dest, in_image).map_err(bad)?;
    Ok(FileMount {
        given: dest.to_owned(),
        source: root.join(name),
        to,
        storage: Some(name.to_owned()),
    })
}

/// A storage's name: a directory name of letters, digits, `.`, `_` and `-`, not starting with
/// `.` (SkyPilot's bucket names fit).
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let fits = !name.is_empty()
        && !name.starts_with('.')
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if fits {
        Ok(())
    } else {
        Err(format!(
            "the storage name `{name}` is not a name of letters, digits, `.`, `_` and `-` (not starting with `.`)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::file_mounts::Place;
    use crate::launch::file_mounts::MountTo;

    #[test]
    fn a_storage_is_a_named_directory_shown_at_its_destination() {
        let root = Path::new("/state/storage");
        let m = parse("/output=sky-ckpt.v1", root, false).unwrap();
        assert_eq!(m.source, Path::new("/state/storage/sky-ckpt.v1"));
        assert_eq!(m.to, MountTo::Node(Place::Root("/output".into())));
        assert_eq!(m.storage.as_deref(), Some("sky-ckpt.v1"));
        let m = parse("out=ckpt", root, false).unwrap();
        assert_eq!(m.to, MountTo::Workdir("out".into()));
        let err = |t: &str| parse(t, root, false).unwrap_err().message;
        assert!(err("/output").contains("no `=`"), "{}", err("/output"));
        for name in ["", "../x", "a/b", ".hidden", "a b"] {
            let e = err(&format!("/o={name}"));
            assert!(e.contains("is not a name"), "{name}: {e}");
        }
        assert!(err("/etc/x=a").contains("system directory"));
    }
}
