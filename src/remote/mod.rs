//! From a laptop: every command run on a login node over SSH (`--host`). [`ssh`] keeps the
//! one master connection; [`session`] runs a command there (rayslurm's own copy, the files
//! sent with it, Ctrl-C passed on) and sends that copy the first time. What a command sends
//! and how its words change is `commands/on_host`'s.

pub(crate) mod session;
pub(crate) mod ssh;

use std::path::PathBuf;

use crate::error::UsageError;

/// `RAYSLURM_REMOTE_BINARY`: the Linux build of rayslurm a laptop sends to login nodes.
pub(crate) const REMOTE_BINARY: &str = "RAYSLURM_REMOTE_BINARY";
/// The name of that build beside this one (a macOS build's package carries it).
pub(crate) const BESIDE: &str = "rayslurm-linux-x86_64";

/// The Linux build to send: `$RAYSLURM_REMOTE_BINARY`, else [`BESIDE`] next to this program,
/// else this program itself when it is a Linux build.
pub(crate) fn binary_to_send(var: Option<PathBuf>) -> Result<PathBuf, UsageError> {
    if let Some(path) = var.filter(|p| !p.as_os_str().is_empty()) {
        if path.is_file() {
            return Ok(path);
        }
        return Err(
            UsageError::new(format!("{REMOTE_BINARY}={}: no such file", path.display()))
                .hint("name rayslurm's Linux build (the wheel's or a release's `rayslurm` binary)"),
        );
    }
    let me = std::env::current_exe()
        .map_err(|e| UsageError::new(format!("cannot find this program's file: {e}")))?;
    if let Some(beside) = me.parent().map(|d| d.join(BESIDE)).filter(|p| p.is_file()) {
        return Ok(beside);
    }
    if cfg!(target_os = "linux") {
        return Ok(me);
    }
    Err(UsageError::new(
        "this build of rayslurm is not a Linux one, and no Linux build is at hand to run on the login node",
    )
    .hint(format!(
        "put rayslurm's Linux build beside this one as `{BESIDE}`, or name it in {REMOTE_BINARY} (docs/laptop.md)"
    )))
}
