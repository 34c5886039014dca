//! `--snapshot` on a node: the run's snapshot of its workdir (made once, at submission, in the
//! run's private directory) copied to the node's own disk, where setup and command then run.
//! A `git clone` or `uv venv` in it does not collide with another node's, and every attempt
//! of the run starts from the same snapshot, whatever was edited after the launch.
//!
//! The copy is `/tmp/rs{uid}-{job}.{restart}-workdir`: always new (mkdir, mode 0700; a name
//! already taken fails the run rather than trust what someone left there), made by the node's
//! first task. In a per-node run the node's other tasks work in the same copy once they have
//! checked it is the user's own and private; every task holds a shared lock on it while it
//! works, and the last to let go removes it.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nix::fcntl::{Flock, FlockArg};

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::node::say;
use crate::sys::private_tree;
use crate::sys::tree_copy::copy_tree;

/// A node's copy of the snapshot, which this process works in.
pub(crate) struct NodeWorkdir {
    pub(crate) path: PathBuf,
    /// This process's shared lock on the copy: held while it works in it.
    lock: Option<Flock<File>>,
}

impl NodeWorkdir {
    /// Where the node's copy goes for this attempt.
    pub(crate) fn path_for(alloc: &Allocation) -> PathBuf {
        let uid = nix::unistd::getuid();
        PathBuf::from(format!(
            "/tmp/rs{uid}-{}.{}-workdir",
            alloc.job_id, alloc.restart_count
        ))
    }

    /// Copies `snapshot` to the node's disk and moves this process into the copy.
    pub(crate) fn make(snapshot: &Path, alloc: &Allocation) -> Result<Self, String> {
        let t0 = Instant::now();
        let path = Self::path_for(alloc);
        let files = copy_tree(snapshot, &path).map_err(|e| {
            format!(
                "cannot copy the snapshot `{}` to the node's workdir: {e:#} (a name already taken is left from an earlier job or made by someone else: remove it)",
                snapshot.display()
            )
        })?;
        let made = Self::enter(path)?;
        say(
            &alloc.node,
            format!(
                "workdir on {}: {} ({files} files copied from the snapshot in {:.1} s)",
                alloc.node,
                made.path.display(),
                t0.elapsed().as_secs_f64()
            ),
        );
        Ok(made)
    }

    /// The copy the node's first task made, checked to be the user's own and private, with
    /// this process moved into it.
    pub(crate) fn join(alloc: &Allocation) -> Result<Self, String> {
        let path = Self::path_for(alloc);
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| format!("the node's workdir `{}` is not there: {e}", path.display()))?;
        if !meta.is_dir() || !private_tree::is_mine(meta.uid()) || meta.mode() & 0o077 != 0 {
            return Err(format!(
                "the node's workdir `{}` is not the user's own private directory",
                path.display()
            ));
        }
        Self::enter(path)
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
