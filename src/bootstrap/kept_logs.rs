//! When a run fails, each node copies Ray's logs from its node-local temp root (removed at the
//! end) to the shared log directory, so that the raylet's or an agent's own account of the
//! failure outlives the job: `{stem}.ray-logs/attempt-R/{node}/`, one folder per attempt.
//!
//! The copy comes after the run's final state is written (a slow shared filesystem must not
//! let SIGKILL come before the state), and it is bounded: at most [`MAX_BYTES_PER_NODE`] a node,
//! newest files first; a file that does not fit keeps its end (where the failure is), and
//! `LEFT-OUT.txt` says what was cut or left out.
//!
//! The log directory may be writable by others (a group's): nothing is followed there. The
//! folders are opened one below the other without following links, made with `mkdir` 0700,
//! and files are created with `O_EXCL` 0600, so a planted link never makes us write elsewhere.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, mkdirat};

use crate::bootstrap::node::say;
use crate::bootstrap::ray_node::TempRoot;

/// The line the head writes to the workers' stdin before closing it when the run failed.
pub(super) const KEEP_LINE: &str = "RAYSLURM-KEEP-RAY-LOGS";

/// The most a node copies: enough for the raylet's and the agents' last words, little enough
/// that a slow shared filesystem takes seconds, not minutes, at the end of a job.
pub(super) const MAX_BYTES_PER_NODE: u64 = 32 << 20;

/// What a node kept.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Kept {
    pub(super) dest: PathBuf,
    pub(super) bytes: u64,
    /// Files cut to their end or left out, for the bound.
    pub(super) left_out: usize,
}

/// Copies this node's Ray logs (the session's `logs/` and what `ray start` printed) to
/// `root/attempt-R/node`, at most `limit` bytes; `None` (and no empty directory left behind)
/// when Ray had written nothing yet.
pub(super) fn keep(
    temp: &TempRoot,
    root: &Path,
    restart: u32,
    node: &str,
    limit: u64,
) -> Result<Option<Kept>> {
    let mut files = Vec::new();
    let start_log = temp.start_log();
    if let Some(f) = Source::of(&start_log, PathBuf::from("ray-start.out")) {
        files.push(f);
    }
    if let Some(logs) = session_logs(&temp.path) {
        list_tree(&logs, Path::new(""), &mut files)
            .with_context(|| format!("cannot read `{}`", logs.display()))?;
    }
    files.retain(|f| f.size > 0);
    if files.is_empty() {
        return Ok(None);
    }
    // Newest first: the end of the run is what explains it.
    files.sort_by(|a, b| b.modified.cmp(&a.modified).then(a.rel.cmp(&b.rel)));
    let attempt = format!("attempt-{restart}");
    let root_fd = open_or_make_root(root)?;
    let attempt_fd = make_and_open(&root_fd, Path::new(&attempt), true)
        .with_context(|| format!("cannot create `{}`", root.join(&attempt).display()))?;
    let (node_name, node_fd) = fresh_dir(&attempt_fd, node).with_context(|| {
        format!(
            "cannot create `{}`",
            root.join(&attempt).join(node).display()
        )
    })?;
    let dest = root.join(&attempt).join(node_name);
    let mut budget = limit;
    let mut bytes = 0;
    let mut notes = Vec::new();
    for f in &files {
        let wanted = f.size.min(budget);
        if wanted == 0 {
            notes.push(format!("{}: left out ({} bytes)", f.rel.display(), f.size));
            continue;
        }
        let copied = copy_file(f, wanted, &node_fd).with_context(|| {
            format!("cannot copy `{}` to `{}`", f.path.display(), dest.display())
        })?;
        if copied < f.size {
            notes.push(format!(
                "{}: only its last {copied} of {} bytes",
                f.rel.display(),
                f.size
            ));
        }
        budget -= copied.min(budget);
        bytes += copied;
    }
    if !notes.is_empty() {
        let mut out = create_file(&node_fd, Path::new("LEFT-OUT.txt"))
            .with_context(|| format!("cannot write `{}`", dest.join("LEFT-OUT.txt").display()))?;
        writeln!(
            out,
            "At most {} MB of Ray's logs are kept a node, newest files first; left out:",
            limit >> 20
        )?;
        for n in &notes {
            writeln!(out, "{n}")?;
        }
    }
    Ok(Some(Kept {
        dest,
        bytes,
        left_out: notes.len(),
    }))
}

