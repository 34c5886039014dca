//! `rayslurm cancel TARGET`: cancel a run (the latest of an experiment) and confirm it stopped.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::CancelArgs;
use crate::printer::Printer;
use crate::runs::cancel::{self, Cancelled};
use crate::runs::select;
use crate::runs::status;
use crate::runs::store::{self, RunStore};

pub(crate) fn run(args: &CancelArgs, printer: &Printer) -> Result<ExitCode> {
    let store = RunStore::from_env()?;
    let runs = store::load_warning(&store, printer)?;
    let run = select::resolve(&runs, &args.target, store.dir())?.latest();
    let job = format!("job {} ({})", run.record.job_id, run.record.exp_name);
    if let Some(end) = &run.record.ended {
        printer.info(&format!(
            "{job} already ended ({}); nothing to cancel",
            end.state
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let warn = |m: &str| printer.warn(m);
    let (status, cancelled, why) = match cancel::cancel(&run.record, &warn)? {
        Cancelled::Stopped(status) => (status, true, String::new()),
        Cancelled::AlreadyEnded(status) => (status, false, String::new()),
        Cancelled::IdReused(status) => (
            status,
            false,
            format!(
                " (Slurm has given job id {} to a newer job, which was left alone)",
                run.record.job_id
            ),
        ),
    };
    if let Err(e) = status::remember(&store, run, &status) {
        printer.warn(&format!(
            "could not keep the run's end in its record: {e:#}"
        ));
    }
    if cancelled {
        printer.result(&run.record.job_id);
        printer.info(&format!("cancelled {job}: it is {}", status.label()));
    } else {
        printer.info(&format!(
            "{job} already ended ({}); nothing to cancel{why}",
            status.label()
        ));
    }
    Ok(ExitCode::SUCCESS)
}
