//! The files of one run, named from its stem (`{exp}_{MMDD}-{HHMMSS}`) in the log directory:
//! the script and log that `launch` writes, the final state and kept Ray logs that the
//! bootstrap writes, and the run's private directory for whatever else a run keeps.
//! Launcher and bootstrap both find them here, so neither invents a name of its own.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Creates a run's private directory (mode 0700), or finds it there.
pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)
        .with_context(|| format!("cannot create the run directory `{}`", dir.display()))
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
        .any(|p| p.exists())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_named_from_the_stem_and_found_from_the_state_file() {
        let files = RunFiles::for_stem(Path::new("/logs"), "x_1122-093005");
        assert_eq!(files.log, Path::new("/logs/x_1122-093005.log"));
        assert_eq!(files.dir, Path::new("/logs/x_1122-093005.d"));
        assert_eq!(RunFiles::from_state_file(&files.state), Some(files));
    }
}
