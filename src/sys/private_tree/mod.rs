//! The user's private tree: where rayslurm keeps what it makes for itself (the copies of its
//! binary that jobs run, every run's script, log, final state and private directory with the
//! Ray token and checkpoints, a cluster's `cluster.json`, the run records).
//!
//! On a shared cluster a group-writable directory (2775 is the norm for projects) lets every
//! member rename or replace any entry in it, so nothing there can be trusted by an owner check
//! of a path. The tree is trusted only as ssh's StrictModes trusts `~/.ssh`: every directory
//! from `/` down to it belongs to root or the user, and none of them can be written by anyone
//! else (a root-owned directory with the sticky bit, such as `/tmp` or a scratch root, counts
//! as safe: there only an entry's owner may rename it). Below it, rayslurm creates each
//! directory itself with its final mode (`mkdirat` 0700), opens it without following links
//! (`openat` with `O_NOFOLLOW`) and checks what it opened, never what a path names.
//!
//! Shared filesystems do not always say who owns a file: NFSv4 without id mapping or with root
//! squash shows `nobody` (65534), `all_squash` one anonymous id. Such an owner cannot be
//! verified, so it is refused with a message that says so, unless the user accepts it by
//! naming it in [`TRUST_UNVERIFIED_OWNER`] (knowing that anyone mapped to it may write there).
//! Inside a container that remaps ids, root's directories show the overflow id, which counts as
//! root's there ([`super::user_namespace`]).

use std::fmt;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, mkdirat};

/// The variable that names owner ids (comma-separated) to accept as if they were the user's,
/// for a filesystem that shows every owner as one id. It names the risk on purpose.
pub(crate) const TRUST_UNVERIFIED_OWNER: &str = "RAYSLURM_TRUST_UNVERIFIED_OWNER";

/// The id NFS shows for an owner it cannot map.
const NOBODY: u32 = 65534;

static ACCEPTED: OnceLock<Vec<u32>> = OnceLock::new();

/// Accepts these owner ids as the user's for the rest of the process (the escape hatch, read
/// once: from [`TRUST_UNVERIFIED_OWNER`] on the login node, from the bootstrap's arguments
/// inside the job).
pub(crate) fn accept_owners(uids: Vec<u32>) {
    let _ = ACCEPTED.set(uids);
}

/// The ids accepted so far.
pub(crate) fn accepted_owners() -> &'static [u32] {
    ACCEPTED.get().map_or(&[], Vec::as_slice)
}

/// Parses [`TRUST_UNVERIFIED_OWNER`]'s value.
pub(crate) fn parse_owner_list(value: &str) -> Result<Vec<u32>, String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u32>().map_err(|_| {
                format!("{TRUST_UNVERIFIED_OWNER}=`{value}`: `{s}` is not a numeric user id")
            })
        })
        .collect()
}

fn me() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Whether a file of owner `uid` counts as the user's: the user's own, or an owner the user
/// said to accept ([`accept_owners`]).
pub(crate) fn is_mine(uid: u32) -> bool {
    uid == me() || accepted_owners().contains(&uid)
}

/// Root's id here: 0, or inside a user namespace that leaves host root unmapped (a container
/// that remaps ids) the overflow id its directories show. There another unmapped user's
/// directory shows the same id: the check made outside (at `launch`, on the login node)
/// is the one that tells them apart.
fn is_root(uid: u32) -> bool {
    uid == 0 || uid == super::user_namespace::root_shows_as()
}

/// Something in the way of a private tree: a path whose owner or mode lets another user
/// change what is below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Insecure {
    pub(crate) path: PathBuf,
    pub(crate) owner: u32,
    pub(crate) mode: u32,
    pub(crate) why: String,
}

impl fmt::Display for Insecure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let owner = owner_name(self.owner);
        write!(
            f,
            "`{}` (owner {owner}, mode {:04o}) {}",
            self.path.display(),
            self.mode & 0o7777,
            self.why
        )?;
        if self.owner == NOBODY && !is_mine(NOBODY) {
            write!(
                f,
                "; `nobody` is what NFS shows for an owner it cannot map (NFSv4 id mapping, root squash): if this filesystem shows every owner so and you accept that anyone mapped to `nobody` may write there, set {TRUST_UNVERIFIED_OWNER}={NOBODY}"
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Insecure {}

/// `uid 1000 (alice)`, or the number alone where no name is known.
pub(crate) fn owner_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(user)) => format!("uid {uid} ({})", user.name),
        _ => format!("uid {uid}"),
    }
}

