//! enroot's directories for the user on this node, as the enroot that pyxis runs will use
//! them, and the check made before the run's first pyxis step on the node.
//!
//! enroot keeps a user's containers (whole root filesystems, run as the user) in its data
//! directory, and unpacks and starts them through its runtime and cache directories. Sites put
//! these in a shared, sticky directory, one per user (`/tmp/enroot/user-$(id -u)`), which
//! enroot makes with `mkdir -p` and never checks: another user who makes the user's directory
//! first, or finds one open, could swap the root filesystem the user's programs run from. So
//! the directories must be the user's, open to no one else, and so must every directory above
//! them (root's sticky ones aside), as for rayslurm's own private tree; a missing one is made
//! so (0700) here, before enroot would make it. A container found under the attempt's name
//! (which has a random part) was not made by this run: pyxis would start the run in it, so the
//! run refuses it.
//!
//! Where the directories are is enroot's own answer: its configuration block (the defaults,
//! the site's `enroot.conf` and its drop-ins) is run as the user, with the job's environment
//! less what pyxis keeps from enroot (`ENROOT_DATA_PATH` and the like: pyxis drops them), and
//! with `mkdir` made a no-op, so that nothing is made through a path not yet checked.

use std::path::{Path, PathBuf};

use crate::sys::private_tree::{self, PrivateDir, TreeError, owner_name};
use crate::sys::process::Cmd;

/// What pyxis's enroot runs with: the job's environment less what pyxis drops (its
/// `enroot_deny_env`), and the system's directories first on PATH (pyxis runs the `enroot` on
/// slurmstepd's PATH, not on the job's). Shell text, put before every enroot command here.
pub(crate) const AS_PYXIS_RUNS_IT: &str = "unset ENROOT_LIBRARY_PATH ENROOT_SYSCONF_PATH \
ENROOT_RUNTIME_PATH ENROOT_CACHE_PATH ENROOT_DATA_PATH ENROOT_TEMP_PATH ENROOT_ZSTD_OPTIONS \
ENROOT_TRANSFER_RETRIES ENROOT_CONNECT_TIMEOUT ENROOT_MAX_CONNECTIONS ENROOT_ALLOW_HTTP \
LD_LIBRARY_PATH LD_PRELOAD
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
";

/// Prints enroot's data, runtime and cache directories, each ended by a NUL.
const SHOW_DIRS: &str = r#"enroot=$(command -v enroot) || { echo "pyxis's enroot is not on this node's PATH" >&2; exit 3; }
config=$(sed -n '/^# ---- BEGIN CONFIG ----$/,/^# ----- END CONFIG -----$/p' "$enroot")
[ -n "$config" ] || { echo "\`$enroot\` has no configuration block to read its directories from" >&2; exit 4; }
mkdir() { :; }
eval "$config"
printf '%s\0' "${ENROOT_DATA_PATH-}" "${ENROOT_RUNTIME_PATH-}" "${ENROOT_CACHE_PATH-}"
"#;

/// enroot's directories for this user on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnrootDirs {
    pub(crate) data: PathBuf,
    pub(crate) runtime: PathBuf,
    pub(crate) cache: PathBuf,
}

impl EnrootDirs {
    /// Asks the node's enroot (see the module's doc).
    pub(crate) fn find() -> Result<Self, String> {
        Self::ask(Cmd::new("bash"), "")
    }

    /// [`SHOW_DIRS`] run by `bash`, after pyxis's environment is made and then `then`.
    fn ask(bash: Cmd, then: &str) -> Result<Self, String> {
        let script = format!("{AS_PYXIS_RUNS_IT}{then}{SHOW_DIRS}");
        let out = run(bash.args(["-c", &script]))
            .map_err(|e| format!("cannot ask enroot where its directories are: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cannot ask enroot where its directories are: {}",
                said(&out)
            ));
        }
        Self::parse(&out.stdout)
    }

    /// The three paths [`SHOW_DIRS`] prints: each must be absolute.
    fn parse(out: &[u8]) -> Result<Self, String> {
        let paths: Vec<PathBuf> = out
            .split(|b| *b == 0)
            .take(3)
            .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
            .collect();
        let [data, runtime, cache] = <[PathBuf; 3]>::try_from(paths)
            .map_err(|_| "enroot did not name its data, runtime and cache directories")?;
        for (what, path) in [("DATA", &data), ("RUNTIME", &runtime), ("CACHE", &cache)] {
            if !path.is_absolute() {
                return Err(format!(
                    "enroot's ENROOT_{what}_PATH is `{}`, not an absolute path; the site's enroot.conf must name one",
                    path.display()
                ));
            }
        }
        Ok(Self {
            data,
            runtime,
            cache,
        })
    }

    /// Checks (making what is missing, 0700) every directory, then that no container of the
    /// attempt's names (`containers`, as enroot names them) is in the data directory already.
    pub(crate) fn check(&self, node: &str, containers: &[String]) -> Result<(), String> {
        for (what, path) in [
            ("data", &self.data),
            ("runtime", &self.runtime),
            ("cache", &self.cache),
        ] {
            PrivateDir::open_root(path).map_err(|e| unsafe_dir(what, path, node, &e))?;
        }
        for name in containers {
            let path = self.data.join(name);
            if let Ok(found) = std::fs::symlink_metadata(&path) {
                use std::os::unix::fs::MetadataExt;
                return Err(format!(
                    "a container `{name}` is already in enroot's data directory on {node} (`{}`, owner {}): the run's container has a name no one could know before the run, so this one was not made by it, and pyxis would run the run in it; the run does not start. Remove it (`enroot remove {name}`, as its owner)",
                    path.display(),
                    owner_name(found.uid())
                ));
            }
        }
        Ok(())
    }
}

