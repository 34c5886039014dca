//! The files of one run, named from its stem (`{exp}_{MMDD}-{HHMMSS}`) in the log directory:
//! the script and log that `launch` writes, the final state and kept Ray logs that the
//! bootstrap writes, and the run's private directory for whatever else a run keeps.
//! Launcher and bootstrap both find them here, so neither invents a name of its own.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::sys::private_tree;

/// In the run's private directory: the name of a signal `rayslurm cancel --signal` sent, so
/// that the bootstrap passes a TERM, INT or HUP on to the command instead of stopping the run.
pub(crate) const SIGNAL_REQUEST: &str = "signal-request";

/// In the run's private directory: the Ray token of one attempt of one job. Every attempt
/// makes a new one (a token that leaked once is worth nothing to the next attempt), and every
/// side finds it from the job id and Slurm's restart count alone.
pub(crate) fn token_file(run_dir: &Path, job_id: &str, restart: u32) -> PathBuf {
    run_dir.join(format!("ray-auth-token-{job_id}.{restart}"))
}

/// Creates a run's private directory (mode 0700), or finds it there. One found must be the
/// user's own (it holds secrets: in a group-writable log directory another user could have
/// made it first); one the user made open to others is closed again.
pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)
        .with_context(|| format!("cannot create the run directory `{}`", dir.display()))?;
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("cannot read the run directory `{}`", dir.display()))?;
    ensure_own(dir, &meta)?;
    if !meta.is_dir() {
        anyhow::bail!("the run directory `{}` is not a directory", dir.display());
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make `{}` private", dir.display()))?;
    }
    Ok(())
}

/// The JSON in `path`, if there is such a file; one that is not the user's own private file
/// is not read (an error naming it).
pub(crate) fn read_private_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(None);
    };
    if NotPrivate::of(&meta).is_some() {
        anyhow::bail!("`{}` is not your private file: not read", path.display());
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    serde_json::from_str(&text)
        .map(Some)
        .with_context(|| format!("cannot read `{}`", path.display()))
}

/// A run's private file found there (its Ray token) must be the user's own and private.
pub(crate) fn check_private_file(path: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    match NotPrivate::of(&meta) {
        None => Ok(()),
        Some(NotPrivate::Foreign) => Err(not_yours(path, meta.uid())),
        Some(NotPrivate::Open) => anyhow::bail!(
            "`{}` is not a private file (mode {:o}): remove it, and the run makes a new one",
            path.display(),
            meta.mode() & 0o7777
        ),
    }
}

/// Why a file found where a run keeps its secrets (its token, a cluster's info) is not to be
/// trusted, if it is not: the one check every such file passes before it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotPrivate {
    /// Another user owns it (one `RAYSLURM_TRUST_UNVERIFIED_OWNER` does not name).
    Foreign,
    /// It is not a plain file (a link, say), or others may read or write it.
    Open,
}

impl NotPrivate {
    /// What is wrong with a file, from its own metadata (`symlink_metadata`: a link is looked
    /// at, not followed); `None` for the user's own private plain file.
    pub(crate) fn of(meta: &std::fs::Metadata) -> Option<Self> {
        if !private_tree::is_mine(meta.uid()) {
            Some(Self::Foreign)
        } else if !meta.is_file() || meta.mode() & 0o077 != 0 {
            Some(Self::Open)
        } else {
            None
        }
    }
}

fn ensure_own(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    if private_tree::is_mine(meta.uid()) {
        Ok(())
    } else {
        Err(not_yours(path, meta.uid()))
    }
}

/// A run's file or directory that another user owns, as the user reads it.
fn not_yours(path: &Path, owner: u32) -> anyhow::Error {
    let me = nix::unistd::geteuid().as_raw();
    anyhow::anyhow!(
        "`{}` belongs to user id {owner}, not to you (user id {me}): a run keeps its secrets there, so it must be yours; remove it or use another --log-dir",
        path.display(),
    )
}

/// The files of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunFiles {
    /// `{stem}.sh`: the sbatch script.
    pub(crate) script: PathBuf,
    /// `{stem}.log`: the job's output, appended across attempts.
    pub(crate) log: PathBuf,
    /// `{stem}.state.json`: the final state the bootstrap writes.
    pub(crate) state: PathBuf,
    /// `{stem}.ray-logs/`: where the nodes copy Ray's logs if the run fails.
    pub(crate) ray_logs: PathBuf,
    /// `{stem}.d/`: the run's private directory (mode 0700, made by the first feature that
    /// keeps something there), for everything else a run keeps beside its log: secrets,
    /// checkpoints that outlive an attempt, the outputs of a cluster's jobs.
    pub(crate) dir: PathBuf,
}

