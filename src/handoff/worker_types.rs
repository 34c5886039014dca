//! An elastic cluster's worker types (`up --worker-type`, Ray's `available_node_types`): what
//! `up` resolved for each, and the script each type's jobs run, written into the run's private
//! directory before the job is submitted (`worker-types.json` and `worker-types/NAME.sh`), and
//! read by the head, which submits, counts and gives back jobs by type. A cluster without
//! worker types grows with jobs of its own script, one node each: [`WorkerType::plain`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::run_files::{create_private_dir, read_private_json};
use crate::sys::staged_file::Staged;

const TYPES_FILE: &str = "worker-types.json";
const SCRIPTS_DIR: &str = "worker-types";

/// The name of the one type of a cluster given none.
pub(crate) const PLAIN: &str = "worker";

/// One worker type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WorkerType {
    pub(crate) name: String,
    /// Nodes of each of its jobs.
    pub(crate) nodes_per_job: u32,
    /// Worker nodes of this type kept however idle (and replaced when lost).
    pub(crate) min_workers: u32,
    /// Worker nodes of this type at most (none: as many as the cluster's `--max-nodes` allows).
    pub(crate) max_workers: Option<u32>,
    /// Seconds a node of this type may run nothing before its job is given back (none: the
    /// cluster's `--worker-idle-timeout`).
    pub(crate) idle_timeout: Option<u32>,
    /// Slurm may preempt its jobs.
    pub(crate) preemptible: bool,
    /// Seconds before a job's time limit at which its replacement is submitted.
    pub(crate) rollover: Option<u32>,
    /// What Ray is told of each node, as far as known before one joins: `CPU`, `GPU` and the
    /// custom resources given (the rest is learned from the first node that joins).
    pub(crate) resources: BTreeMap<String, f64>,
    /// Its nodes' Ray labels (besides Ray's own `ray.io/node-group`).
    pub(crate) labels: BTreeMap<String, String>,
    /// The script its jobs run; none: the cluster's own.
    pub(crate) script: Option<PathBuf>,
}

impl WorkerType {
    /// The one type of a cluster given none: the head's own job, one node at a time (what Ray
    /// is told of its nodes learned from the first that joins).
    pub(crate) fn plain() -> Self {
        Self {
            name: PLAIN.to_owned(),
            nodes_per_job: 1,
            min_workers: 0,
            max_workers: None,
            idle_timeout: None,
            preemptible: false,
            rollover: None,
            resources: BTreeMap::new(),
            labels: BTreeMap::new(),
            script: None,
        }
    }
}

/// Where the scripts of the types go, in the run's private directory.
pub(crate) fn scripts_dir(run_dir: &Path) -> PathBuf {
    run_dir.join(SCRIPTS_DIR)
}

/// The script of type `name`.
pub(crate) fn script_path(run_dir: &Path, name: &str) -> PathBuf {
    scripts_dir(run_dir).join(format!("{name}.sh"))
}

/// Writes the types (their scripts already written) for the head to read.
pub(crate) fn write(run_dir: &Path, types: &[WorkerType]) -> Result<()> {
    create_private_dir(run_dir)?;
    let mut file = Staged::new(run_dir, "worker-types", 0o600)?;
    file.write_json(&types)?;
    file.replace(&run_dir.join(TYPES_FILE))
}

/// Writes one type's script, private, in the run's private directory.
pub(crate) fn write_script(run_dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let dir = scripts_dir(run_dir);
    create_private_dir(run_dir)?;
    create_private_dir(&dir)?;
    let path = script_path(run_dir, name);
    let mut file = Staged::new(&dir, name, 0o700)?;
    file.write_all(text.as_bytes())?;
    file.replace(&path)?;
    Ok(path)
}

/// The types `up` wrote, if any; a file that is not the user's own private file is not read.
pub(crate) fn read(run_dir: &Path) -> Result<Option<Vec<WorkerType>>> {
    read_private_json(&run_dir.join(TYPES_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_scripts_written_then_read_privately() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run.d");
        assert!(read(&run).unwrap().is_none());
        let script = write_script(&run, "gpu", "#!/bin/bash\ntrue\n").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&script), 0o700);
        assert_eq!(mode(&scripts_dir(&run)), 0o700);
        let gpu = WorkerType {
            name: "gpu".into(),
            nodes_per_job: 1,
            min_workers: 1,
            max_workers: Some(2),
            idle_timeout: Some(60),
            preemptible: true,
            rollover: Some(120),
            resources: BTreeMap::from([("GPU".to_owned(), 1.0)]),
            labels: BTreeMap::from([("zone".to_owned(), "a".to_owned())]),
            script: Some(script),
        };
        write(&run, std::slice::from_ref(&gpu)).unwrap();
        assert_eq!(read(&run).unwrap(), Some(vec![gpu]));
        let path = run.join(TYPES_FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(read(&run).is_err(), "another's writable file is not read");
    }
}
