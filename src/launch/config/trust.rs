//! The project files a user trusted with `rayslurm trust FILE`, as direnv keeps its allowed
//! `.envrc` files: one record a file under `{state}/trust/`, named after the SHA-256 of the
//! file's canonical path, holding that path and the SHA-256 of the content that was trusted.
//! A file whose content changed since is not trusted any more.
//!
//! A record says "run this as me", so the directory is made 0700 and every record written 0600
//! (whole, by rename); a record or directory that another user could have written is refused
//! rather than believed.

use std::fs::{self, DirBuilder};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::state_dir;
use crate::sys::digest::sha256_hex;
use crate::sys::staged_file::Staged;

/// One trusted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TrustRecord {
    /// The file's canonical path.
    pub(crate) path: PathBuf,
    /// The SHA-256 of the content trusted, lowercase hex.
    pub(crate) sha256: String,
    /// When, as RFC 3339.
    pub(crate) trusted_at: String,
}

/// The records, in `{state}/trust`.
#[derive(Debug, Clone)]
pub(crate) struct TrustStore {
    dir: PathBuf,
}

impl TrustStore {
    /// The store of the private tree the environment names (as the run records'), by its
    /// resolved path.
    pub(crate) fn from_env() -> Result<Self, UsageError> {
        let trust = state_dir::private_root()?
            .dir("trust")
            .map_err(state_dir::tree_error)?;
        Ok(Self::at(trust.path().to_owned()))
    }

    pub(crate) fn at(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The record file of a canonical path.
    fn record_path(&self, canonical: &Path) -> PathBuf {
        let name = sha256_hex(canonical.as_os_str().as_encoded_bytes());
        self.dir.join(format!("{name}.json"))
    }

    /// Records `content` as trusted for `canonical`, replacing an earlier record.
    pub(crate) fn record(&self, canonical: &Path, content: &[u8]) -> Result<TrustRecord> {
        self.make_dir()?;
        let record = TrustRecord {
            path: canonical.to_owned(),
            sha256: sha256_hex(content),
            trusted_at: chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        let mut staged = Staged::new(&self.dir, "trust", 0o600)?;
        staged.write_json(&record)?;
        staged.replace(&self.record_path(canonical))?;
        Ok(record)
    }

    /// The record of `canonical`, if it was trusted.
    pub(crate) fn lookup(&self, canonical: &Path) -> Result<Option<TrustRecord>> {
        let path = self.record_path(canonical);
        let Some(record) = self.read(&path)? else {
            return Ok(None);
        };
        // A record is named by its path's digest; one that names another path was not
        // written by `trust`.
        Ok(Some(record).filter(|r| r.path == canonical))
    }

    /// Forgets `canonical`; whether it was trusted.
    pub(crate) fn revoke(&self, canonical: &Path) -> Result<bool> {
        let path = self.record_path(canonical);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e).with_context(|| format!("cannot remove `{}`", path.display())),
        }
    }

    /// Every record, by path.
    pub(crate) fn list(&self) -> Result<Vec<TrustRecord>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read `{}`", self.dir.display()));
            }
        };
        let mut records = Vec::new();
        for entry in entries {
            let path = entry
                .with_context(|| format!("cannot read `{}`", self.dir.display()))?
                .path();
            if path.extension().is_some_and(|e| e == "json")
                && let Some(record) = self.read(&path)?
            {
                records.push(record);
            }
        }
        records.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(records)
    }

    /// A record file, refused when someone else could have written it or its directory.
    fn read(&self, path: &Path) -> Result<Option<TrustRecord>> {
        let text = match fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
        };
        for checked in [self.dir.as_path(), path] {
            let meta = fs::symlink_metadata(checked)
                .with_context(|| format!("cannot read `{}`", checked.display()))?;
            if meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
                return Err(UsageError::new(format!(
                    "the trust record `{}` could have been written by another user: it is owned by uid {} with mode {:04o}",
                    checked.display(),
                    meta.uid(),
                    meta.mode() & 0o7777
                ))
                .hint(format!(
                    "remove `{}` and trust your project files again with `rayslurm trust FILE`",
                    self.dir.display()
                ))
                .into());
            }
        }
        serde_json::from_slice(&text)
            .map(Some)
            .with_context(|| format!("cannot read the trust record `{}`", path.display()))
    }

    /// `{state}/trust`, 0700; the state directory above it is made with it when missing.
    fn make_dir(&self) -> Result<()> {
        if let Some(parent) = self.dir.parent() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        match DirBuilder::new().mode(0o700).create(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(e).with_context(|| format!("cannot create `{}`", self.dir.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_record_is_found_again_until_revoked_and_is_private() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TrustStore::at(tmp.path().join("state/trust"));
        let file = Path::new("/proj/rayslurm.toml");
        assert_eq!(store.lookup(file).unwrap(), None);
        let rec = store.record(file, b"[launch]\n").unwrap();
        assert_eq!(rec.sha256, sha256_hex(b"[launch]\n"));
        assert_eq!(store.lookup(file).unwrap(), Some(rec.clone()));
        assert_eq!(store.list().unwrap(), vec![rec]);
        let dir_mode = fs::metadata(tmp.path().join("state/trust")).unwrap().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let record_mode = fs::metadata(store.record_path(file)).unwrap().mode();
        assert_eq!(record_mode & 0o777, 0o600);
        assert!(store.revoke(file).unwrap());
        assert!(!store.revoke(file).unwrap());
        assert_eq!(store.lookup(file).unwrap(), None);
    }

    #[test]
    fn a_record_others_could_write_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TrustStore::at(tmp.path().join("trust"));
        let file = Path::new("/proj/rayslurm.toml");
        store.record(file, b"x").unwrap();
        let record = store.record_path(file);
        fs::set_permissions(&record, fs::Permissions::from_mode(0o666)).unwrap();
        let err = store.lookup(file).unwrap_err().to_string();
        assert!(err.contains("mode 0666"), "{err}");
        fs::set_permissions(&record, fs::Permissions::from_mode(0o600)).unwrap();
        fs::set_permissions(tmp.path().join("trust"), fs::Permissions::from_mode(0o777)).unwrap();
        let err = store.lookup(file).unwrap_err().to_string();
        assert!(err.contains("mode 0777"), "{err}");
    }
}