impl RunFiles {
    /// The files for a stem (`exp_1122-093005`) in `dir`.
    pub(crate) fn for_stem(dir: &Path, stem: &str) -> Self {
        Self {
            script: dir.join(format!("{stem}.sh")),
            log: dir.join(format!("{stem}.log")),
            state: dir.join(format!("{stem}.state.json")),
            ray_logs: dir.join(format!("{stem}.ray-logs")),
            dir: dir.join(format!("{stem}.d")),
        }
    }

    /// The files of the run whose state file this is.
    pub(crate) fn from_state_file(state: &Path) -> Option<Self> {
        let name = state.file_name()?.to_str()?;
        let stem = name.strip_suffix(".state.json")?;
        Some(Self::for_stem(state.parent()?, stem))
    }

    /// The files of task `task` of an array run whose files these are: a run of its own
    /// (`{stem}_{task}`: its log, final state, Ray logs and private directory), whose script
    /// is the array's. Launcher and bootstrap both name a task's files here alone.
    pub(crate) fn of_task(&self, task: u32) -> Option<Self> {
        let stem = self.stem()?;
        Some(Self {
            script: self.script.clone(),
            ..Self::for_stem(self.state.parent()?, &format!("{stem}_{task}"))
        })
    }

    /// The log as an array's `#SBATCH --output` names it: each task's own ([`Self::of_task`]),
    /// with Slurm's `%a` for the task id.
    pub(crate) fn task_log_pattern(&self) -> Option<PathBuf> {
        Some(
            self.state
                .parent()?
                .join(format!("{}_%a.log", self.stem()?)),
        )
    }

    fn stem(&self) -> Option<&str> {
        self.state
            .file_name()?
            .to_str()?
            .strip_suffix(".state.json")
    }

    /// Whether any of the run's files is there already (so the stem is taken).
    pub(crate) fn any_exists(&self) -> bool {
        [
            &self.script,
            &self.log,
            &self.state,
            &self.ray_logs,
            &self.dir,
        ]
        .iter()
        // `symlink_metadata`: a dangling link is not a free name.
        .any(|p| p.symlink_metadata().is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_file_open_to_others_or_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ray-auth-token-7.0");
        std::fs::write(&path, "t").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        check_private_file(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = check_private_file(&path).unwrap_err().to_string();
        assert!(err.contains("is not a private file (mode 640)"), "{err}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let meta = std::fs::symlink_metadata(&link).unwrap();
        assert_eq!(NotPrivate::of(&meta), Some(NotPrivate::Open));
        assert!(check_private_file(&link).is_err());
    }

    #[test]
    fn every_file_is_named_from_the_stem_and_found_from_the_state_file() {
        let files = RunFiles::for_stem(Path::new("/logs"), "x_1122-093005");
        assert_eq!(files.log, Path::new("/logs/x_1122-093005.log"));
        assert_eq!(files.dir, Path::new("/logs/x_1122-093005.d"));
        assert_eq!(RunFiles::from_state_file(&files.state), Some(files));
    }

    #[test]
    fn an_array_tasks_files_are_its_own_but_for_the_script() {
        let files = RunFiles::for_stem(Path::new("/logs"), "x_1122-093005-2");
        let task = files.of_task(3).unwrap();
        assert_eq!(task.script, files.script);
        assert_eq!(task.log, Path::new("/logs/x_1122-093005-2_3.log"));
        assert_eq!(task.state, Path::new("/logs/x_1122-093005-2_3.state.json"));
        assert_eq!(task.ray_logs, Path::new("/logs/x_1122-093005-2_3.ray-logs"));
        assert_eq!(task.dir, Path::new("/logs/x_1122-093005-2_3.d"));
        assert_eq!(
            files.task_log_pattern().unwrap(),
            Path::new("/logs/x_1122-093005-2_%a.log")
        );
        // What the bootstrap and `status` find from the task's state file: the same names.
        let found = RunFiles::from_state_file(&task.state).unwrap();
        assert_eq!((found.log, found.dir), (task.log, task.dir));
    }
}
