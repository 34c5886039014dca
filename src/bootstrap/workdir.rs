//! `--snapshot` on a node: the run's snapshot of its workdir (made once, at submission, in the
//! run's private directory) copied to the node's own disk, where setup and command then run.
//! A `git clone` or `uv venv` in it does not collide with another node's, and every attempt
//! of the run starts from the same snapshot, whatever was edited after the launch. With
//! `--empty-workdir` the snapshot is empty, and each node's copy a new, empty directory.
//! The run's file mounts that go to the user's home or the node's `/tmp` are placed as the
//! copy is made (`bootstrap::file_mounts`); a cluster of `up` has file mounts and no copy.
//!
//! The copy is `/tmp/rs{uid}-{job}.{restart}-workdir`: always new (mkdir, mode 0700; when the
//! name is taken, a random suffix gives another, as for Ray's temp root), made by the node's
//! first task. In a per-node run the node's other tasks find the same copy, the one of that
//! name that is the user's own and private; every task holds a shared lock on it while it
//! works, and the last to let go removes it.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nix::fcntl::{Flock, FlockArg};

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::file_mounts;
use crate::bootstrap::node::say;
use crate::bootstrap::ray_node::{TempRoot, random_suffix};
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::sys::private_tree;
use crate::sys::tree_copy::copy_into;

/// A node's copy of the snapshot, which this process works in.
pub(crate) struct NodeWorkdir {
    pub(crate) path: PathBuf,
    /// This process's shared lock on the copy: held while it works in it.
    lock: Option<Flock<File>>,
}

impl NodeWorkdir {
    /// The first name tried for the node's copy in this attempt; a name taken (left by an
    /// earlier job, or planted) gets a random suffix instead, as Ray's temp root does.
    pub(crate) fn first_name(alloc: &Allocation) -> PathBuf {
        let uid = nix::unistd::getuid();
        PathBuf::from(format!(
            "/tmp/rs{uid}-{}.{}-workdir",
            alloc.job_id, alloc.restart_count
        ))
    }

    /// The node's part of a run's snapshot (`args.snapshot`), if it has one: its copy, made
    /// and entered; or, of a snapshot that holds only file mounts (`--file-mounts-only`: a
    /// cluster of `up`), those placed, and no copy (`None`): the node works where it started.
    pub(crate) fn prepare(
        args: &BootstrapArgs,
        alloc: &Allocation,
    ) -> Result<Option<Self>, String> {
        let Some(snapshot) = args.snapshot.as_deref() else {
            return Ok(None);
        };
        if !args.file_mounts_only {
            return Self::make(snapshot, alloc).map(Some);
        }
        let placed = file_mounts::place(snapshot)?;
        say(
            &alloc.node,
            format!("file mounts on {}: {placed} placed", alloc.node),
        );
        Ok(None)
    }

    /// Copies `snapshot` to a new private directory on the node's disk and moves this process
    /// into the copy.
    pub(crate) fn make(snapshot: &Path, alloc: &Allocation) -> Result<Self, String> {
        let t0 = Instant::now();
        let root = TempRoot::create_at(&Self::first_name(alloc), random_suffix)
            .map_err(|e| format!("cannot make the node's workdir: {e:#}"))?;
        let path = root.path;
        let files = copy_into(snapshot, &path).map_err(|e| {
            let _ = std::fs::remove_dir_all(&path);
            format!(
                "cannot copy the snapshot `{}` to the node's workdir: {e:#}",
                snapshot.display()
            )
        })?;
        let mounts = file_mounts::place(snapshot).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&path);
        })?;
        let made = Self::enter(path)?;
        // An empty snapshot is `--empty-workdir`'s (a task file without `workdir:`).
        let mut what = match files {
            0 => "new and empty".to_owned(),
            n => format!(
                "{n} files copied from the snapshot in {:.1} s",
                t0.elapsed().as_secs_f64()
            ),
        };
        if mounts > 0 {
            what.push_str(&format!("; {mounts} file mounts placed"));
        }
        say(
            &alloc.node,
            format!(
                "workdir on {}: {} ({what})",
                alloc.node,
                made.path.display()
            ),
        );
        Ok(made)
    }

    /// The copy the node's first task made, with this process moved into it: the one
    /// directory by the first name (or the first name and a suffix) that is the user's own
    /// and private; another user's planted there is passed over.
    pub(crate) fn join(snapshot: &Path, alloc: &Allocation) -> Result<Self, String> {
        file_mounts::view(snapshot)?;
        let first = Self::first_name(alloc);
        let prefix = first
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mine: Vec<PathBuf> = std::fs::read_dir("/tmp")
            .map_err(|e| format!("cannot read /tmp: {e}"))?
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .filter(|p| {
                std::fs::symlink_metadata(p).is_ok_and(|m| {
                    m.is_dir() && private_tree::is_mine(m.uid()) && m.mode() & 0o077 == 0
                })
            })
            .collect();
        match mine.as_slice() {
            [one] => Self::enter(one.clone()),
            [] => Err(format!(
                "the node's workdir (`{}`) is not there",
                first.display()
            )),
            _ => Err(format!(
                "more than one workdir of this attempt on the node: {mine:?}"
            )),
        }
    }

    fn enter(path: PathBuf) -> Result<Self, String> {
        let lock = File::open(&path)
            .ok()
            .and_then(|f| Flock::lock(f, FlockArg::LockSharedNonblock).ok());
        std::env::set_current_dir(&path)
            .map_err(|e| format!("cannot work in `{}`: {e}", path.display()))?;
        Ok(Self { path, lock })
    }

    /// Lets go of the copy (see [`Drop`]).
    pub(crate) fn leave(self) {
        drop(self);
    }
}

impl Drop for NodeWorkdir {
    /// Lets go of the copy; removes it unless another task on the node still works in it.
    fn drop(&mut self) {
        drop(self.lock.take());
        if std::env::current_dir().is_ok_and(|d| d == self.path) {
            let _ = std::env::set_current_dir("/");
        }
        let Ok(file) = File::open(&self.path) else {
            return;
        };
        if let Ok(last) = Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            let _ = std::fs::remove_dir_all(&self.path);
            drop(last);
        }
    }
}
