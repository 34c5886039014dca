//! `--snapshot`: the workdir copied once, at submission, into the run's private directory, so
//! that a queued run (and each of its requeued attempts) runs the code as it was when it was
//! launched, whatever is edited after. In a git repository the copy holds what `git ls-files
//! -co --exclude-standard` names (tracked files, and untracked ones that are not ignored);
//! elsewhere every file. A `.skyignore` at the workdir's top takes the place of `.gitignore`,
//! as in SkyPilot: then every file is copied but those its patterns (and those of the
//! `.skyignore` files below it) name, whatever `.gitignore` says. A git workdir
//! ([`GitSource`]) is cloned first, and the clone (with its `.git`) is the copy. The run's
//! file mounts ([`FileMount`]) are copied with it. Symbolic links are kept as links. The files are listed and their size
//! checked against `--snapshot-max-size` before anything is written ([`Listing::of`]), so that
//! a refused snapshot leaves nothing behind and submits nothing.
//!
//! `--empty-workdir` (a task file without `workdir:`) is the snapshot of nothing: an empty
//! directory the nodes copy as they copy any snapshot, so that each starts in a new, empty,
//! private directory of its own, made and removed by the same code.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::error::{UsageError, show};
use crate::launch::file_mounts::{FileMount, MountCopies};
use crate::launch::git_workdir::GitSource;
use crate::launch::skyignore;
use crate::launch::validate;
use crate::sys::tree_copy::{all_files, copy_entry};

/// `--snapshot-max-size` when none is given.
pub(crate) const DEFAULT_MAX_SIZE: u64 = 1 << 30;

/// The snapshot a launch asks for: of which directory, and how large it may be.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SnapshotPlan {
    /// `None` for `--empty-workdir` (nothing is copied) and for a git workdir.
    pub(crate) workdir: Option<PathBuf>,
    pub(crate) max_size: u64,
    /// `--git-workdir`: the workdir is a clone of it, made at submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) git: Option<GitSource>,
    /// `--file-mount`: copied with the snapshot, placed on each node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) file_mounts: Vec<FileMount>,
    /// The file mounts alone (`up --file-mount`): the nodes place them, and make no workdir
    /// of their own; the (empty) snapshot only holds their copies' place.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) mounts_only: bool,
}

impl SnapshotPlan {
    /// `--snapshot`, `--workdir` and `--snapshot-max-size` as `launch` and `exec` take them:
    /// the snapshot asked for, if any. A relative workdir is taken from `cwd`.
    pub(crate) fn resolve(
        snapshot: bool,
        workdir: Option<&Path>,
        max_size: Option<&str>,
        cwd: &Path,
    ) -> Result<Option<Self>, UsageError> {
        if !snapshot && workdir.is_none() {
            return Ok(None);
        }
        let workdir = workdir.map_or_else(|| cwd.to_owned(), |w| cwd.join(w));
        ensure_workdir(&workdir)?;
        Ok(Some(Self {
            workdir: Some(workdir),
            max_size: Self::max_size(max_size)?,
            ..Self::default()
        }))
    }

    /// `--snapshot-max-size`, or the default.
    pub(crate) fn max_size(given: Option<&str>) -> Result<u64, UsageError> {
        given.map_or(Ok(DEFAULT_MAX_SIZE), |size| {
            validate::memory_bytes("--snapshot-max-size", size)
        })
    }
}

/// `dir` is a directory to take a snapshot of: a usage error naming `--workdir` otherwise.
fn ensure_workdir(dir: &Path) -> Result<(), UsageError> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "--workdir {} is not a directory",
        show(&dir.display().to_string())
    ))
    .hint("give the directory the run should get a copy of (by default the current one)"))
}

/// What the run's record says of its snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SnapshotInfo {
    /// The copy, in the run's private directory.
    pub(crate) path: PathBuf,
    /// The directory it was taken from.
    pub(crate) workdir: PathBuf,
    /// `git rev-parse HEAD` in a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) commit: Option<String>,
    /// Whether the files differed from the commit (`git status --porcelain` said anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dirty: Option<bool>,
    pub(crate) files: usize,
    pub(crate) bytes: u64,
}

/// The files of a workdir that go into its snapshot, and their size.
#[derive(Debug)]
pub(crate) struct Listing {
    /// `None` for the empty snapshot (`--empty-workdir`).
    workdir: Option<PathBuf>,
    /// A git workdir: the clone (removed when the listing goes), and what it was cloned from.
    clone: Option<(tempfile::TempDir, GitSource)>,
    /// The file mounts' files.
    mounts: MountCopies,
    /// Paths relative to the workdir.
    files: Vec<PathBuf>,
    bytes: u64,
    commit: Option<String>,
    dirty: Option<bool>,
    /// One file alone ([`Listing::of_file`]), copied with its owner's read and write only.
    one_file: bool,
}

