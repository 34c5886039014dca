//! `--file-mount DEST=SRC` (a task file's `file_mounts`): a local file or directory copied at
//! submission, with the workdir's snapshot, and placed at DEST on every node. Where DEST can
//! be made decides how: relative, in the node's workdir (inside the snapshot itself); `~/...`,
//! under the user's home on the node; under `/tmp`, on the node's own disk; inside
//! `--container-image`, as a bind mount of the copy; anywhere else (`/inputs`, which a user
//! cannot create on a node) bound in a private view of the node's filesystem that the run's
//! programs run in (`rayslurm root-view`). The node's own system directories (`/usr`, `/etc`,
//! ...) are refused.

use std::path::{Component, Path, PathBuf};

use std::os::unix::fs::DirBuilderExt;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::error::{UsageError, show};
use crate::handoff::file_mounts::{MANIFEST, Place, Placed, dir_beside};
use crate::launch::snapshot::{Kept, SnapshotPlan, kept_files};
use crate::printer::Printer;
use crate::sys::tree_copy::copy_entry;

/// One file mount, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileMount {
    /// DEST as given.
    pub(crate) given: String,
    /// The local file or directory, absolute.
    pub(crate) source: PathBuf,
    pub(crate) to: MountTo,
    /// `--storage`: the named storage this is (`source` its directory), shown as it is rather
    /// than copied (`launch::storage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) storage: Option<String>,
}

/// Where a file mount goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum MountTo {
    /// Relative to the node's workdir: written into the snapshot.
    Workdir(PathBuf),
    /// Placed on each node, or bound into the image.
    Node(Place),
}

/// The ways out of a destination a run cannot have.
pub(crate) const WAYS_OUT: &str = "give a destination relative to the workdir (`data: ./data`), under your home (`~/data: ./data`), under /tmp, or a new directory such as `/data`";

/// The node's own directories, which a run's file mounts may not hide or add to.
const SYSTEM_DIRS: &[&str] = &[
    "bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "run", "sbin", "sys",
    "usr", "var",
];

impl FileMount {
    /// `DEST=SRC` as `--file-mount` takes it: SRC relative to `cwd` (`~/` your home), and
    /// DEST a place this run can make (see the module doc; `in_image`: with a container image).
    pub(crate) fn parse(text: &str, cwd: &Path, in_image: bool) -> Result<Self, UsageError> {
        let bad = |why: String| {
            UsageError::new(format!("--file-mount {}: {why}", show(text)))
                .hint("write DEST=SRC, e.g. `--file-mount data=./data` or `--file-mount ~/cfg.json=./cfg.json`")
        };
        let Some((dest, src)) = text.split_once('=') else {
            return Err(bad("there is no `=` between DEST and SRC".into()));
        };
        let to = destination(dest, in_image).map_err(bad)?;
        let source = cwd.join(home_expanded(src));
        if std::fs::symlink_metadata(&source).is_err() {
            return Err(bad(format!(
                "the source `{}` does not exist",
                source.display()
            )));
        }
        Ok(Self {
            given: dest.to_owned(),
            source,
            to,
            storage: None,
        })
    }

    /// Where the copy goes, as a dry run and the submission say it.
    pub(crate) fn describe(&self) -> String {
        let how = match &self.to {
            MountTo::Workdir(_) => "in each node's workdir",
            MountTo::Node(Place::Home(_)) => "under your home on each node",
            MountTo::Node(Place::NodeTmp(_)) => "on each node's own disk",
            MountTo::Node(Place::InImage(_)) => "bound into the container image",
            MountTo::Node(Place::Root(_)) => {
                "shown on each node in a private view of its filesystem (a user namespace), to the run's programs only"
            }
        };
        match &self.storage {
            Some(name) => format!(
                "file_mounts: storage `{name}` ({}, kept after the run), at `{}` {how}",
                self.source.display(),
                self.given
            ),
            None => format!(
                "file_mounts: {} copied now, to `{}` {how}",
                self.source.display(),
                self.given
            ),
        }
    }
}

