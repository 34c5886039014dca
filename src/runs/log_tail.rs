//! Reading a job's log as it grows, the way `tail -F` does.
//!
//! The log is written on a compute node and read here, often over a shared filesystem: it may
//! not exist yet, may arrive in bursts, may be truncated or replaced, may be deleted. Each
//! [`LogTail::pump`] opens the file afresh (which also makes NFS revalidate it), notices a
//! shorter or different file and starts again from its beginning, and copies whatever is new.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::sys::file_tail::start_of_last_lines;

/// Where reading starts when the file is first seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    Beginning,
    /// The last N lines.
    LastLines(u64),
}

/// Something about the file that a follower tells the user once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TailEvent {
    /// It was shorter than what was read already: reading again from its start.
    Truncated,
    /// Another file now has its name: reading that one from its start.
    Replaced,
    /// It existed and now does not.
    Deleted,
    /// It exists again after being deleted.
    Reappeared,
}

/// A read position in a log file.
#[derive(Debug)]
pub(crate) struct LogTail {
    path: PathBuf,
    start: Start,
    offset: u64,
    /// (device, inode) of the file being read, once it has been seen.
    identity: Option<(u64, u64)>,
    deleted: bool,
}

/// What one pump did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pumped {
    pub(crate) bytes: u64,
    pub(crate) event: Option<TailEvent>,
}

impl LogTail {
    pub(crate) fn new(path: &Path, start: Start) -> Self {
        Self {
            path: path.to_owned(),
            start,
            offset: 0,
            identity: None,
            deleted: false,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file has been seen at all.
    pub(crate) fn seen(&self) -> bool {
        self.identity.is_some()
    }

    /// Copies what is new in the file to `out`. A missing file is not an error; write errors
    /// on `out` (a closed pipe) and read errors are.
    pub(crate) fn pump(&mut self, out: &mut dyn Write) -> io::Result<Pumped> {
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let event =
                    (self.identity.is_some() && !self.deleted).then_some(TailEvent::Deleted);
                self.deleted |= event.is_some();
                return Ok(Pumped { bytes: 0, event });
            }
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        let identity = (meta.dev(), meta.ino());
        let mut event = None;
        match self.identity {
            None => {
                self.offset = match self.start {
                    Start::Beginning => 0,
                    Start::LastLines(n) => start_of_last_lines(&mut file, n)?,
                };
            }
            Some(_) if self.deleted => {
                event = Some(TailEvent::Reappeared);
                self.offset = 0;
            }
            Some(old) if old != identity => {
                event = Some(TailEvent::Replaced);
                self.offset = 0;
            }
            Some(_) if meta.len() < self.offset => {
                event = Some(TailEvent::Truncated);
                self.offset = 0;
            }
            Some(_) => {}
        }
        self.identity = Some(identity);
        self.deleted = false;
        if meta.len() <= self.offset && event.is_none() {
            return Ok(Pumped { bytes: 0, event });
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let bytes = copy_all(&mut file, out)?;
        self.offset += bytes;
        Ok(Pumped { bytes, event })
    }
}

/// Copies to the end of `file`, flushing `out` so the lines show at once.
fn copy_all(file: &mut File, out: &mut dyn Write) -> io::Result<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.write_all(&buf[..n])?;
        total += n as u64;
    }
    out.flush()?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pump(tail: &mut LogTail) -> (String, Option<TailEvent>) {
        let mut out = Vec::new();
        let p = tail.pump(&mut out).unwrap();
        assert_eq!(p.bytes as usize, out.len());
        (String::from_utf8(out).unwrap(), p.event)
    }

    #[test]
    fn follows_growth_truncation_replacement_and_deletion() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.log");
        let mut tail = LogTail::new(&path, Start::Beginning);
        assert_eq!(pump(&mut tail), (String::new(), None));
        assert!(!tail.seen());

        std::fs::write(&path, "one\ntw").unwrap();
        assert_eq!(pump(&mut tail), ("one\ntw".into(), None));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"o\nthree\n").unwrap();
        assert_eq!(pump(&mut tail), ("o\nthree\n".into(), None));
        assert_eq!(pump(&mut tail), (String::new(), None));

        std::fs::write(&path, "new\n").unwrap();
        assert_eq!(
            pump(&mut tail),
            ("new\n".into(), Some(TailEvent::Truncated))
        );

        let other = dir.path().join("other");
        std::fs::write(&other, "replaced\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(
            pump(&mut tail),
            ("replaced\n".into(), Some(TailEvent::Replaced))
        );

        std::fs::remove_file(&path).unwrap();
        assert_eq!(pump(&mut tail), (String::new(), Some(TailEvent::Deleted)));
        assert_eq!(pump(&mut tail), (String::new(), None), "said once");

        std::fs::write(&path, "back\n").unwrap();
        assert_eq!(
            pump(&mut tail),
            ("back\n".into(), Some(TailEvent::Reappeared))
        );
    }

    #[test]
    fn starts_at_the_last_lines_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.log");
        std::fs::write(&path, "1\n2\n3\n").unwrap();
        let mut tail = LogTail::new(&path, Start::LastLines(1));
        assert_eq!(pump(&mut tail), ("3\n".into(), None));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"4\n").unwrap();
        assert_eq!(pump(&mut tail), ("4\n".into(), None));
    }

    #[test]
    fn a_closed_pipe_is_an_error() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.log");
        std::fs::write(&path, "x\n").unwrap();
        let err = LogTail::new(&path, Start::Beginning)
            .pump(&mut Closed)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
