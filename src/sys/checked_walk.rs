//! The walk from `/` to the private tree's root, one name at a time, as the kernel would walk
//! it but checking what it passes: every directory it enters is checked (by the caller's rule)
//! before anything in it is believed, so a symbolic link is read (`readlinkat`) only from a
//! directory that passed, that is one no one else can write. A link in a group's 2775 directory
//! is never followed: any member may swap it, so where it leads today says nothing about
//! tomorrow. The walk ends at the resolved path (links and `..` gone), which is what the launch
//! records and the job uses: a link changed later changes nothing of a run.
//!
//! `..` goes back to the directory the walk came from (the physical parent, as the kernel's
//! own walk does after a link), never above `/`; more than [`MAX_LINKS`] links is a loop.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, readlinkat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat, mkdirat};

use super::private_tree::{Insecure, TreeError};

/// Links followed in one walk before it is called a loop (Linux's own bound).
const MAX_LINKS: usize = 40;

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// Where a walk ended: the directory, held open, and its resolved path.
#[derive(Debug)]
pub(crate) struct Walked {
    pub(crate) fd: OwnedFd,
    pub(crate) path: PathBuf,
}

fn io(path: &Path) -> impl Fn(Errno) -> TreeError + '_ {
    move |errno| TreeError::Io {
        path: path.to_owned(),
        errno,
    }
}

/// The names of `path` still to walk: `..` kept, `.` and `/` dropped.
fn names(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_owned()),
        Component::ParentDir => Some(OsString::from("..")),
        _ => None,
    })
}

/// Walks the absolute `path` from `/`, checking `/` and every directory entered with `check`
/// before reading anything in it; with `make`, a missing directory is made (`mkdirat` 0700,
/// in a directory that passed). Returns the last directory, open, and its resolved path.
pub(crate) fn walk(
    path: &Path,
    make: bool,
    check: impl Fn(&Path, &FileStat) -> Result<(), Insecure>,
) -> Result<Walked, TreeError> {
    if !path.is_absolute() {
        return Err(io(path)(Errno::EINVAL));
    }
    let root = Path::new("/");
    let fd = nix::fcntl::open(root, DIR_FLAGS, Mode::empty()).map_err(io(root))?;
    check(root, &fstat(&fd).map_err(io(root))?)?;
    // The directories entered, `/` first: `..` pops one.
    let mut stack = vec![Walked {
        fd,
        path: root.to_owned(),
    }];
    let mut todo: VecDeque<OsString> = names(path).collect();
    let mut links = 0;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            if stack.len() > 1 {
                stack.pop();
            }
            continue;
        }
        let dir = stack.last().expect("`/` is never popped");
        let here = dir.path.join(&name);
        let st = match fstatat(&dir.fd, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Err(Errno::ENOENT) if make => {
                match mkdirat(&dir.fd, name.as_os_str(), Mode::from_bits_truncate(0o700)) {
                    Ok(()) | Err(Errno::EEXIST) => None,
                    Err(e) => return Err(io(&here)(e)),
                }
            }
            Err(e) => return Err(io(&here)(e)),
            Ok(st) => Some(st),
        };
        if st.is_some_and(|st| kind(&st) == SFlag::S_IFLNK) {
            // `dir` passed `check` when it was entered: no one else can have put this link
            // there or change it now.
            links += 1;
            if links > MAX_LINKS {
                return Err(io(&here)(Errno::ELOOP));
            }
            let target = PathBuf::from(readlinkat(&dir.fd, name.as_os_str()).map_err(io(&here))?);
            if target.is_absolute() {
                stack.truncate(1);
            }
            for (i, n) in names(&target).enumerate() {
                todo.insert(i, n);
            }
            continue;
        }
        // Not a link when looked at, and opened without following one: a name swapped in
        // between fails here (ELOOP) rather than being followed.
        let fd = openat(&dir.fd, name.as_os_str(), DIR_FLAGS, Mode::empty()).map_err(io(&here))?;
        check(&here, &fstat(&fd).map_err(io(&here))?)?;
        stack.push(Walked { fd, path: here });
    }
    Ok(stack.pop().expect("`/` at least"))
}

