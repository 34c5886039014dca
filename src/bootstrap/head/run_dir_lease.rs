//! One attempt at a time in a run directory.
//!
//! Runs launched `--after` the same run inherit its directory (`RAYSLURM_RUN_DIR`), and two of
//! them may run at once and overwrite each other's checkpoints. So an attempt holds a lease on
//! the directory while it runs: a file made with `O_EXCL` (atomic on NFS v3+ and Lustre, where
//! `flock` is not to be relied on) that names the holder, `JOB.RESTART`. A lease found there is
//! another holder's: if Slurm says that job is no longer running (a holder killed before it
//! could let go), the lease is stale and replaced; if it runs, this attempt does not start.
//!
//! Left open: two attempts that both find the same stale lease at the same moment may both
//! replace it. A stale lease is left only by a holder that was killed outright.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::slurm::query::{self, Phase};

/// The lease's name in the run directory.
pub(crate) const LEASE: &str = "attempt-lease";

/// Who holds a lease: one attempt of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    pub(crate) job_id: String,
    pub(crate) restart: u32,
}

impl Holder {
    fn line(&self) -> String {
        format!("{}.{}\n", self.job_id, self.restart)
    }

    fn parse(text: &str) -> Option<Self> {
        let (job_id, restart) = text.trim().rsplit_once('.')?;
        (!job_id.is_empty()).then_some(())?;
        Some(Self {
            job_id: job_id.to_owned(),
            restart: restart.parse().ok()?,
        })
    }
}

/// What Slurm says of a lease holder's job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// Running or completing: it may still write in the directory.
    Alive,
    /// Pending, ended or forgotten: it holds nothing.
    Gone,
    /// Slurm could not be asked; the message says why.
    Unknown(String),
}

/// Liveness from `squeue`.
pub(crate) fn slurm_liveness(job_id: &str) -> Liveness {
    match query::squeue(&[job_id]) {
        Ok(entries) => match query::own_line(&entries, job_id).map(|e| e.state.phase()) {
            Some(Phase::Running | Phase::Ending) => Liveness::Alive,
            _ => Liveness::Gone,
        },
        Err(e) => Liveness::Unknown(e.to_string()),
    }
}

/// A lease this attempt holds; [`Lease::release`] lets go of it.
#[derive(Debug)]
pub(crate) struct Lease {
    path: PathBuf,
    holder: Holder,
}

/// Why the lease could not be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LeaseError {
    #[error(
        "the run directory `{dir}` is in use by job {other} (attempt {restart}), which is still running: two runs that share a run directory (each `--after` the same run) would overwrite each other's checkpoints; wait for job {other} to end (`--after {other}`), or cancel it (`scancel {other}`)",
        dir = .dir.display(),
        other = .other.job_id,
        restart = .other.restart
    )]
    InUse { dir: PathBuf, other: Holder },
    #[error(
        "the run directory `{dir}` is held by job {other} (attempt {restart}), and Slurm cannot say whether it still runs ({why}); try again once squeue answers, or remove `{lease}` if job {other} has ended",
        dir = .dir.display(),
        other = .other.job_id,
        restart = .other.restart,
        lease = .dir.join(LEASE).display()
    )]
    Unknown {
        dir: PathBuf,
        other: Holder,
        why: String,
    },
    #[error("cannot take the lease `{}` on the run directory: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "`{}` is not a lease rayslurm wrote (a symbolic link, or not `JOB.RESTART`); remove it if no run uses the directory",
        .0.display()
    )]
    Foreign(PathBuf),
}