/// Removes those of the attempt's containers (`containers`, as enroot names them) that are in
/// enroot's data directory and are the user's (one of another owner was not made by the run,
/// which refused to start in it). enroot is run only when one is there, and once the
/// directories are checked: every enroot command makes its directories first (`mkdir -p`),
/// which in a directory another user made would put the user's files in it.
pub(crate) fn remove(node: &str, containers: &[String]) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let dirs = EnrootDirs::find()?;
    let there: Vec<&String> = containers
        .iter()
        .filter(|name| {
            std::fs::symlink_metadata(dirs.data.join(name))
                .is_ok_and(|m| m.is_dir() && private_tree::is_mine(m.uid()))
        })
        .collect();
    if there.is_empty() {
        return Ok(());
    }
    dirs.check(node, &[])?;
    let script = format!("{AS_PYXIS_RUNS_IT}enroot remove --force \"$@\" >/dev/null");
    let out = run(Cmd::new("sh").args(["-c", &script, "sh"]).args(&there))
        .map_err(|e| format!("cannot run enroot: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`enroot remove --force {}`: {}",
            there
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            said(&out)
        ))
    }
}

/// Runs `cmd` to its end, its output captured, whatever its exit status.
fn run(cmd: Cmd) -> std::io::Result<std::process::Output> {
    cmd.command().stdin(std::process::Stdio::null()).output()
}

/// What a failed command said: its stderr, else its stdout (enroot prints a configuration
/// file it cannot read there), else its exit status.
fn said(out: &std::process::Output) -> String {
    [&out.stderr, &out.stdout]
        .map(|b| String::from_utf8_lossy(b).trim().to_owned())
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| crate::sys::process::describe_status(out.status))
}