fn kind(st: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    /// The private tree's rule for the directories on the way (root's or the user's, written
    /// by no one else, or root's and sticky), as `private_tree` checks them.
    fn safe(path: &Path, st: &FileStat) -> Result<(), Insecure> {
        let sticky_root = st.st_mode & 0o1000 != 0 && st.st_uid == 0;
        if st.st_mode & 0o022 != 0 && !sticky_root {
            return Err(Insecure {
                path: path.to_owned(),
                owner: st.st_uid,
                mode: st.st_mode,
                why: "can be written by others".into(),
            });
        }
        Ok(())
    }

    fn tmp() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        // The path as the walk finds it (the temp root itself may be reached through a link).
        let base = walk(tmp.path(), false, safe).unwrap().path;
        (tmp, base)
    }

    #[test]
    fn a_link_in_a_safe_directory_is_followed_and_the_path_resolved() {
        let (_tmp, base) = tmp();
        std::fs::create_dir_all(base.join("real")).unwrap();
        symlink(base.join("real"), base.join("abs")).unwrap();
        symlink("real", base.join("rel")).unwrap();
        for via in ["abs", "rel"] {
            let got = walk(&base.join(via).join("state"), true, safe).unwrap();
            assert_eq!(got.path, base.join("real/state"), "through {via}");
            assert!(base.join("real/state").is_dir());
        }
    }

    #[test]
    fn a_link_in_a_directory_others_can_write_is_never_followed() {
        let (_tmp, base) = tmp();
        std::fs::create_dir_all(base.join("real")).unwrap();
        std::fs::create_dir(base.join("shared")).unwrap();
        std::fs::set_permissions(base.join("shared"), std::fs::Permissions::from_mode(0o2775))
            .unwrap();
        symlink(base.join("real"), base.join("shared/alice")).unwrap();
        let err = walk(&base.join("shared/alice/state"), true, safe)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("`{}`", base.join("shared").display())),
            "{err}"
        );
        assert!(err.contains("mode 2775"), "{err}");
        assert!(!base.join("real/state").exists(), "nothing made");
    }

    #[test]
    fn dot_dot_goes_back_to_where_the_walk_came_from() {
        let (_tmp, base) = tmp();
        std::fs::create_dir_all(base.join("deep/inner")).unwrap();
        std::fs::create_dir(base.join("x")).unwrap();
        symlink(base.join("deep/inner"), base.join("lnk")).unwrap();
        // After a link, `..` is the parent of where it led, as the kernel's walk has it.
        let got = walk(&base.join("lnk/../made"), true, safe).unwrap();
        assert_eq!(got.path, base.join("deep/made"));
        let got = walk(&base.join("x/./../deep/../x"), false, safe).unwrap();
        assert_eq!(got.path, base.join("x"));
        // A relative link that climbs.
        symlink("../deep/inner", base.join("x/up")).unwrap();
        let got = walk(&base.join("x/up"), false, safe).unwrap();
        assert_eq!(got.path, base.join("deep/inner"));
        // Never above `/`.
        let got = walk(Path::new("/../../tmp"), false, safe).unwrap();
        assert_eq!(got.path, walk(Path::new("/tmp"), false, safe).unwrap().path);
    }

    #[test]
    fn a_loop_of_links_ends_the_walk_naming_where() {
        let (_tmp, base) = tmp();
        symlink("b", base.join("a")).unwrap();
        symlink("a", base.join("b")).unwrap();
        let err = walk(&base.join("a/state"), true, safe)
            .unwrap_err()
            .to_string();
        assert!(err.contains("symbolic links"), "{err}");
        assert!(err.contains(&base.display().to_string()), "{err}");
        // A link to itself, and one to a file.
        symlink("self", base.join("self")).unwrap();
        assert!(walk(&base.join("self"), false, safe).is_err());
        std::fs::write(base.join("file"), "").unwrap();
        let err = walk(&base.join("file/state"), true, safe)
            .unwrap_err()
            .to_string();
        assert!(err.contains("Not a directory"), "{err}");
    }

    #[test]
    fn a_relative_path_is_refused() {
        assert!(walk(Path::new("state"), false, safe).is_err());
    }
}
