//! When a run fails, each node copies Ray's logs from its node-local temp root (removed at the
//! end) to the shared log directory, so that the raylet's or an agent's own account of the
//! failure outlives the job: `{stem}.ray-logs/{node}/`.

use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::ray_node::TempRoot;

/// The line the head writes to the workers' stdin before closing it when the run failed.
pub(super) const KEEP_LINE: &str = "RAYSLURM-KEEP-RAY-LOGS";

/// Copies this node's Ray logs (the session's `logs/` and what `ray start` printed) to
/// `root/node`; returns that directory and the bytes copied, or `None` (and leaves no empty
/// directory behind) when Ray had written nothing yet.
pub(super) fn keep(temp: &TempRoot, root: &Path, node: &str) -> Result<Option<(PathBuf, u64)>> {
    let dest = root.join(node);
    std::fs::create_dir_all(&dest)
        .with_context(|| format!("cannot create `{}`", dest.display()))?;
    let mut bytes = 0;
    let start_log = temp.start_log();
    if start_log.is_file() {
        bytes += std::fs::copy(&start_log, dest.join("ray-start.out"))
            .with_context(|| format!("cannot copy `{}`", start_log.display()))?;
    }
    if let Some(logs) = session_logs(&temp.path) {
        bytes += copy_tree(&logs, &dest)
            .with_context(|| format!("cannot copy `{}` to `{}`", logs.display(), dest.display()))?;
    }
    if bytes == 0 {
        let _ = std::fs::remove_dir_all(&dest);
        // Only if no other node kept anything there.
        let _ = std::fs::remove_dir(root);
        return Ok(None);
    }
    Ok(Some((dest, bytes)))
}

/// The `logs` directory of the Ray session below a temp root, if Ray got that far.
fn session_logs(temp: &Path) -> Option<PathBuf> {
    std::fs::read_dir(temp)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            !p.is_symlink()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("session_"))
        })
        .map(|p| p.join("logs"))
        .find(|p| p.is_dir())
}

/// Copies the regular files and directories below `src` into `dst` (links, sockets and the
/// like are left out); returns the bytes copied.
fn copy_tree(src: &Path, dst: &Path) -> io::Result<u64> {
    let mut bytes = 0;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let to = dst.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir_all(&to)?;
            bytes += copy_tree(&entry.path(), &to)?;
        } else if kind.is_file() {
            bytes += std::fs::copy(entry.path(), &to)?;
        }
    }
    Ok(bytes)
}

/// [`keep`], telling the job's log where the logs went or why they could not be kept.
pub(super) fn keep_saying(temp: &TempRoot, root: Option<&Path>, node: &str) {
    let Some(root) = root else {
        return;
    };
    match keep(temp, root, node) {
        Ok(None) => {}
        Ok(Some((dest, bytes))) => super::say(
            node,
            format!(
                "Ray's logs of node {node} ({} kB) kept in {}",
                bytes.div_ceil(1024),
                dest.display()
            ),
        ),
        Err(e) => super::say(node, format!("warning: Ray's logs not kept: {e:#}")),
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

    #[test]
    fn copies_the_session_logs_and_the_start_output() {
        let tmp = tempfile::tempdir().unwrap();
        let temp = TempRoot {
            path: tmp.path().join("rs0-7"),
        };
        let logs = temp.path.join("session_2026-11-22_03-16-21_584592_16/logs");
        std::fs::create_dir_all(logs.join("events")).unwrap();
        std::fs::write(logs.join("raylet.out"), "raylet says why").unwrap();
        std::fs::write(logs.join("events/event_RAYLET.log"), "e").unwrap();
        std::os::unix::fs::symlink(
            temp.path.join("session_2026-11-22_03-16-21_584592_16"),
            temp.path.join("session_latest"),
        )
        .unwrap();
        std::fs::write(temp.start_log(), "ray start output").unwrap();
        let root = tmp.path().join("exp_1122-031618.ray-logs");
        let (dest, bytes) = keep(&temp, &root, "node2").unwrap().unwrap();
        assert_eq!(dest, root.join("node2"));
        assert_eq!(
            std::fs::read_to_string(dest.join("raylet.out")).unwrap(),
            "raylet says why"
        );
        assert_eq!(
            std::fs::read_to_string(dest.join("ray-start.out")).unwrap(),
            "ray start output"
        );
        assert!(dest.join("events/event_RAYLET.log").is_file());
        assert_eq!(bytes, 15 + 1 + 16);
    }

    #[test]
    fn a_node_where_ray_wrote_nothing_leaves_no_empty_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let temp = TempRoot {
            path: tmp.path().join("rs0-8"),
        };
        std::fs::create_dir_all(&temp.path).unwrap();
        std::fs::write(temp.start_log(), "").unwrap();
        let root = tmp.path().join("k");
        assert!(keep(&temp, &root, "node3").unwrap().is_none());
        assert!(!root.exists());
        // Another node's logs stay.
        std::fs::create_dir_all(root.join("node2")).unwrap();
        std::fs::write(root.join("node2/raylet.out"), "x").unwrap();
        assert!(keep(&temp, &root, "node3").unwrap().is_none());
        assert!(root.join("node2/raylet.out").is_file());
        assert!(!root.join("node3").exists());
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