/// A regular file to copy, with its path below the node's folder.
#[derive(Debug)]
struct Source {
    path: PathBuf,
    rel: PathBuf,
    size: u64,
    modified: SystemTime,
}

impl Source {
    /// `path` if it is a regular file (not a link).
    fn of(path: &Path, rel: PathBuf) -> Option<Self> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        meta.is_file().then(|| Self {
            path: path.to_owned(),
            rel,
            size: meta.len(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        })
    }
}

/// The `logs` directory of the Ray session below a temp root, if Ray got that far.
pub(crate) fn session_logs(temp: &Path) -> Option<PathBuf> {
    std::fs::read_dir(temp)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("session_"))
        })
        .map(|p| p.join("logs"))
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
}

/// The regular files below `dir` (links, sockets and the like are left out).
fn list_tree(dir: &Path, rel: &Path, out: &mut Vec<Source>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let rel = rel.join(entry.file_name());
        if kind.is_dir() {
            list_tree(&entry.path(), &rel, out)?;
        } else if kind.is_file()
            && let Some(s) = Source::of(&entry.path(), rel)
        {
            out.push(s);
        }
    }
    Ok(())
}

/// Copies the last `wanted` bytes of `f` (all of it if it fits) to the same path below `to`,
/// making the folders on the way; returns the bytes copied.
fn copy_file(f: &Source, wanted: u64, to: &OwnedFd) -> io::Result<u64> {
    let mut from = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&f.path)?;
    let size = from.metadata()?.len();
    if size > wanted {
        from.seek(SeekFrom::Start(size - wanted))?;
    }
    let mut dir: Option<OwnedFd> = None;
    let parts: Vec<_> = f.rel.components().collect();
    let (name, folders) = parts.split_last().expect("a file has a name");
    for folder in folders {
        let at = dir.as_ref().unwrap_or(to);
        let next = make_and_open(at, Path::new(folder.as_os_str()), true)?;
        dir = Some(next);
    }
    let mut out = create_file(dir.as_ref().unwrap_or(to), Path::new(name.as_os_str()))?;
    io::copy(&mut from.take(wanted), &mut out)
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// The root of the kept logs, made 0700 if it is not there; one that is there must be a
/// directory of the user's own (a link, or another user's directory, is refused).
fn open_or_make_root(root: &Path) -> Result<OwnedFd> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(root) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create `{}`", root.display())),
    }
    let fd = nix::fcntl::open(root, DIR_FLAGS, Mode::empty()).map_err(|e| {
        let meta = std::fs::symlink_metadata(root).ok();
        anyhow::anyhow!(
            "`{}` is not a directory of yours ({}): {e}; remove it, or pass another --ray-logs-dir",
            root.display(),
            meta.map_or_else(String::new, |m| format!(
                "a {} of user id {}, mode {:o}",
                if m.is_symlink() {
                    "symbolic link"
                } else {
                    "file"
                },
                m.uid(),
                m.mode() & 0o7777
            ))
        )
    })?;
    let meta = File::from(fd.try_clone()?).metadata()?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        bail!(
            "`{}` belongs to user id {}, mode {:o}, not to you (user id {me}): Ray's logs are not copied into another user's directory; remove it, or pass another --ray-logs-dir",
            root.display(),
            meta.uid(),
            meta.mode() & 0o7777
        );
    }
    Ok(fd)
}

