//! One run's record: the job `launch` submitted, its files, and how it ended once that is
//! known for good.

use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset};
use serde::{Deserialize, Serialize};

use super::RecordedEnd;
use crate::launch::config::recorded::RecordedLaunch;
use crate::launch::snapshot::SnapshotInfo;

/// The record format; bumped when a field changes meaning.
const FORMAT: u32 = 1;

/// One submitted job, as `launch` recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    #[serde(default = "format_one")]
    pub(crate) format: u32,
    pub(crate) exp_name: String,
    pub(crate) job_id: String,
    pub(crate) script: PathBuf,
    pub(crate) log: PathBuf,
    /// Where the bootstrap writes the run's [`FinalState`](crate::handoff::final_state::FinalState).
    pub(crate) state_file: PathBuf,
    /// RFC 3339, with the submitter's offset.
    pub(crate) submitted_at: String,
    /// The directory `launch` ran in.
    pub(crate) workdir: PathBuf,
    pub(crate) command: String,
    pub(crate) num_nodes: u32,
    /// How the run ended, once known for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ended: Option<RecordedEnd>,
    /// A persistent cluster (`rayslurm up`), not a command's run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) cluster: bool,
    /// The copy of rayslurm its script runs (in the private tree's `bin/`), kept while this
    /// record is; records written before it was kept name it in their script alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) binary: Option<PathBuf>,
    /// The private directory it uses when not its own: that of the run it follows (`--after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run_dir: Option<PathBuf>,
    /// The copy of the workdir the run works in (`--snapshot`), with its git commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) snapshot: Option<SnapshotInfo>,
    /// An elastic cluster's `--max-nodes`: nodes in all, the head's allocation included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_nodes: Option<u32>,
    /// The image its programs run in (`--container-image`), as the script names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) container_image: Option<String>,
    /// The launch's settings as resolved: `launch --again` renders the new run from these,
    /// never from a script or file read again. Records of `up` and of older builds have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) launch: Option<Box<RecordedLaunch>>,
    /// A task of a job array (`launch --array`): the array's job id; the task's own
    /// (`job_id`) is Slurm's `JOBID_TASK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) array_job: Option<String>,
}

fn format_one() -> u32 {
    FORMAT
}

impl RunRecord {
    pub(crate) fn new(
        exp_name: &str,
        job_id: &str,
        files: &crate::handoff::run_files::RunFiles,
        submitted_at: DateTime<FixedOffset>,
        workdir: &Path,
        command: &str,
        num_nodes: u32,
    ) -> Self {
        Self {
            format: FORMAT,
            exp_name: exp_name.to_owned(),
            job_id: job_id.to_owned(),
            script: files.script.clone(),
            log: files.log.clone(),
            state_file: files.state.clone(),
            submitted_at: submitted_at.to_rfc3339(),
            workdir: workdir.to_owned(),
            command: command.to_owned(),
            num_nodes,
            ended: None,
            cluster: false,
            binary: None,
            run_dir: None,
            snapshot: None,
            max_nodes: None,
            container_image: None,
            launch: None,
            array_job: None,
        }
    }

    pub(crate) fn submitted(&self) -> Option<DateTime<FixedOffset>> {
        DateTime::parse_from_rfc3339(&self.submitted_at).ok()
    }

    /// The run's files, named from its state file.
    pub(crate) fn files(&self) -> Option<crate::handoff::run_files::RunFiles> {
        crate::handoff::run_files::RunFiles::from_state_file(&self.state_file)
    }

    /// The run's private directory (`RAYSLURM_RUN_DIR` inside the job): its own, or the one it
    /// took over from the run it follows.
    pub(crate) fn run_dir(&self) -> Option<PathBuf> {
        self.run_dir.clone().or_else(|| self.files().map(|f| f.dir))
    }

    /// What tells this run's job from a later job given the same id.
    pub(crate) fn submission(&self) -> crate::slurm::query::Submission {
        crate::slurm::query::Submission {
            script: self.script.clone(),
            at: self.submitted(),
        }
    }

    /// Why a record read from disk cannot be used, if it cannot.
    pub(super) fn defect(&self) -> Option<String> {
        if self.job_id.is_empty() || !self.job_id.chars().all(|c| c.is_ascii_digit() || c == '_') {
            return Some(format!(
                "job id `{}` is not a Slurm job id",
                self.job_id.escape_debug()
            ));
        }
        if self.submitted().is_none() {
            return Some(format!(
                "submit time `{}` is not RFC 3339",
                self.submitted_at.escape_debug()
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::samples::record;

    #[test]
    fn records_without_an_end_do_not_mention_it() {
        let text = serde_json::to_string(&record("a", "10", 1)).unwrap();
        assert!(!text.contains("ended"), "{text}");
    }
}
