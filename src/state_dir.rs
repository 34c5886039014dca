//! Where rayslurm keeps the user's state (run records, trusted files, the node-visible binary,
//! the jobs' private files), and that directory opened as a private tree. Below both `runs/`
//! (the records) and `launch/` (the trusted project files), which share it and nothing else.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::env_vars;
use crate::error::UsageError;
use crate::sys::private_tree::{PrivateDir, TreeError};

/// The user's private tree (the state directory), opened and checked; made if missing. Its
/// path is the resolved one (a link on the way followed only from a directory no one else can
/// write): what every caller records or hands to a job.
pub(crate) fn private_root() -> Result<PrivateDir, UsageError> {
    let dir = state_dir(|k| std::env::var_os(k))?;
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    PrivateDir::open_root(&dir).map_err(tree_error)
}

/// A private tree that cannot be used, as the user reads it.
pub(crate) fn tree_error(e: TreeError) -> UsageError {
    UsageError::new(format!(
        "rayslurm keeps your runs' files (scripts, logs, Ray tokens, checkpoints) in a private directory, and this one is not safe: {e}"
    ))
    .hint(format!(
        "every directory from / down to it must be yours or root's and writable by no one else (as ssh's StrictModes wants); fix the mode, or point {} at such a directory (e.g. under your home or a per-user scratch directory)",
        env_vars::STATE_DIR
    ))
}

/// The state directory: `$RAYSLURM_STATE_DIR`, `$XDG_STATE_HOME/rayslurm`,
/// `$HOME/.local/state/rayslurm`. Relative XDG paths are ignored, as the XDG spec says.
pub(crate) fn state_dir(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, UsageError> {
    let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(env_vars::STATE_DIR) {
        return Ok(dir);
    }
    if let Some(dir) = set(env_vars::XDG_STATE_HOME).filter(|d| d.is_absolute()) {
        return Ok(dir.join("rayslurm"));
    }
    if let Some(home) = set(env_vars::HOME) {
        return Ok(home.join(".local/state/rayslurm"));
    }
    Err(
        UsageError::new("cannot tell where to keep run records: HOME is not set")
            .hint(format!("set {} to a directory", env_vars::STATE_DIR)),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn state_dir_precedence() {
        let env = |pairs: &[(&str, &str)]| {
            let map: HashMap<String, OsString> = pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
                .collect();
            move |k: &str| map.get(k).cloned()
        };
        let all = [
            ("RAYSLURM_STATE_DIR", "/s"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(state_dir(env(&all)).unwrap(), PathBuf::from("/s"));
        assert_eq!(
            state_dir(env(&all[1..])).unwrap(),
            PathBuf::from("/x/rayslurm")
        );
        assert_eq!(
            state_dir(env(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.local/state/rayslurm")
        );
        assert_eq!(
            state_dir(env(&[("RAYSLURM_STATE_DIR", ""), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.local/state/rayslurm")
        );
        assert!(state_dir(env(&[])).is_err());
    }
}