/// The message for an enroot directory that is not safe: what is wrong (the path, its owner
/// and mode), and what to do, which depends on whose it is.
fn unsafe_dir(what: &str, path: &Path, node: &str, e: &TreeError) -> String {
    let fix = match e {
        TreeError::Insecure(i) if private_tree::is_mine(i.owner) => format!(
            "make it private: `chmod 700 {}` on {node}",
            i.path.display()
        ),
        TreeError::Insecure(i) => format!(
            "it is not yours: ask {} or the node's administrator to remove it (rayslurm then makes enroot's directories again, yours and private), or have the site's enroot.conf keep ENROOT_{}_PATH elsewhere",
            owner_name(i.owner),
            what.to_uppercase()
        ),
        TreeError::Io { .. } => {
            "check that the node's enroot.conf names a directory you can make".to_owned()
        }
    };
    format!(
        "enroot's {what} directory for you on {node}, `{}`, is not safe for the run's container, so the run does not start: {e}; {fix}",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dirs(root: &Path) -> EnrootDirs {
        let user = root.join("enroot/user-1");
        EnrootDirs {
            data: user.join("data"),
            runtime: user.join("runtime"),
            cache: user.join("cache"),
        }
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn enroots_answer_is_three_absolute_paths() {
        let dirs = EnrootDirs::parse(b"/tmp/e/data\0/tmp/e/run\0/tmp/e/cache\0").unwrap();
        assert_eq!(dirs.data, Path::new("/tmp/e/data"));
        assert_eq!(dirs.runtime, Path::new("/tmp/e/run"));
        assert_eq!(dirs.cache, Path::new("/tmp/e/cache"));
        let err = EnrootDirs::parse(b"/tmp/e/data\0\0/c\0").unwrap_err();
        assert!(err.contains("ENROOT_RUNTIME_PATH is ``"), "{err}");
        assert!(EnrootDirs::parse(b"/a\0").is_err());
    }

    /// An enroot whose configuration block is enroot's own kind: the job's ENROOT_DATA_PATH
    /// is not what it uses (pyxis drops it), `$(id -u)` is the user's, and nothing is made.
    #[test]
    fn enroots_own_configuration_block_names_the_directories_and_makes_none() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let root = tmp.path().display();
        let script = format!(
            r#"#! /usr/bin/env bash
# ---- BEGIN CONFIG ----
config::export() {{ [ -n "${{3-}}" ] && export "$1=$2" || export "$1=${{!1:-$2}}"; }}
config::export XDG_DATA_HOME "$HOME/.local/share"
config::export ENROOT_DATA_PATH "$XDG_DATA_HOME/enroot"
config::export ENROOT_RUNTIME_PATH "{root}/run/user-$(id -u)"
config::export ENROOT_CACHE_PATH "{root}/cache"
(umask 077 && mkdir -p "$ENROOT_CACHE_PATH" "$ENROOT_DATA_PATH" "$ENROOT_RUNTIME_PATH")
# ----- END CONFIG -----
exit 1
"#
        );
        std::fs::write(bin.join("enroot"), script).unwrap();
        chmod(&bin.join("enroot"), 0o755);
        let bash = Cmd::new("bash")
            .env("HOME", tmp.path().join("home"))
            .env("ENROOT_DATA_PATH", "/planted");
        let then = format!("PATH={}:$PATH\n", bin.display());
        let dirs = EnrootDirs::ask(bash, &then).unwrap();
        let uid = nix::unistd::getuid();
        assert_eq!(dirs.data, tmp.path().join("home/.local/share/enroot"));
        assert_eq!(dirs.runtime, tmp.path().join(format!("run/user-{uid}")));
        assert_eq!(dirs.cache, tmp.path().join("cache"));
        assert!(!tmp.path().join("cache").exists(), "nothing made");
        // An enroot without the block: said, with its path.
        std::fs::write(bin.join("enroot"), "#!/bin/sh\n").unwrap();
        let err = EnrootDirs::ask(Cmd::new("bash"), &then).unwrap_err();
        assert!(err.contains("has no configuration block"), "{err}");
        // A site's configuration it cannot read: enroot's words (on its stdout).
        let bad = "# ---- BEGIN CONFIG ----\nprintf 'Invalid configuration file: /x\\n'; exit 1\n# ----- END CONFIG -----\n";
        std::fs::write(bin.join("enroot"), bad).unwrap();
        let err = EnrootDirs::ask(Cmd::new("bash"), &then).unwrap_err();
        assert!(err.ends_with("Invalid configuration file: /x"), "{err}");
    }

    #[test]
    fn missing_directories_are_made_private_and_a_fresh_name_passes() {
        let tmp = tempfile::tempdir().unwrap();
        let d = dirs(tmp.path());
        d.check("node1", &["pyxis_rayslurm-7.0-ab".to_owned()])
            .unwrap();
        for p in [
            &d.data,
            &d.runtime,
            &d.cache,
            &d.data.parent().unwrap().to_owned(),
        ] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", p.display());
        }
    }

    #[test]
    fn an_open_data_directory_is_refused_naming_its_path_mode_and_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let d = dirs(tmp.path());
        d.check("node1", &[]).unwrap();
        chmod(&d.data, 0o777);
        let err = d.check("node1", &[]).unwrap_err();
        assert!(
            err.contains("enroot's data directory for you on node1"),
            "{err}"
        );
        assert!(err.contains(&format!("`{}`", d.data.display())), "{err}");
        assert!(err.contains("mode 0777"), "{err}");
        assert!(err.contains("`chmod 700"), "{err}");
    }

    #[test]
    fn a_directory_above_them_that_others_can_write_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let d = dirs(tmp.path());
        d.check("node1", &[]).unwrap();
        let user = d.data.parent().unwrap();
        chmod(user, 0o777);
        let err = d.check("node1", &[]).unwrap_err();
        assert!(
            err.contains(&format!("`{}` (owner", user.display())),
            "{err}"
        );
        assert!(err.contains("can be written by others"), "{err}");
    }

    #[test]
    fn a_container_already_there_under_the_attempts_name_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let d = dirs(tmp.path());
        d.check("node1", &[]).unwrap();
        let name = "pyxis_rayslurm-7.0-0123456789abcdef".to_owned();
        std::fs::create_dir(d.data.join(&name)).unwrap();
        let err = d.check("node1", std::slice::from_ref(&name)).unwrap_err();
        assert!(
            err.contains(&format!("a container `{name}` is already")),
            "{err}"
        );
        assert!(err.contains(&format!("`enroot remove {name}`")), "{err}");
        // A link of that name counts as well.
        std::fs::remove_dir(d.data.join(&name)).unwrap();
        std::os::unix::fs::symlink("/nonexistent", d.data.join(&name)).unwrap();
        assert!(d.check("node1", &[name]).is_err());
    }
}
