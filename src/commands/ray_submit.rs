//! `rayslurm submit CLUSTER SCRIPT [ARGS]` (Ray's `ray submit`): the script is copied into
//! the cluster's private directory (its job's snapshot: 0600 in a 0700 directory, so that a
//! queued job runs it as it was at submission) and run there as a job of the cluster, with
//! `python` (`bash` for a `.sh`), followed as `exec` follows its jobs; the exit code is the
//! script's.

use std::process::ExitCode;

use anyhow::Result;

use crate::commands::settings::ray_commands::SubmitSettings;
use crate::launch::snapshot::Listing;
use crate::printer::Printer;

pub(crate) fn run(settings: &SubmitSettings, printer: &Printer) -> Result<ExitCode> {
    let listing = Listing::of_file(&settings.script)?;
    super::exec::run_listed(&settings.job, Some(listing), printer)
}
