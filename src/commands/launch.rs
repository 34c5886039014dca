//! `rayslurm launch`: config -> job spec -> rendered script -> submission -> run record
//! (and, with `--follow`, the job followed until it ends).

use std::process::ExitCode;

use anyhow::Result;

use crate::commands::submit::{Submitted, submit};
use crate::launch::config::LaunchConfig;
use crate::printer::Printer;
use crate::runs::follow;
use crate::runs::log_tail::Start;

pub(crate) fn run(config: &LaunchConfig, printer: &Printer) -> Result<ExitCode> {
    let Submitted::Job { record, stored } = submit(config, printer)? else {
        return Ok(ExitCode::SUCCESS);
    };
    if !config.follow {
        return Ok(ExitCode::SUCCESS);
    }
    let request = follow::Request {
        record: &record,
        stored: stored.as_deref().map(|(store, run)| (store, run)),
        start: Start::Beginning,
        cancel_on_interrupt: config.cancel_on_interrupt,
    };
    follow::follow(&request, printer)
}