fn insecure(path: &Path, st: &FileStat, why: impl Into<String>) -> Insecure {
    Insecure {
        path: path.to_owned(),
        owner: st.st_uid,
        mode: st.st_mode,
        why: why.into(),
    }
}

/// Whether an ancestor of the tree is safe: root's or the user's, and writable by no one
/// else, or root's with the sticky bit (where only an entry's owner may rename or remove it).
fn check_ancestor(path: &Path, st: &FileStat) -> Result<(), Insecure> {
    if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) != SFlag::S_IFDIR {
        return Err(insecure(path, st, "is not a directory"));
    }
    let others_write = st.st_mode & 0o022 != 0;
    let sticky = st.st_mode & 0o1000 != 0;
    if !is_root(st.st_uid) && !is_mine(st.st_uid) {
        return Err(insecure(
            path,
            st,
            "belongs to another user, who could replace anything below it",
        ));
    }
    if others_write && !(sticky && is_root(st.st_uid)) {
        return Err(insecure(
            path,
            st,
            "can be written by others, who could rename anything below it and put their own in its place",
        ));
    }
    Ok(())
}

/// Whether a directory of the tree itself is safe: the user's, open to no one else.
fn check_own_dir(path: &Path, st: &FileStat) -> Result<(), Insecure> {
    if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) != SFlag::S_IFDIR {
        return Err(insecure(path, st, "is not a directory"));
    }
    if !is_mine(st.st_uid) {
        return Err(insecure(
            path,
            st,
            "belongs to another user, so it cannot hold your private files",
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(insecure(
            path,
            st,
            "can be written by others; make it private (`chmod 700` it) or choose another directory",
        ));
    }
    Ok(())
}

/// A directory of the private tree, held open: what is made or opened below it is made or
/// opened relative to it, never through a path another user could have changed since.
#[derive(Debug)]
pub(crate) struct PrivateDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Why the tree could not be opened or made.
#[derive(Debug)]
pub(crate) enum TreeError {
    Insecure(Insecure),
    Io { path: PathBuf, errno: Errno },
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Insecure(i) => write!(f, "{i}"),
            Self::Io { path, errno } => write!(f, "`{}`: {}", path.display(), errno.desc()),
        }
    }
}

impl std::error::Error for TreeError {}

impl From<Insecure> for TreeError {
    fn from(i: Insecure) -> Self {
        Self::Insecure(i)
    }
}

fn io(path: &Path) -> impl Fn(Errno) -> TreeError + '_ {
    move |errno| TreeError::Io {
        path: path.to_owned(),
        errno,
    }
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

impl PrivateDir {
    /// Opens (making what is missing, 0700) the tree's root at `path`, an absolute path, after
    /// checking every directory on the way as StrictModes does. A symbolic link on the way (a
    /// site's `/home` often is one) is followed only from a directory that passed, and the
    /// tree's path is the resolved one ([`super::checked_walk`]): what a launch records and a
    /// job uses names no link another user could swap.
    pub(crate) fn open_root(path: &Path) -> Result<Self, TreeError> {
        let walked = super::checked_walk::walk(path, true, check_ancestor)?;
        check_own_dir(&walked.path, &fstat(&walked.fd).map_err(io(&walked.path))?)?;
        Ok(Self {
            fd: walked.fd,
            path: walked.path,
        })
    }