impl Lease {
    /// Takes the lease on `dir` for `me`, replacing a stale one (`alive` says which holders
    /// still run). An earlier attempt of the same job is always stale: this one replaces it.
    pub(crate) fn take(
        dir: &Path,
        me: &Holder,
        alive: &dyn Fn(&str) -> Liveness,
    ) -> Result<Self, LeaseError> {
        let path = dir.join(LEASE);
        let io = |source| LeaseError::Io {
            path: path.clone(),
            source,
        };
        // A few tries: a stale lease is removed, a lease being written is waited for.
        for _ in 0..3 {
            match create(&path, me) {
                Ok(()) => {
                    return Ok(Self {
                        path,
                        holder: me.clone(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            }
            let other = match read(&path) {
                Ok(Some(other)) => other,
                // Gone in between: its holder let go.
                Ok(None) => continue,
                Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
                    return Err(LeaseError::Foreign(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(LeaseError::Foreign(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    continue;
                }
                Err(e) => return Err(io(e)),
            };
            if other.job_id != me.job_id {
                match alive(&other.job_id) {
                    Liveness::Alive => {
                        return Err(LeaseError::InUse {
                            dir: dir.to_owned(),
                            other,
                        });
                    }
                    Liveness::Unknown(why) => {
                        return Err(LeaseError::Unknown {
                            dir: dir.to_owned(),
                            other,
                            why,
                        });
                    }
                    Liveness::Gone => {}
                }
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(e)),
            }
        }
        Err(io(std::io::Error::other(
            "it was taken by another run again and again",
        )))
    }

    /// Lets go of the lease, if it is still this attempt's.
    pub(crate) fn release(self) {
        release_if_held(&self.path, &self.holder);
    }
}

/// Removes the lease at `path` if `holder` holds it (for the watchdog, which did not take it).
pub(crate) fn release_if_held(path: &Path, holder: &Holder) {
    if read(path).ok().flatten().as_ref() == Some(holder) {
        let _ = std::fs::remove_file(path);
    }
}

/// Makes the lease file, 0600, never following a link, failing if it is there.
fn create(path: &Path, me: &Holder) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    file.write_all(me.line().as_bytes())?;
    file.sync_all()
}

/// The lease's holder; `Ok(None)` if there is no lease, `InvalidData` if it is not ours.
fn read(path: &Path) -> std::io::Result<Option<Holder>> {
    use std::io::Read;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut text = String::new();
    file.take(256).read_to_string(&mut text)?;
    // A holder that made the file but has not written it yet reads as empty: not foreign.
    if text.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            "the lease is being written",
        ));
    }
    Holder::parse(&text)
        .map(Some)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not a lease"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn holder(job: &str, restart: u32) -> Holder {
        Holder {
            job_id: job.into(),
            restart,
        }
    }

    #[test]
    fn a_second_live_holder_is_refused_naming_the_other_job_and_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let asked = RefCell::new(Vec::new());
        let alive = |job: &str| {
            asked.borrow_mut().push(job.to_owned());
            Liveness::Alive
        };
        let first = Lease::take(dir.path(), &holder("101", 0), &alive).unwrap();
        let lease = dir.path().join(LEASE);
        assert_eq!(std::fs::read_to_string(&lease).unwrap(), "101.0\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&lease).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let err = Lease::take(dir.path(), &holder("102", 0), &alive).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, LeaseError::InUse { .. }), "{message}");
        assert!(message.contains("job 101 (attempt 0)"), "{message}");
        assert!(
            message.contains(&format!("`{}`", dir.path().display())),
            "{message}"
        );
        assert_eq!(*asked.borrow(), ["101"]);
        first.release();
        assert!(!lease.exists());
        Lease::take(dir.path(), &holder("102", 0), &alive).unwrap();
        assert_eq!(std::fs::read_to_string(&lease).unwrap(), "102.0\n");
    }

    #[test]
    fn a_stale_lease_is_replaced_and_an_earlier_attempt_of_the_job_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join(LEASE);
        std::fs::write(&lease, "101.0\n").unwrap();
        let gone = |_: &str| Liveness::Gone;
        Lease::take(dir.path(), &holder("102", 0), &gone).unwrap();
        assert_eq!(std::fs::read_to_string(&lease).unwrap(), "102.0\n");
        // The same job requeued: its earlier attempt holds nothing, whatever Slurm says.
        let alive = |_: &str| Liveness::Alive;
        let next = Lease::take(dir.path(), &holder("102", 1), &alive).unwrap();
        assert_eq!(std::fs::read_to_string(&lease).unwrap(), "102.1\n");
        // The watchdog lets go only of its own attempt's lease.
        release_if_held(&lease, &holder("102", 0));
        assert!(lease.exists());
        release_if_held(&lease, &holder("102", 1));
        assert!(!lease.exists());
        next.release();
    }

    #[test]
    fn a_holder_slurm_cannot_tell_about_or_a_foreign_file_stops_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join(LEASE);
        std::fs::write(&lease, "101.0\n").unwrap();
        let unknown = |_: &str| Liveness::Unknown("squeue: timed out".into());
        let err = Lease::take(dir.path(), &holder("102", 0), &unknown).unwrap_err();
        assert!(err.to_string().contains("squeue: timed out"), "{err}");
        assert_eq!(std::fs::read_to_string(&lease).unwrap(), "101.0\n");
        std::fs::remove_file(&lease).unwrap();
        // A planted link is never followed, nor replaced.
        let target = dir.path().join("results.csv");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, &lease).unwrap();
        let gone = |_: &str| Liveness::Gone;
        let err = Lease::take(dir.path(), &holder("102", 0), &gone).unwrap_err();
        assert!(matches!(err, LeaseError::Foreign(_)), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }

    #[test]
    fn holders_round_trip() {
        assert_eq!(Holder::parse("4242.3\n"), Some(holder("4242", 3)));
        assert_eq!(Holder::parse("4242_7.0"), Some(holder("4242_7", 0)));
        for bad in ["", "4242", ".1", "4242.x"] {
            assert_eq!(Holder::parse(bad), None, "{bad:?}");
        }
    }
}
