//! A private view of the node's filesystem, in which a run's programs find paths no user can
//! make on the node itself: a task file's `file_mounts: {/sft: ./sft}` or `/output` on a node
//! where only root may write in `/`. Nothing is made on the node: the process enters a mount
//! namespace of its own (in a user namespace of its own too, unless it is root, mapping the
//! user to itself and nothing else, so the user stays who they are and gains no rights over
//! anything) whose root is a tmpfs holding every entry of the node's `/`, each bound as it is,
//! and each destination with its source bound there. Where a destination is under a directory
//! the node has (`/mnt/data` with `/mnt` there), that directory is made anew in the tmpfs with
//! each of its entries bound, so that the destination can be added beside them. Every process
//! the program starts sees the same view; other processes on the node see the node as it is.
//!
//! The tmpfs is mounted on `base`, an empty directory of the user's own, for as long as the
//! process builds the view; after `pivot_root` the node's old root is let go of. A directory
//! made anew holds its entries as they were when the view was made: one that vanished while it
//! was made is left out, and a new entry directly in it (not in one of its subdirectories,
//! which are the node's own) is the view's alone.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, unshare};
use nix::unistd::{getgid, getuid, pivot_root};

/// What the view shows at `dst`: `src`, bound (a directory or a file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bind {
    pub(crate) src: PathBuf,
    pub(crate) dst: PathBuf,
}

/// Where the node's old root is put while the view is entered, in the new root.
const OLD_ROOT: &str = ".rayslurm-old-root";

/// Moves this process (which must have one thread: a namespace cannot be changed otherwise)
/// into a view of the node's filesystem that has `binds` too; `base` an empty directory of the
/// user's own. The working directory is kept.
pub(crate) fn enter(base: &Path, binds: &[Bind]) -> Result<(), String> {
    for b in binds {
        if !b.dst.is_absolute() || b.dst.components().any(|c| c == Component::ParentDir) {
            return Err(format!(
                "`{}` is not an absolute path without `..`",
                b.dst.display()
            ));
        }
    }
    let cwd = std::env::current_dir().ok();
    own_namespaces()?;
    let sys = |what: String| move |e: nix::Error| format!("{what}: {e}");
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(sys(
        "cannot make the node's mounts private to this view".into()
    ))?;
    mount(
        Some("tmpfs"),
        base,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=0755"),
    )
    .map_err(sys(format!("cannot mount a tmpfs on `{}`", base.display())))?;
    let rebuilt = rebuilt_dirs(binds.iter().map(|b| b.dst.as_path()), |p| {
        std::fs::symlink_metadata(p).is_ok()
    });
    fill(Path::new("/"), base, &rebuilt)?;
    for b in binds {
        let at = base.join(b.dst.strip_prefix("/").unwrap_or(&b.dst));
        mount_point(&at, b.src.is_dir())?;
        bind(&b.src, &at).map_err(|e| {
            format!(
                "cannot show `{}` at `{}`: {e}",
                b.src.display(),
                b.dst.display()
            )
        })?;
    }
    let old = base.join(OLD_ROOT);
    std::fs::create_dir(&old).map_err(|e| format!("cannot create `{}`: {e}", old.display()))?;
    pivot_root(base, &old).map_err(sys("cannot enter the view (pivot_root)".into()))?;
    std::env::set_current_dir("/").map_err(|e| format!("cannot enter the view: {e}"))?;
    let old = Path::new("/").join(OLD_ROOT);
    umount2(&old, MntFlags::MNT_DETACH).map_err(sys("cannot let go of the node's root".into()))?;
    let _ = std::fs::remove_dir(&old);
    // The directory the tmpfs was mounted on shows it again inside the view (its parent was
    // bound after): let go of that copy.
    let _ = umount2(base, MntFlags::MNT_DETACH);
    if let Some(cwd) = cwd {
        std::env::set_current_dir(&cwd)
            .map_err(|e| format!("`{}` is not in the view: {e}", cwd.display()))?;
    }
    Ok(())
}

/// A mount namespace of this process's own; for a user other than root, inside a user
/// namespace that maps the user and the user's group to themselves only.
fn own_namespaces() -> Result<(), String> {
    let (uid, gid) = (getuid(), getgid());
    if uid.is_root() {
        return unshare(CloneFlags::CLONE_NEWNS)
            .map_err(|e| format!("cannot make a mount namespace: {e}"));
    }
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|e| {
        format!(
            "this node does not let users make a user namespace ({e}; see /proc/sys/user/max_user_namespaces), which the view needs: give the file mount a destination in the workdir, under ~/ or /tmp, or run in a container image"
        )
    })?;
    for (file, text) in [
        ("/proc/self/setgroups", "deny".to_owned()),
        ("/proc/self/gid_map", format!("{gid} {gid} 1")),
        ("/proc/self/uid_map", format!("{uid} {uid} 1")),
    ] {
        std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))?;
    }
    Ok(())
}