/// The files of a run's file mounts, listed (and their size checked) before anything is
/// written.
#[derive(Debug, Default)]
pub(crate) struct MountCopies {
    /// Each mount, by its index (the name of its copy), with the files of a directory source
    /// (relative to it) or `None` for a file.
    mounts: Vec<(usize, FileMount, Option<Vec<PathBuf>>)>,
}

impl MountCopies {
    /// Lists the sources' files: a directory's as a workdir's are (`.skyignore`, else
    /// `.gitignore` in a git work tree); refused over `max_size` in all.
    pub(crate) fn of(mounts: &[FileMount], max_size: u64) -> Result<Self, UsageError> {
        let mut listed = Vec::new();
        let mut bytes = 0u64;
        for (i, mount) in mounts.iter().enumerate() {
            if mount.storage.is_some() {
                // Not copied: shown as it is.
                listed.push((i, mount.clone(), None));
                continue;
            }
            let meta = std::fs::metadata(&mount.source).map_err(|e| {
                UsageError::new(format!(
                    "file_mounts: cannot read the source `{}`: {e}",
                    mount.source.display()
                ))
            })?;
            let files = if meta.is_dir() {
                let (Kept::Git(files) | Kept::All(files)) = kept_files(&mount.source)?;
                for f in &files {
                    bytes += std::fs::symlink_metadata(mount.source.join(f)).map_or(0, |m| m.len());
                }
                Some(files)
            } else {
                bytes += meta.len();
                None
            };
            listed.push((i, mount.clone(), files));
        }
        if bytes > max_size {
            return Err(UsageError::new(format!(
                "the file mounts would copy {bytes} bytes, more than --snapshot-max-size ({max_size} bytes); nothing was submitted"
            ))
            .hint("mount less (a .skyignore in a source directory leaves files out), read large data where it is on the shared filesystem, or raise --snapshot-max-size"));
        }
        Ok(Self { mounts: listed })
    }

    /// Writes each copy: into the snapshot `snapshot` for the workdir's, beside it for the
    /// others, with the manifest the nodes place them by.
    pub(crate) fn write(&self, snapshot: &Path) -> Result<()> {
        let beside = dir_beside(snapshot);
        let mut manifest = Vec::new();
        for (i, mount, files) in &self.mounts {
            if mount.storage.is_some() {
                private_dir(&mount.source)?;
                match &mount.to {
                    MountTo::Workdir(rel) => link_in(snapshot, rel, &mount.source)?,
                    MountTo::Node(place) => manifest.push(Placed {
                        copy: i.to_string(),
                        place: place.clone(),
                        storage: Some(mount.source.clone()),
                    }),
                }
                continue;
            }
            let base = match &mount.to {
                MountTo::Workdir(rel) => snapshot.join(rel),
                MountTo::Node(place) => {
                    manifest.push(Placed {
                        copy: i.to_string(),
                        place: place.clone(),
                        storage: None,
                    });
                    beside.join(i.to_string())
                }
            };
            match files {
                None => copy_entry(&mount.source, &base)?,
                Some(files) => {
                    private_dir(&base)?;
                    for f in files {
                        copy_entry(&mount.source.join(f), &base.join(f))?;
                    }
                }
            }
        }
        if !manifest.is_empty() {
            private_dir(&beside)?;
            std::fs::write(beside.join(MANIFEST), serde_json::to_vec(&manifest)?)
                .with_context(|| format!("cannot write `{}`", beside.display()))?;
        }
        Ok(())
    }
}

/// Says what the submission copies where: the git workdir's clone and each file mount (a dry
/// run too: it lists and clones, and writes nothing).
pub(crate) fn announce(plan: &SnapshotPlan, printer: &Printer) {
    if let Some(git) = &plan.git {
        printer.info(&format!(
            "workdir: {} cloned now, copied to each node's workdir",
            git.shown()
        ));
    }
    for mount in &plan.file_mounts {
        printer.info(&mount.describe());
    }
}

/// A link at `rel` in the snapshot to the storage `dir`: each node's copy of the workdir has it.
fn link_in(snapshot: &Path, rel: &Path, dir: &Path) -> Result<()> {
    let at = snapshot.join(rel);
    if let Some(parent) = at.parent() {
        private_dir(parent)?;
    }
    std::os::unix::fs::symlink(dir, &at)
        .with_context(|| format!("cannot link `{}` to `{}`", at.display(), dir.display()))
}

