//! The log directory the user sees (`--log-dir`, by default `./rayslurm-logs`): it gets only a
//! link `{stem}.log` to each run's log, which lives in the private tree. A directory named by
//! the user must exist; the default one is made by the launch that first needs it (never by a
//! dry run, which writes no link). It may be shared with the group: rayslurm writes nothing
//! but links there, never through a name found there. A default one that another user made,
//! or a file of that name, is refused before anything is submitted, naming its owner.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{UsageError, show};
use crate::sys::private_tree;

/// Checks the log directory before anything is written (with `probe`, by writing a file and
/// removing it). A missing default one passes: [`make_default`] makes it.
pub(crate) fn check(dir: &Path, is_default: bool, probe: bool) -> Result<(), UsageError> {
    let shown = show(&dir.display().to_string());
    if is_default {
        match std::fs::symlink_metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(UsageError::new(format!(
                    "cannot read the log directory {shown}: {e}"
                )));
            }
            Ok(meta) if meta.file_type().is_symlink() && !private_tree::is_mine(meta.uid()) => {
                return Err(UsageError::new(format!(
                    "the default log directory {shown} is a link made by user id {}, not by you: rayslurm does not put your runs' links where another user points",
                    meta.uid()
                ))
                .hint("remove the link, or pass --log-dir DIR"));
            }
            Ok(meta) if !meta.file_type().is_symlink() => planted(&shown, &meta)?,
            Ok(_) => {}
        }
    }
    if !dir.is_dir() {
        let what = if dir.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Err(
            UsageError::new(format!("the log directory {shown} {what}")).hint(format!(
                "create it first (`mkdir -p {}`) or pass another --log-dir",
                dir.display()
            )),
        );
    }
    if !probe {
        return Ok(());
    }
    // A real write, not access(2): root passes access() even on a read-only filesystem.
    if let Err(e) = tempfile::Builder::new()
        .prefix(".rayslurm-probe-")
        .tempfile_in(dir)
    {
        return Err(
            UsageError::new(format!("the log directory {shown} is not writable: {e}"))
                .hint("pass a --log-dir you can write to, on a filesystem the compute nodes share"),
        );
    }
    Ok(())
}

/// Refuses a default log directory that is not a directory, or that another user made: its
/// owner could rename or replace the links rayslurm puts there, or had it made to fail the
/// launch later. Both name the owner and say what to do.
fn planted(shown: &str, meta: &std::fs::Metadata) -> Result<(), UsageError> {
    let owner = private_tree::owner_name(meta.uid());
    if !meta.is_dir() {
        return Err(UsageError::new(format!(
            "the default log directory {shown} is a file, not a directory (owner {owner})"
        ))
        .hint("remove or rename that file, or pass --log-dir DIR"));
    }
    if !private_tree::is_mine(meta.uid()) {
        return Err(UsageError::new(format!(
            "the default log directory {shown} belongs to {owner}, not to you: another user made it, and could rename or replace the links rayslurm puts there"
        ))
        .hint("pass --log-dir DIR (a directory of yours), or ask its owner to remove it"));
    }
    Ok(())
}

/// Makes the default log directory if it is missing (a directory the user named was checked
/// to exist), then checks it as [`check`] does.
pub(crate) fn make_default(dir: &Path, is_default: bool) -> Result<(), UsageError> {
    if is_default && std::fs::symlink_metadata(dir).is_err() {
        make(dir, &show(&dir.display().to_string()))?;
        return check(dir, is_default, true);
    }
    Ok(())
}

/// `mkdir` (with the user's umask, as any directory of theirs): it fails on any name already
/// there, a planted link included, and never follows one.
fn make(dir: &Path, shown: &str) -> Result<(), UsageError> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        // Made by a launch beside this one: checked as found, below.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(
            UsageError::new(format!("cannot make the log directory {shown}: {e}"))
                .hint("pass a --log-dir you can write to, on a filesystem the compute nodes share"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_made_by_a_launch_and_never_by_a_check() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rayslurm-logs");
        check(&dir, true, true).unwrap();
        assert!(!dir.exists(), "a check makes nothing");
        make_default(&dir, false).unwrap();
        assert!(!dir.exists(), "a directory named by the user is never made");
        make_default(&dir, true).unwrap();
        assert!(dir.is_dir());
        check(&dir, true, true).unwrap();
        make_default(&dir, true).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "no probe left");
    }

    #[test]
    fn a_named_directory_must_exist_and_the_default_must_be_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let named = tmp.path().join("mine");
        let err = check(&named, false, true).unwrap_err();
        assert!(err.message.contains("does not exist"), "{}", err.message);
        assert!(!named.exists());
        let file = tmp.path().join("rayslurm-logs");
        std::fs::write(&file, "").unwrap();
        let err = check(&file, true, true).unwrap_err();
        let me = private_tree::owner_name(nix::unistd::geteuid().as_raw());
        assert!(
            err.message
                .contains(&format!("is a file, not a directory (owner {me})")),
            "{}",
            err.message
        );
        // Named by the user, it is only not a directory.
        let err = check(&file, false, true).unwrap_err();
        assert!(
            err.message.contains("is not a directory"),
            "{}",
            err.message
        );
    }

    #[test]
    fn the_users_own_link_is_followed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("scratch")).unwrap();
        let dir = tmp.path().join("rayslurm-logs");
        std::os::unix::fs::symlink(tmp.path().join("scratch"), &dir).unwrap();
        check(&dir, true, true).unwrap();
        // A dangling link of one's own is not made into a directory through.
        let dangling = tmp.path().join("gone");
        std::os::unix::fs::symlink(tmp.path().join("nowhere"), &dangling).unwrap();
        assert!(check(&dangling, true, true).is_err());
        assert!(make_default(&dangling, true).is_ok());
        assert!(!tmp.path().join("nowhere").exists());
    }

    #[test]
    fn a_directory_another_user_made_at_the_default_is_refused_naming_them() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rayslurm-logs");
        std::fs::create_dir(&dir).unwrap();
        // Only root can give a directory to another user (e2e_ports tries it as two users).
        if std::os::unix::fs::lchown(&dir, Some(65534), None).is_err() {
            crate::sys::test_skip::needs_root("a directory of another user needs root to make");
            return;
        }
        let err = check(&dir, true, true).unwrap_err();
        assert!(
            err.message.contains("belongs to uid 65534"),
            "{}",
            err.message
        );
        // Named with --log-dir, it is the user's choice.
        check(&dir, false, false).unwrap();
    }

    #[test]
    fn a_link_another_user_planted_at_the_default_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        let dir = tmp.path().join("rayslurm-logs");
        std::os::unix::fs::symlink(&theirs, &dir).unwrap();
        // Only root can give a link to another user; as anyone else the case cannot be made.
        if std::os::unix::fs::lchown(&dir, Some(65534), None).is_err() {
            crate::sys::test_skip::needs_root("a link of another user needs root to make");
            return;
        }
        let err = check(&dir, true, true).unwrap_err();
        assert!(
            err.message
                .contains("is a link made by user id 65534, not by you"),
            "{}",
            err.message
        );
        assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
    }
}