/// The node's directories the view makes anew rather than binds whole: for each destination
/// that is not on the node, the deepest directory on its way that is, and every directory above
/// that (except `/`, which the view's tmpfs stands for).
fn rebuilt_dirs<'a>(
    dsts: impl Iterator<Item = &'a Path>,
    exists: impl Fn(&Path) -> bool,
) -> BTreeSet<PathBuf> {
    let mut rebuilt = BTreeSet::new();
    for dst in dsts {
        if exists(dst) {
            continue;
        }
        let mut deepest = PathBuf::from("/");
        for c in dst.components().skip(1) {
            let next = deepest.join(c);
            if !exists(&next) {
                break;
            }
            deepest = next;
        }
        rebuilt.extend(
            deepest
                .ancestors()
                .filter(|a| *a != Path::new("/"))
                .map(Path::to_owned),
        );
    }
    rebuilt
}

/// Fills `to` (in the tmpfs) with every entry of the node's `from`: a directory to rebuild
/// made and filled likewise, any other directory or file bound, a link made again.
fn fill(from: &Path, to: &Path, rebuilt: &BTreeSet<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read `{}`: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read `{}`: {e}", from.display()))?;
        let (path, at) = (entry.path(), to.join(entry.file_name()));
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() && rebuilt.contains(&path) {
            return Err(format!(
                "`{}` is a link on this node: nothing can be shown below it; give a destination under the directory it points to",
                path.display()
            ));
        }
        let made = if kind.is_symlink() {
            std::fs::read_link(&path)
                .and_then(|target| std::os::unix::fs::symlink(target, &at))
                .map_err(|e| e.to_string())
        } else if kind.is_dir() && rebuilt.contains(&path) {
            std::fs::create_dir(&at).map_err(|e| e.to_string())?;
            fill(&path, &at, rebuilt)?;
            Ok(())
        } else if kind.is_dir() || kind.is_file() {
            mount_point(&at, kind.is_dir())
                .and_then(|()| bind(&path, &at).map_err(|e| e.to_string()))
        } else {
            // A socket or device directly in a rebuilt directory: not shown.
            Ok(())
        };
        if let Err(e) = made {
            // Gone since the directory was read (another process's file in a busy directory):
            // not shown, as if read a moment later.
            if std::fs::symlink_metadata(&path).is_err() {
                let _ = std::fs::remove_dir(&at).or_else(|_| std::fs::remove_file(&at));
                continue;
            }
            return Err(format!(
                "cannot show the node's `{}` in the view: {e}",
                path.display()
            ));
        }
    }
    Ok(())
}

/// Makes `at` (a directory, else an empty file) and the directories above it.
fn mount_point(at: &Path, dir: bool) -> Result<(), String> {
    let made = if dir {
        std::fs::create_dir_all(at)
    } else {
        at.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::File::create(at).map(drop))
    };
    made.map_err(|e| format!("cannot create `{}`: {e}", at.display()))
}

fn bind(src: &Path, at: &Path) -> nix::Result<()> {
    mount(
        Some(src),
        at,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_directories_on_the_way_to_a_new_destination_are_rebuilt() {
        let node = ["/mnt", "/mnt/scratch", "/data", "/home", "/home/al"];
        let exists = |p: &Path| p == Path::new("/") || node.iter().any(|n| Path::new(n) == p);
        let rebuilt = |dsts: &[&str]| -> Vec<String> {
            rebuilt_dirs(dsts.iter().map(Path::new), exists)
                .into_iter()
                .map(|p| p.display().to_string())
                .collect()
        };
        // New at the top: the tmpfs root takes it, nothing rebuilt.
        assert!(rebuilt(&["/sft", "/output/x"]).is_empty());
        // There already: bound over, nothing rebuilt.
        assert!(rebuilt(&["/data", "/mnt/scratch"]).is_empty());
        // New under what is there: that directory and those above it.
        assert_eq!(rebuilt(&["/mnt/data"]), ["/mnt"]);
        assert_eq!(rebuilt(&["/home/al/ckpt/x"]), ["/home", "/home/al"]);
        assert_eq!(
            rebuilt(&["/mnt/data", "/home/al/c"]),
            ["/home", "/home/al", "/mnt"]
        );
    }
}
