//! Files that appear whole or not at all: written to a temporary file in the directory of their
//! final name, then moved into place with one rename, so a reader (or a crash) never sees half
//! a file. The one way every file rayslurm keeps is written: scripts, run records, final
//! states, a cluster's `cluster.json` and the copy of the binary for the nodes.
//!
//! The content is on disk (`fsync`) before the rename: many of these files are written on a
//! compute node and read on the login node over NFS, where a rename that reaches the server
//! before the data lets a reader see the new name with an empty file.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use tempfile::NamedTempFile;

/// A file being written, not yet in place.
pub(crate) struct Staged {
    tmp: NamedTempFile,
    dir: PathBuf,
}

impl Staged {
    /// An empty temporary file `.{prefix}*` in `dir`, with permissions `mode`.
    pub(crate) fn new(dir: &Path, prefix: &str, mode: u32) -> Result<Self> {
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{prefix}-"))
            .permissions(std::fs::Permissions::from_mode(mode))
            .tempfile_in(dir)
            .with_context(|| format!("cannot write in `{}`", dir.display()))?;
        Ok(Self {
            tmp,
            dir: dir.to_owned(),
        })
    }

    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.tmp
            .write_all(bytes)
            .and_then(|()| self.tmp.flush())
            .with_context(|| format!("cannot write in `{}`", self.dir.display()))
    }

    /// Writes `value` as pretty JSON and a newline.
    pub(crate) fn write_json(&mut self, value: &impl Serialize) -> Result<()> {
        let mut text = serde_json::to_vec_pretty(value)?;
        text.push(b'\n');
        self.write_all(&text)
    }

    /// Puts the content on disk, so that the name never arrives before it.
    fn sync(&self) -> Result<()> {
        self.tmp
            .as_file()
            .sync_all()
            .with_context(|| format!("cannot write in `{}`", self.dir.display()))
    }

    /// Moves the file to `dest`, replacing whatever is there. The file is closed first: a
    /// program executed under its new name while this process still held it open for writing
    /// would fail with "Text file busy" (two launches at once both placing the binary's copy,
    /// one's job starting in between: seen in the e2e suite).
    pub(crate) fn replace(self, dest: &Path) -> Result<()> {
        self.sync()?;
        self.tmp
            .into_temp_path()
            .persist(dest)
            .map_err(|e| e.error)
            .with_context(|| format!("cannot write `{}`", dest.display()))
    }

    /// Moves the file to `dest` only if nothing is there: `Ok(None)` once in place, or the
    /// file back (`Ok(Some)`) when the name is taken, to try another.
    pub(crate) fn place_new(self, dest: &Path) -> Result<Option<Self>> {
        self.sync()?;
        let dir = self.dir;
        match self.tmp.persist_noclobber(dest) {
            Ok(_) => Ok(None),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                Ok(Some(Self { tmp: e.file, dir }))
            }
            Err(e) => Err(e.error).with_context(|| format!("cannot create `{}`", dest.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn appears_whole_with_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("run.sh");
        let mut f = Staged::new(dir.path(), "rayslurm", 0o755).unwrap();
        f.write_all(b"#!/bin/bash\n").unwrap();
        assert!(!dest.exists(), "nothing in place before the move");
        assert!(f.place_new(&dest).unwrap().is_none());
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "#!/bin/bash\n");
        let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        assert_eq!(names(dir.path()), ["run.sh"], "no temporary file left");
    }

    #[test]
    fn place_new_never_replaces_and_gives_the_file_back() {
        let dir = tempfile::tempdir().unwrap();
        let taken = dir.path().join("a.json");
        std::fs::write(&taken, "theirs").unwrap();
        let mut f = Staged::new(dir.path(), "run", 0o600).unwrap();
        f.write_json(&serde_json::json!({"job_id": "7"})).unwrap();
        let f = f.place_new(&taken).unwrap().expect("the name is taken");
        assert_eq!(std::fs::read_to_string(&taken).unwrap(), "theirs");
        let free = dir.path().join("b.json");
        assert!(f.place_new(&free).unwrap().is_none());
        assert_eq!(
            std::fs::read_to_string(&free).unwrap(),
            "{\n  \"job_id\": \"7\"\n}\n"
        );
        assert_eq!(names(dir.path()), ["a.json", "b.json"]);
    }

    #[test]
    fn replace_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("state.json");
        std::fs::write(&dest, "old").unwrap();
        let mut f = Staged::new(dir.path(), "state", 0o600).unwrap();
        f.write_all(b"new").unwrap();
        f.replace(&dest).unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "new");
        assert_eq!(names(dir.path()), ["state.json"]);
    }

    #[test]
    fn a_missing_directory_is_named() {
        let err = Staged::new(Path::new("/nonexistent/dir"), "x", 0o600)
            .err()
            .unwrap();
        assert!(format!("{err:#}").contains("cannot write in `/nonexistent/dir`"));
    }
}