fn private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)
        .with_context(|| format!("cannot create `{}`", dir.display()))
}

/// The bind mounts of the mounts that go into the image: each copy (beside `snapshot`) at
/// its destination.
pub(crate) fn image_binds(mounts: &[FileMount], snapshot: &Path) -> Vec<crate::containers::Mount> {
    mounts
        .iter()
        .enumerate()
        .filter_map(|(i, m)| match &m.to {
            MountTo::Node(Place::InImage(dst)) => Some(crate::containers::Mount {
                src: match m.storage {
                    Some(_) => m.source.clone(),
                    None => dir_beside(snapshot).join(i.to_string()),
                },
                dst: dst.clone(),
                read_only: false,
            }),
            _ => None,
        })
        .collect()
}

/// Where DEST goes on a node, or why it cannot be made there.
pub(crate) fn destination(dest: &str, in_image: bool) -> Result<MountTo, String> {
    if dest.is_empty() || dest.ends_with('/') && dest != "/" {
        return Err(format!(
            "the destination `{dest}` must name a file or directory, without a trailing `/`"
        ));
    }
    let path = Path::new(dest);
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!("the destination `{dest}` goes up with `..`"));
    }
    if let Some(rest) = dest.strip_prefix("~/") {
        return Ok(MountTo::Node(Place::Home(PathBuf::from(rest))));
    }
    if dest.starts_with('~') {
        return Err(format!(
            "the destination `{dest}`: only `~/PATH` (your own home) is expanded"
        ));
    }
    if !path.is_absolute() {
        return Ok(MountTo::Workdir(path.to_owned()));
    }
    if in_image {
        return Ok(MountTo::Node(Place::InImage(path.to_owned())));
    }
    if path.starts_with("/tmp") && path != Path::new("/tmp") {
        return Ok(MountTo::Node(Place::NodeTmp(path.to_owned())));
    }
    let top = path.components().nth(1);
    match top {
        Some(Component::Normal(top)) if !SYSTEM_DIRS.iter().any(|d| top == *d) && top != "tmp" => {
            Ok(MountTo::Node(Place::Root(path.to_owned())))
        }
        _ => Err(format!(
            "`{dest}` is the node's own system directory (or in one): a run does not hide or add to it; {WAYS_OUT}"
        )),
    }
}

/// Why the relative destination `dest` has no place on a cluster's nodes (`up`), which make no
/// workdir of their own, and what to write instead.
pub(crate) fn no_workdir_on_a_cluster(dest: &str) -> String {
    format!(
        "a cluster's nodes have no workdir for the relative destination `{dest}`: write `~/{dest}` (under your home on each node), `/tmp/{dest}` or a new directory such as `/{dest}`"
    )
}