    /// The directory `name` below this one, made 0700 if missing; one found must be the
    /// user's, private, and not a link.
    pub(crate) fn dir(&self, name: &str) -> Result<Self, TreeError> {
        let path = self.path.join(name);
        match mkdirat(&self.fd, name, Mode::from_bits_truncate(0o700)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(io(&path)(e)),
        }
        let fd = openat(&self.fd, name, DIR_FLAGS, Mode::empty()).map_err(|e| {
            if e == Errno::ELOOP || e == Errno::ENOTDIR {
                TreeError::Insecure(Insecure {
                    path: path.clone(),
                    owner: nix::sys::stat::fstatat(
                        &self.fd,
                        name,
                        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                    )
                    .map_or(0, |s| s.st_uid),
                    mode: 0,
                    why: "is a link or not a directory where rayslurm keeps a directory of its own"
                        .into(),
                })
            } else {
                io(&path)(e)
            }
        })?;
        let st = fstat(&fd).map_err(io(&path))?;
        check_own_dir(&path, &st)?;
        if st.st_mode & 0o077 != 0 {
            // The user's, and no one else could write in it: only readable by others (as an
            // older rayslurm made its directories). Closed through the descriptor itself.
            nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(0o700)).map_err(io(&path))?;
        }
        Ok(Self { fd, path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Checks that `path` lies in a private tree (every directory from `/` to it as
/// [`PrivateDir::open_root`] wants), making nothing.
pub(crate) fn check(path: &Path) -> Result<(), TreeError> {
    if !path.exists() {
        return Err(TreeError::Io {
            path: path.to_owned(),
            errno: Errno::ENOENT,
        });
    }
    PrivateDir::open_root(path).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_tree_under_private_directories_is_made_0700_and_reopened() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("a/b/state");
        let tree = PrivateDir::open_root(&root).unwrap();
        assert_eq!(tree.path(), root);
        for p in [tmp.path().join("a"), tmp.path().join("a/b"), root.clone()] {
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", p.display());
        }
        let runs = tree.dir("runs").unwrap();
        assert_eq!(runs.path(), root.join("runs"));
        assert!(tree.dir("runs").is_ok(), "found again");
        assert!(check(&root.join("runs")).is_ok());
    }

    #[test]
    fn a_group_writable_ancestor_is_refused_with_its_path_owner_and_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("project");
        std::fs::create_dir(&shared).unwrap();
        chmod(&shared, 0o2775);
        let err = PrivateDir::open_root(&shared.join("state"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("`{}`", shared.display())), "{err}");
        assert!(err.contains("mode 2775"), "{err}");
        assert!(err.contains("can be written by others"), "{err}");
        assert!(!shared.join("state").exists(), "nothing made below it");
    }

    /// `RAYSLURM_STATE_DIR=/proj/grp/alice/state` with `alice` a link in the group's 2775
    /// directory: any member could swap it, so it is never followed; one in a safe directory
    /// is, and the tree's path is where it led.
    #[test]
    fn a_link_on_the_way_is_followed_only_from_a_safe_directory_and_the_path_resolved() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("home/alice")).unwrap();
        std::fs::create_dir(base.join("grp")).unwrap();
        chmod(&base.join("grp"), 0o2775);
        std::os::unix::fs::symlink(base.join("home/alice"), base.join("grp/alice")).unwrap();
        let err = PrivateDir::open_root(&base.join("grp/alice/state"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("`{}`", base.join("grp").display())),
            "{err}"
        );
        assert!(!base.join("home/alice/state").exists(), "nothing made");
        std::os::unix::fs::symlink(base.join("home/alice"), base.join("mine")).unwrap();
        let tree = PrivateDir::open_root(&base.join("mine/state")).unwrap();
        assert_eq!(tree.path(), base.join("home/alice/state"));
        assert_eq!(
            tree.dir("jobs").unwrap().path(),
            base.join("home/alice/state/jobs")
        );
    }

    #[test]
    fn a_sticky_root_directory_is_a_safe_ancestor_but_not_a_tree() {
        // /tmp: root's, 1777.
        let st = nix::sys::stat::stat("/tmp").unwrap();
        assert!(check_ancestor(Path::new("/tmp"), &st).is_ok());
        assert!(check_own_dir(Path::new("/tmp"), &st).is_err() || me() == 0);
    }

    #[test]
    fn a_link_or_an_open_directory_in_the_tree_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let tree = PrivateDir::open_root(&tmp.path().join("s")).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, tmp.path().join("s/jobs")).unwrap();
        let err = tree.dir("jobs").unwrap_err().to_string();
        assert!(err.contains("is a link or not a directory"), "{err}");
        std::fs::create_dir(tmp.path().join("s/open")).unwrap();
        chmod(&tmp.path().join("s/open"), 0o775);
        let err = tree.dir("open").unwrap_err().to_string();
        assert!(err.contains("can be written by others"), "{err}");
        // Only readable by others: the user's own, made private.
        chmod(&tmp.path().join("s/open"), 0o755);
        tree.dir("open").unwrap();
        let mode = std::fs::metadata(tmp.path().join("s/open"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn another_owner_is_refused_and_nobody_gets_the_escape_hatch_named() {
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        chmod(&theirs, 0o755);
        if me() != 0 {
            crate::sys::test_skip::needs_root("giving a directory to another user needs root");
            return;
        }
        nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(NOBODY)), None).unwrap();
        let err = PrivateDir::open_root(&theirs.join("s"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("belongs to another user"), "{err}");
        assert!(err.contains(&format!("owner uid {NOBODY}")), "{err}");
        assert!(err.contains(TRUST_UNVERIFIED_OWNER), "{err}");
    }

    #[test]
    fn the_owner_list_is_numeric() {
        assert_eq!(parse_owner_list("65534, 99").unwrap(), vec![65534, 99]);
        assert!(parse_owner_list("nobody").unwrap_err().contains("`nobody`"));
    }
}

#[cfg(test)]
mod rule_tests;
