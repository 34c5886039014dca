//! `exec --per-node`: the job's entrypoint is a driver (`exec_ranks.py`, carried in this
//! binary) that Ray runs on the cluster's head. It reserves a bundle on each of the ranks'
//! nodes (a STRICT_SPREAD placement group: the job waits in Ray's queue until that many nodes
//! have room), runs the setup then the command on every rank with the rank environment of a
//! `--per-node` launch, prefixes each line with its rank, and stops every rank when one fails
//! or the job is cancelled. The driver and the job's spec are written beside the job's record,
//! in the cluster's private run directory.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::handoff::job_env::{RANK_VARIABLES, RankValue};
use crate::sys::staged_file::Staged;

const DRIVER: &str = include_str!("exec_ranks.py");

/// CPUs a rank reserves when `--num-cpus` is not given (a bundle must hold something).
pub(crate) const DEFAULT_RANK_CPUS: f64 = 1.0;

/// What the driver reads (argv[1]).
#[derive(Debug, Serialize)]
pub(crate) struct RankSpec<'a> {
    pub(crate) nodes: u32,
    pub(crate) cpus: f64,
    pub(crate) gpus: Option<f64>,
    /// Bytes of Ray's `memory` resource per rank.
    pub(crate) memory: Option<u64>,
    pub(crate) setup: Option<&'a str>,
    pub(crate) command: &'a str,
    pub(crate) workdir: &'a Path,
    /// `RAYSLURM_NUM_GPUS_PER_NODE` of a rank: the GPUs it reserved.
    pub(crate) gpus_per_node: String,
    /// Every rank variable's name and what it holds.
    pub(crate) variables: &'static [(&'static str, RankValue)],
}

impl<'a> RankSpec<'a> {
    pub(crate) fn new(nodes: u32, cpus: Option<f64>, gpus: Option<f64>, command: &'a str) -> Self {
        Self {
            nodes,
            cpus: cpus.unwrap_or(DEFAULT_RANK_CPUS),
            gpus,
            memory: None,
            setup: None,
            command,
            workdir: Path::new("."),
            gpus_per_node: gpus.unwrap_or(0.0).to_string(),
            variables: RANK_VARIABLES,
        }
    }
}

/// The driver's and the spec's paths for the job whose output goes to `log` (`jobs/N.log`).
fn paths(log: &Path) -> (PathBuf, PathBuf) {
    (
        log.with_extension("ranks.py"),
        log.with_extension("ranks.json"),
    )
}

/// Writes the driver and `spec` beside the job's log (both private to the user).
pub(crate) fn write(log: &Path, spec: &RankSpec) -> Result<()> {
    let dir = log.parent().unwrap_or(Path::new("."));
    let (driver, spec_path) = paths(log);
    let mut file = Staged::new(dir, "ranks", 0o600)?;
    file.write_all(DRIVER.as_bytes())?;
    file.replace(&driver)?;
    let mut file = Staged::new(dir, "ranks", 0o600)?;
    file.write_json(spec)?;
    file.replace(&spec_path)
}

/// The program part of the entrypoint: Ray's Python (the job inherits the environment the
/// cluster's Ray was started in) running the driver on the spec.
pub(crate) fn program(log: &Path) -> String {
    let (driver, spec) = paths(log);
    format!(
        "python3 {} {}",
        crate::sys::quote::shell_quote(&driver.display().to_string()),
        crate::sys::quote::shell_quote(&spec.display().to_string())
    )
}