/// `~` and `~/...` as a shell (and SkyPilot) reads them: under your home directory.
pub(crate) fn home_expanded(path: &str) -> PathBuf {
    let home = || std::env::home_dir().unwrap_or_default();
    match path.strip_prefix('~') {
        Some("") => home(),
        Some(rest) if rest.starts_with('/') => home().join(&rest[1..]),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::storage;

    #[test]
    fn a_destination_goes_where_the_run_can_make_it() {
        let to = |d: &str, image: bool| destination(d, image);
        assert_eq!(to("data/x", false), Ok(MountTo::Workdir("data/x".into())));
        assert_eq!(
            to("~/cfg/a.json", false),
            Ok(MountTo::Node(Place::Home("cfg/a.json".into())))
        );
        assert_eq!(
            to("/tmp/in", false),
            Ok(MountTo::Node(Place::NodeTmp("/tmp/in".into())))
        );
        assert_eq!(
            to("/inputs", true),
            Ok(MountTo::Node(Place::InImage("/inputs".into())))
        );
        let refused = |d: &str, why: &str| {
            let e = to(d, false).expect_err(d);
            assert!(e.contains(why), "{d}: {e}");
        };
        assert_eq!(
            to("/inputs", false),
            Ok(MountTo::Node(Place::Root("/inputs".into())))
        );
        assert_eq!(
            to("/tmpfoo/x", false),
            Ok(MountTo::Node(Place::Root("/tmpfoo/x".into())))
        );
        assert_eq!(
            to("/mnt/data", false),
            Ok(MountTo::Node(Place::Root("/mnt/data".into())))
        );
        refused("/usr/local/x", "system directory");
        refused("/etc", "system directory");
        refused("/", "system directory");
        refused("/tmp", "system directory");
        refused("../up", "goes up");
        refused("data/", "trailing");
        refused("~bob/x", "only `~/PATH`");
    }

    /// A file and a directory (with a `.skyignore`d file) to the workdir, home, /tmp and the
    /// image: the workdir's land in the snapshot, the others beside it, named in the manifest.
    #[test]
    fn mounts_are_copied_into_the_snapshot_or_beside_it() {
        let src = tempfile::tempdir().unwrap();
        let s = src.path();
        std::fs::create_dir(s.join("d")).unwrap();
        std::fs::write(s.join("d/a"), "a").unwrap();
        std::fs::write(s.join("d/skip"), "s").unwrap();
        std::fs::write(s.join("d/.skyignore"), "skip\n").unwrap();
        std::fs::write(s.join("f"), "f").unwrap();
        let store = s.join("state/storage");
        let mounts: Vec<FileMount> = ["in/d=d", "~/f=f", "/tmp/x/d=d"]
            .iter()
            .map(|t| FileMount::parse(t, s, false).unwrap())
            .chain([FileMount::parse("/inputs=f", s, true).unwrap()])
            .chain(
                ["/output=ckpt", "out/ckpt=ckpt"]
                    .map(|t| storage::parse(t, &store, false).unwrap()),
            )
            .collect();
        let out = tempfile::tempdir().unwrap();
        let snap = out.path().join("snapshot");
        std::fs::create_dir(&snap).unwrap();
        MountCopies::of(&mounts, 1 << 20)
            .unwrap()
            .write(&snap)
            .unwrap();
        assert_eq!(std::fs::read_to_string(snap.join("in/d/a")).unwrap(), "a");
        assert!(!snap.join("in/d/skip").exists());
        let beside = dir_beside(&snap);
        assert_eq!(std::fs::read_to_string(beside.join("1")).unwrap(), "f");
        assert_eq!(std::fs::read_to_string(beside.join("2/a")).unwrap(), "a");
        let placed = crate::handoff::file_mounts::read_beside(&snap).unwrap();
        let placed: Vec<_> = placed
            .into_iter()
            .map(|m| (m.from, m.place, m.storage))
            .collect();
        assert_eq!(
            placed,
            vec![
                (beside.join("1"), Place::Home("f".into()), false),
                (beside.join("2"), Place::NodeTmp("/tmp/x/d".into()), false),
                (beside.join("3"), Place::InImage("/inputs".into()), false),
                (store.join("ckpt"), Place::Root("/output".into()), true),
            ]
        );
        // A storage is made (private) and linked, never copied.
        assert!(store.join("ckpt").is_dir());
        assert_eq!(
            std::fs::read_link(snap.join("out/ckpt")).unwrap(),
            store.join("ckpt")
        );
        assert!(!beside.join("4").exists());
        let binds = image_binds(&mounts, &snap);
        assert_eq!(binds.len(), 1);
        assert_eq!(
            binds[0].to_string(),
            format!("{}:/inputs", beside.join("3").display())
        );
        let err = MountCopies::of(&mounts, 2).unwrap_err().message;
        assert!(err.contains("more than --snapshot-max-size"), "{err}");
    }

    #[test]
    fn a_mount_needs_an_equals_and_a_source_that_exists() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "a").unwrap();
        let m = FileMount::parse("in/a.txt=a.txt", tmp.path(), false).unwrap();
        assert_eq!(m.source, tmp.path().join("a.txt"));
        assert_eq!(m.to, MountTo::Workdir("in/a.txt".into()));
        let err = |t: &str| FileMount::parse(t, tmp.path(), false).unwrap_err().message;
        assert!(err("a.txt").contains("no `=`"));
        assert!(err("x=missing").contains("does not exist"));
        assert!(err("/etc/a.txt=a.txt").contains("system directory"));
    }
}