/// `name` below `at`: made 0700 (or, with `existing_ok`, found there), then opened without
/// following a link.
fn make_and_open(at: &OwnedFd, name: &Path, existing_ok: bool) -> io::Result<OwnedFd> {
    match mkdirat(at, name, Mode::S_IRWXU) {
        Ok(()) => {}
        Err(nix::errno::Errno::EEXIST) if existing_ok => {}
        Err(e) => return Err(e.into()),
    }
    Ok(openat(at, name, DIR_FLAGS, Mode::empty())?)
}

/// A folder for this node that no one made before (`node`, else `node-2`, ...): what is there
/// already (another run's, a planted link) is never written into.
fn fresh_dir(at: &OwnedFd, node: &str) -> io::Result<(String, OwnedFd)> {
    let mut last = None;
    for k in 1..=20 {
        let name = if k == 1 {
            node.to_owned()
        } else {
            format!("{node}-{k}")
        };
        match make_and_open(at, Path::new(&name), false) {
            Ok(fd) => return Ok((name, fd)),
            Err(e) if e.raw_os_error() == Some(nix::libc::EEXIST) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free name")))
}

/// A new file `name` below `at`, 0600; fails if anything is there (a link included).
fn create_file(at: &OwnedFd, name: &Path) -> io::Result<File> {
    let fd = openat(
        at,
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::S_IRUSR | Mode::S_IWUSR,
    )?;
    Ok(File::from(fd))
}

/// [`keep`], telling the job's log where the logs went or why they could not be kept.
pub(super) fn keep_saying(temp: &TempRoot, root: Option<&Path>, restart: u32, node: &str) {
    let Some(root) = root else {
        return;
    };
    match keep(temp, root, restart, node, MAX_BYTES_PER_NODE) {
        Ok(None) => {}
        Ok(Some(kept)) => {
            let cut = if kept.left_out == 0 {
                String::new()
            } else {
                format!(
                    "; {} file(s) cut or left out for the {} MB bound, listed in LEFT-OUT.txt",
                    kept.left_out,
                    MAX_BYTES_PER_NODE >> 20
                )
            };
            say(
                node,
                format!(
                    "Ray's logs of node {node} ({} kB) kept in {}{cut}",
                    kept.bytes.div_ceil(1024),
                    kept.dest.display()
                ),
            );
        }
        Err(e) => say(node, format!("warning: Ray's logs not kept: {e:#}")),
    }
}

/// Where the logs go: `--ray-logs-dir`, else beside the run's state file.
pub(super) fn root(ray_logs_dir: Option<&Path>, state_file: Option<&Path>) -> Option<PathBuf> {
    ray_logs_dir.map(Path::to_path_buf).or_else(|| {
        state_file
            .and_then(crate::handoff::run_files::RunFiles::from_state_file)
            .map(|f| f.ray_logs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn session(tmp: &Path) -> (TempRoot, PathBuf) {
        let temp = TempRoot {
            path: tmp.join("rs0-7"),
        };
        let logs = temp.path.join("session_2026-11-22_03-16-21_584592_16/logs");
        std::fs::create_dir_all(logs.join("events")).unwrap();
        (temp, logs)
    }

    #[test]
    fn copies_the_session_logs_and_the_start_output_into_the_attempts_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let (temp, logs) = session(tmp.path());
        std::fs::write(logs.join("raylet.out"), "raylet says why").unwrap();
        std::fs::write(logs.join("events/event_RAYLET.log"), "e").unwrap();
        std::os::unix::fs::symlink(
            temp.path.join("session_2026-11-22_03-16-21_584592_16"),
            temp.path.join("session_latest"),
        )
        .unwrap();
        std::fs::write(temp.start_log(), "ray start output").unwrap();
        let root = tmp.path().join("exp_1122-031618.ray-logs");
        let kept = keep(&temp, &root, 2, "node2", 1 << 20).unwrap().unwrap();
        let dest = root.join("attempt-2/node2");
        assert_eq!(
            kept,
            Kept {
                dest: dest.clone(),
                bytes: 15 + 1 + 16,
                left_out: 0
            }
        );
        assert_eq!(
            std::fs::read_to_string(dest.join("raylet.out")).unwrap(),
            "raylet says why"
        );
        assert_eq!(
            std::fs::read_to_string(dest.join("ray-start.out")).unwrap(),
            "ray start output"
        );
        assert!(dest.join("events/event_RAYLET.log").is_file());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dest.join("raylet.out")), 0o600);
        assert_eq!(mode(&dest), 0o700);
        assert_eq!(mode(&root), 0o700);
        assert!(!dest.join("LEFT-OUT.txt").exists());
        // The same node again (the watchdog after a bootstrap that died mid-copy): a new folder.
        let again = keep(&temp, &root, 2, "node2", 1 << 20).unwrap().unwrap();
        assert_eq!(again.dest, root.join("attempt-2/node2-2"));
    }

    #[test]
    fn the_bound_keeps_the_newest_files_and_the_end_of_the_one_cut_and_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let (temp, logs) = session(tmp.path());
        let old = logs.join("old.log");
        std::fs::write(&old, vec![b'o'; 100]).unwrap();
        let t = SystemTime::now() - std::time::Duration::from_secs(60);
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(t)
            .unwrap();
        std::fs::write(logs.join("raylet.out"), b"0123456789 the end").unwrap();
        let root = tmp.path().join("k");
        let kept = keep(&temp, &root, 0, "n1", 10).unwrap().unwrap();
        assert_eq!((kept.bytes, kept.left_out), (10, 2));
        assert_eq!(
            std::fs::read(kept.dest.join("raylet.out")).unwrap(),
            b"89 the end"
        );
        assert!(!kept.dest.join("old.log").exists());
        let said = std::fs::read_to_string(kept.dest.join("LEFT-OUT.txt")).unwrap();
        assert!(
            said.contains("raylet.out: only its last 10 of 18 bytes"),
            "{said}"
        );
        assert!(said.contains("old.log: left out (100 bytes)"), "{said}");
    }

    /// A regression test: `fs::copy` followed a link planted at the destination and truncated
    /// the file it pointed at.
    #[test]
    fn a_link_planted_in_the_log_directory_is_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let (temp, logs) = session(tmp.path());
        std::fs::write(logs.join("raylet.out"), "raylet").unwrap();
        let precious = tmp.path().join("results.csv");
        std::fs::write(&precious, "precious").unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        // The root itself a link.
        let root = tmp.path().join("a.ray-logs");
        std::os::unix::fs::symlink(&elsewhere, &root).unwrap();
        let err = keep(&temp, &root, 0, "n1", 1 << 20).unwrap_err();
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // The attempt's folder a link.
        let root = tmp.path().join("b.ray-logs");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("attempt-0")).unwrap();
        assert!(keep(&temp, &root, 0, "n1", 1 << 20).is_err());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // The node's folder a link: a fresh folder beside it, the link left alone.
        let root = tmp.path().join("c.ray-logs");
        std::fs::create_dir_all(root.join("attempt-0")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("attempt-0/n1")).unwrap();
        let kept = keep(&temp, &root, 0, "n1", 1 << 20).unwrap().unwrap();
        assert_eq!(kept.dest, root.join("attempt-0/n1-2"));
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
    }

    #[test]
    fn a_node_where_ray_wrote_nothing_leaves_no_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let temp = TempRoot {
            path: tmp.path().join("rs0-8"),
        };
        std::fs::create_dir_all(&temp.path).unwrap();
        std::fs::write(temp.start_log(), "").unwrap();
        let root = tmp.path().join("k");
        assert!(keep(&temp, &root, 0, "node3", 1 << 20).unwrap().is_none());
        assert!(!root.exists());
    }

    #[test]
    fn the_root_is_beside_the_state_file_unless_given() {
        let state = Path::new("/shared/runs/exp_1122-031618-2.state.json");
        assert_eq!(
            root(None, Some(state)).unwrap(),
            Path::new("/shared/runs/exp_1122-031618-2.ray-logs")
        );
        assert_eq!(
            root(Some(Path::new("/x")), Some(state)).unwrap(),
            Path::new("/x")
        );
        assert_eq!(root(None, None), None);
    }
}
