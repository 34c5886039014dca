//! The rayslurm binary the compute nodes run.
//!
//! A job may wait in the queue for days; the user may upgrade or move rayslurm meanwhile. So
//! `launch` copies its own executable next to the logs (which the nodes must see anyway) under
//! a name that changes with the build, and the script runs that copy.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result};

use crate::sys::staged_file::Staged;

/// Where copies live, below the log directory.
const BIN_DIR: &str = ".rayslurm/bin";

/// Returns the path of this build's copy under `log_dir`, copying it there if it is missing.
pub(crate) fn node_visible_copy(log_dir: &Path) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the running rayslurm executable")?;
    let meta =
        std::fs::metadata(&exe).with_context(|| format!("cannot read `{}`", exe.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let name = format!(
        "rayslurm-{}-{:x}-{:x}",
        env!("CARGO_PKG_VERSION"),
        meta.len(),
        mtime
    );
    let dir = log_dir.join(BIN_DIR);
    let target = dir.join(name);
    if target.exists() {
        return Ok(target);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let copy = Staged::new(&dir, "copy", 0o755)?;
    std::fs::copy(&exe, copy.path())
        .with_context(|| format!("cannot copy `{}` to `{}`", exe.display(), dir.display()))?;
    std::fs::set_permissions(copy.path(), std::fs::Permissions::from_mode(0o755))?;
    // `Some`: another launch copied the same build first, and theirs is as good as ours.
    copy.place_new(&target)?;
    Ok(target)
}