impl Listing {
    /// The snapshot of one file (`submit`'s script): the file alone, its copy readable and
    /// writable by its owner alone (0600, in the 0700 snapshot directory).
    pub(crate) fn of_file(path: &Path) -> Result<Self, UsageError> {
        let shown = || show(&path.display().to_string());
        let meta = std::fs::metadata(path)
            .map_err(|e| UsageError::new(format!("cannot read {}: {e}", shown())))?;
        let (Some(dir), Some(name), true) = (path.parent(), path.file_name(), meta.is_file())
        else {
            return Err(UsageError::new(format!("{} is not a file", shown()))
                .hint("name the script to run, e.g. `train.py`"));
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        Ok(Self {
            workdir: Some(dir.to_owned()),
            clone: None,
            mounts: MountCopies::of(&[], DEFAULT_MAX_SIZE)?,
            files: vec![PathBuf::from(name)],
            bytes: meta.len(),
            commit: None,
            dirty: None,
            one_file: true,
        })
    }

    /// Lists what the snapshot of `plan` would hold; a usage error if the workdir is not a
    /// directory or the files are larger than the limit.
    pub(crate) fn of(plan: &SnapshotPlan) -> Result<Self, UsageError> {
        let mounts = MountCopies::of(&plan.file_mounts, plan.max_size)?;
        let clone = match &plan.git {
            Some(source) => {
                let tmp = tempfile::tempdir().map_err(|e| {
                    UsageError::new(format!("cannot make a directory to clone into: {e}"))
                })?;
                source.clone_into(&tmp.path().join("clone"))?;
                Some((tmp, source.clone()))
            }
            None => None,
        };
        let dir = match (&clone, &plan.workdir) {
            (Some((tmp, _)), _) => tmp.path().join("clone"),
            (None, Some(dir)) => dir.clone(),
            (None, None) => {
                return Ok(Self {
                    workdir: None,
                    clone: None,
                    mounts,
                    files: Vec::new(),
                    bytes: 0,
                    commit: None,
                    dirty: None,
                    one_file: false,
                });
            }
        };
        let dir = &dir;
        ensure_workdir(dir)?;
        let (files, commit, dirty) = if clone.is_some() {
            (listed(dir, all_files(dir))?, git_commit(dir), None)
        } else {
            match kept_files(dir)? {
                Kept::Git(files) => (files, git_commit(dir), git_dirty(dir)),
                Kept::All(files) => (files, None, None),
            }
        };
        let mut bytes = 0u64;
        let mut kept = Vec::new();
        for rel in files {
            // A tracked file deleted in the work tree is listed by git, but has nothing to copy.
            let Ok(meta) = std::fs::symlink_metadata(dir.join(&rel)) else {
                continue;
            };
            if meta.is_file() {
                bytes += meta.len();
            } else if !meta.file_type().is_symlink() {
                continue;
            }
            kept.push(rel);
        }
        if bytes > plan.max_size {
            return Err(UsageError::new(format!(
                "the snapshot of {} would be {:.1} MB ({} files), more than --snapshot-max-size {:.1} MB; nothing was submitted",
                show(&dir.display().to_string()),
                mb(bytes),
                kept.len(),
                mb(plan.max_size)
            ))
            .hint("add what the run does not need (data, checkpoints, venvs) to .gitignore, pass a smaller --workdir, or raise --snapshot-max-size"));
        }
        Ok(Self {
            workdir: Some(dir.clone()),
            clone,
            mounts,
            files: kept,
            bytes,
            commit,
            dirty,
            one_file: false,
        })
    }

    /// Copies the files into `dest` (made here, mode 0700): the snapshot the run gets, and
    /// what its record says of it (nothing for the empty one, which holds no code).
    pub(crate) fn write(&self, dest: &Path) -> Result<Option<SnapshotInfo>> {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dest)
            .with_context(|| format!("cannot create the snapshot `{}`", dest.display()))?;
        self.mounts.write(dest)?;
        let Some(workdir) = &self.workdir else {
            return Ok(None);
        };
        for rel in &self.files {
            copy_entry(&workdir.join(rel), &dest.join(rel))?;
            if self.one_file {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(dest.join(rel), std::fs::Permissions::from_mode(0o600))?;
            }
        }
        Ok(Some(SnapshotInfo {
            path: dest.to_owned(),
            workdir: match &self.clone {
                Some((_, source)) => PathBuf::from(source.shown()),
                None => workdir.clone(),
            },
            commit: self.commit.clone(),
            dirty: self.dirty,
            files: self.files.len(),
            bytes: self.bytes,
        }))
    }
}

