//! `rayslurm call-outcome RUN` or `--dir DIR` (hidden): the outcome a submitted Python call wrote in its run's
//! private directory (`rayslurm-call/result.pickle`), as its bytes on stdout. The Python API
//! reads it from there itself on the login node; from a laptop (`host=`) it asks this command
//! over the SSH connection. Exit 1 when the run wrote none (it ended before the call did).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::clusters::target::Target;
use crate::error::{UsageError, show};
use crate::printer::Printer;

/// Where the runner (`python/rayslurm/_call.py`) writes the call's outcome in the run's
/// private directory.
const OUTCOME: &str = "rayslurm-call/result.pickle";

pub(crate) fn run(target: Option<&str>, dir: Option<&Path>, printer: &Printer) -> Result<ExitCode> {
    let dir = match (target, dir) {
        (_, Some(dir)) => dir.to_owned(),
        (Some(target), None) => run_dir(target, printer)?,
        (None, None) => return Err(UsageError::new("name a run or --dir").into()),
    };
    let path = dir.join(OUTCOME);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "error: no outcome was written: `{}` is missing",
                path.display()
            );
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The private directory of the run `target` names.
fn run_dir(target: &str, printer: &Printer) -> Result<PathBuf> {
    let (_, Target::Run(run)) = Target::open(target, printer)? else {
        return Err(UsageError::new(format!(
            "{} is a cluster: a call on a cluster writes its outcome beside its copy (--dir)",
            show(target)
        ))
        .into());
    };
    Ok(run
        .record
        .files()
        .map(|f| f.dir)
        .ok_or_else(|| UsageError::new(format!("the record of run {} is damaged", show(target))))?)
}
