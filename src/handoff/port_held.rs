//! A port of a cluster that another user holds, as the cluster's head found it (`port-held` in
//! the run's private directory): the head writes it when its check before a request finds a
//! listener of another uid on the dashboard's port, on any address of the node, and removes
//! it once the port is the user's again. The login node reads it before it sends a cluster
//! anything, so that `exec`, `queue` and `down` say why the token goes nowhere instead of
//! failing on a connection that was closed.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::handoff::run_files::NotPrivate;
use crate::sys::staged_file::Staged;

const FILE: &str = "port-held";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PortHeld {
    /// The job's attempt (Slurm's restart count) whose head found it.
    pub(crate) attempt: u32,
    /// What the head's check said: the port, the address, the other uid.
    pub(crate) message: String,
}

impl PortHeld {
    fn path(run_dir: &Path) -> PathBuf {
        run_dir.join(FILE)
    }

    pub(crate) fn write(&self, run_dir: &Path) -> Result<()> {
        let mut file = Staged::new(run_dir, "port-held", 0o600)?;
        file.write_json(self)?;
        file.replace(&Self::path(run_dir))
    }

    /// Removes it: the port is the user's again.
    pub(crate) fn clear(run_dir: &Path) {
        let _ = std::fs::remove_file(Self::path(run_dir));
    }

    /// What the head found, if it found a port held; a file that is not the user's own private
    /// file is none (it could only keep the user from their cluster, never send anything).
    pub(crate) fn read(run_dir: &Path) -> Option<Self> {
        let path = Self::path(run_dir);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if NotPrivate::of(&meta).is_some() {
            return None;
        }
        serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_read_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(PortHeld::read(dir.path()), None);
        let held = PortHeld {
            attempt: 1,
            message: "port 41001 on 10.0.0.5 is held by user id 1002".into(),
        };
        held.write(dir.path()).unwrap();
        assert_eq!(PortHeld::read(dir.path()), Some(held));
        PortHeld::clear(dir.path());
        assert_eq!(PortHeld::read(dir.path()), None);
    }

    #[test]
    fn a_file_open_to_others_is_not_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = PortHeld::path(dir.path());
        std::fs::write(&path, r#"{"attempt": 0, "message": "planted"}"#).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(PortHeld::read(dir.path()), None);
    }
}