impl SnapshotInfo {
    /// The line a submission prints of it: `snapshot of DIR: N files, X MB, git COMMIT`.
    pub(crate) fn summary(&self) -> String {
        format!(
            "snapshot of {}: {} files, {:.1} MB{}",
            self.workdir.display(),
            self.files,
            mb(self.bytes),
            match (&self.commit, self.dirty) {
                (Some(c), Some(true)) => format!(", git {} with changes", &c[..c.len().min(12)]),
                (Some(c), _) => format!(", git {}", &c[..c.len().min(12)]),
                _ => String::new(),
            }
        )
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// What a snapshot keeps of a directory, and by which rule.
pub(crate) enum Kept {
    /// What git keeps of a directory in a git work tree.
    Git(Vec<PathBuf>),
    /// Every file, or every file a `.skyignore` does not name.
    All(Vec<PathBuf>),
}

/// The files a snapshot of `dir` keeps: by its `.skyignore` when it has one at its top (as
/// SkyPilot, which then leaves `.gitignore` aside), else by git in a git work tree, else all.
pub(crate) fn kept_files(dir: &Path) -> Result<Kept, UsageError> {
    if dir.join(skyignore::SKYIGNORE).is_file() {
        return skyignore::kept(dir).map(Kept::All);
    }
    match git_files(dir) {
        Some(files) => Ok(Kept::Git(files)),
        None => listed(dir, all_files(dir)).map(Kept::All),
    }
}

/// A directory's listing, or a usage error naming it.
fn listed(dir: &Path, files: Result<Vec<PathBuf>>) -> Result<Vec<PathBuf>, UsageError> {
    files.map_err(|e| {
        UsageError::new(format!(
            "cannot list the files of {}: {e:#}",
            show(&dir.display().to_string())
        ))
    })
}

/// The files git would keep of `dir`, if it is in a git work tree.
fn git_files(dir: &Path) -> Option<Vec<PathBuf>> {
    let out = git(dir, &["ls-files", "-co", "--exclude-standard", "-z"])?;
    Some(nul_separated(&out))
}

/// `git ... -z`'s paths.
pub(crate) fn nul_separated(out: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    out.split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect()
}

fn git_commit(dir: &Path) -> Option<String> {
    let out = git(dir, &["rev-parse", "--verify", "-q", "HEAD"])?;
    Some(String::from_utf8_lossy(&out).trim().to_owned()).filter(|c| !c.is_empty())
}

fn git_dirty(dir: &Path) -> Option<bool> {
    git(dir, &["status", "--porcelain"]).map(|out| !out.is_empty())
}

/// `git -C dir ARGS`'s stdout, if git is there and succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(dir: &Path, max_size: u64) -> SnapshotPlan {
        SnapshotPlan {
            workdir: Some(dir.to_owned()),
            max_size,
            ..SnapshotPlan::default()
        }
    }

    #[test]
    fn outside_git_every_file_and_link_is_copied() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(src.path().join("a/b")).unwrap();
        std::fs::write(src.path().join("a/b/f.py"), "print(1)").unwrap();
        std::fs::write(src.path().join("top"), "x").unwrap();
        std::os::unix::fs::symlink("a/b/f.py", src.path().join("link")).unwrap();
        let listing = Listing::of(&plan(src.path(), 1 << 20)).unwrap();
        let dest = tempfile::tempdir().unwrap();
        let info = listing.write(&dest.path().join("snap")).unwrap().unwrap();
        assert_eq!((info.files, info.bytes, info.commit), (3, 9, None));
        let snap = dest.path().join("snap");
        assert_eq!(
            std::fs::read_to_string(snap.join("a/b/f.py")).unwrap(),
            "print(1)"
        );
        assert_eq!(
            std::fs::read_link(snap.join("link")).unwrap(),
            Path::new("a/b/f.py")
        );
    }

    #[test]
    fn the_empty_snapshot_is_a_private_empty_directory_and_no_record() {
        use std::os::unix::fs::PermissionsExt;
        let empty = SnapshotPlan::default();
        let dest = tempfile::tempdir().unwrap();
        let snap = dest.path().join("snap");
        let info = Listing::of(&empty).unwrap().write(&snap).unwrap();
        assert_eq!(info, None);
        assert_eq!(std::fs::read_dir(&snap).unwrap().count(), 0);
        let mode = std::fs::metadata(&snap).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_snapshot_over_the_limit_is_refused() {
        let src = tempfile::tempdir().unwrap();
        std::fs::write(src.path().join("big"), vec![0u8; 2048]).unwrap();
        let err = Listing::of(&plan(src.path(), 1024))
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than --snapshot-max-size"), "{err}");
    }

    #[test]
    fn in_git_ignored_files_stay_out() {
        let src = tempfile::tempdir().unwrap();
        let d = src.path();
        let run = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(d)
                .args(args)
                .output()
                .unwrap();
            assert!(ok.status.success(), "{ok:?}");
        };
        run(&["init", "-q"]);
        std::fs::write(d.join(".gitignore"), "data/\n").unwrap();
        std::fs::create_dir(d.join("data")).unwrap();
        std::fs::write(d.join("data/huge"), "x").unwrap();
        std::fs::write(d.join("train.py"), "y").unwrap();
        run(&["add", "train.py", ".gitignore"]);
        run(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "one",
        ]);
        std::fs::write(d.join("new.py"), "z").unwrap();
        let listing = Listing::of(&plan(d, 1 << 20)).unwrap();
        let mut files = listing.files.clone();
        files.sort();
        let names: Vec<PathBuf> = [".gitignore", "new.py", "train.py"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(files, names);
        assert_eq!(listing.dirty, Some(true));
        assert_eq!(listing.commit.as_deref().map(str::len), Some(40));
    }
}
