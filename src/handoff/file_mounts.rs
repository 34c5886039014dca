//! A task file's `file_mounts` between the launcher and the nodes: at submission each local
//! source is copied into the run's private directory (`file_mounts/N`, beside its snapshot),
//! and a manifest there says where each copy goes on a node. A destination relative to the
//! workdir goes into the snapshot itself and needs no entry; one in the image is a bind mount
//! of the copy (`--container-mounts`); the others ([`Place::Home`], [`Place::NodeTmp`]) the
//! node's first task places from the manifest, as it makes its workdir; one anywhere else
//! ([`Place::Root`]) every program of the run is shown in a private view of the node's
//! filesystem (`rayslurm root-view`, [`super::root_view`]). A named storage (`--storage`) is
//! not a copy: its directory, kept on the shared filesystem, is linked or bound where it goes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The manifest's file name, in [`dir_beside`].
pub(crate) const MANIFEST: &str = "manifest.json";

/// Where a run's file-mount copies are kept: beside its snapshot.
pub(crate) fn dir_beside(snapshot: &Path) -> PathBuf {
    snapshot.with_file_name("file_mounts")
}

/// Where a copy goes on a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Place {
    /// Under the user's home on the node (`~/PATH`): PATH relative to `$HOME`.
    Home(PathBuf),
    /// Under the node's `/tmp`: the absolute path.
    NodeTmp(PathBuf),
    /// Inside the container image: a bind mount of the copy, nothing placed on the host.
    InImage(PathBuf),
    /// Anywhere else (`/sft`): bound there in the private view the run's programs run in,
    /// nothing placed on the node.
    Root(PathBuf),
}

/// One entry of the manifest: the copy (by its name in the directory) and where it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Placed {
    pub(crate) copy: String,
    pub(crate) place: Place,
    /// A named storage's directory, shown where it goes as it is (linked or bound), in place
    /// of a copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) storage: Option<PathBuf>,
}

/// One entry as a node reads it: what goes where, and whether it is a storage, kept as it is,
/// rather than a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mounted {
    pub(crate) from: PathBuf,
    pub(crate) place: Place,
    pub(crate) storage: bool,
}

/// Reads the manifest beside `snapshot`: nothing when the run has no file mounts to place.
pub(crate) fn read_beside(snapshot: &Path) -> Result<Vec<Mounted>, String> {
    let dir = dir_beside(snapshot);
    let path = dir.join(MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read `{}`: {e}", path.display())),
    };
    let entries: Vec<Placed> = serde_json::from_str(&text)
        .map_err(|e| format!("`{}` is not a file-mount manifest: {e}", path.display()))?;
    Ok(entries
        .into_iter()
        .map(|p| Mounted {
            storage: p.storage.is_some(),
            from: p.storage.unwrap_or_else(|| dir.join(p.copy)),
            place: p.place,
        })
        .collect())
}

/// The empty directory, beside the copies, that a private view of the node's filesystem is
/// built on (see [`Place::Root`]).
pub(crate) fn view_base(snapshot: &Path) -> PathBuf {
    dir_beside(snapshot).join("view")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_is_read_beside_the_snapshot_and_none_is_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let snapshot = tmp.path().join("snapshot");
        assert_eq!(read_beside(&snapshot).unwrap(), Vec::new());
        let dir = dir_beside(&snapshot);
        std::fs::create_dir(&dir).unwrap();
        let entries = vec![
            Placed {
                copy: "0".into(),
                place: Place::Home("data/x".into()),
                storage: None,
            },
            Placed {
                copy: "1".into(),
                place: Place::Root("/output".into()),
                storage: Some("/shared/st/ckpt".into()),
            },
        ];
        std::fs::write(dir.join(MANIFEST), serde_json::to_string(&entries).unwrap()).unwrap();
        assert_eq!(
            read_beside(&snapshot).unwrap(),
            vec![
                Mounted {
                    from: dir.join("0"),
                    place: Place::Home("data/x".into()),
                    storage: false
                },
                Mounted {
                    from: "/shared/st/ckpt".into(),
                    place: Place::Root("/output".into()),
                    storage: true
                },
            ]
        );
    }
}
