//! `rayslurm launch --again RUN`: a new recorded run rendered from RUN's record. The record
//! (in the private tree) keeps the launch as it was resolved: its options, command,
//! environment, template text and place among other runs. The new run is rendered from these
//! by this rayslurm and submitted, recorded and followed as a launch is, under a new name: a
//! new script, log, final state and run directory, with RUN's own left as they are. Nothing
//! the first launch read is read again (not its script, its template file, the project file
//! nor `--env-file`), so no one who could write there since changes what runs.

use std::process::ExitCode;

use anyhow::Result;

use crate::commands::settings::again::AgainSettings;
use crate::commands::submit::{Submitted, submit};
use crate::error::{UsageError, show};
use crate::launch::config::LaunchConfig;
use crate::printer::Printer;
use crate::runs::follow;
use crate::runs::log_tail::Start;
use crate::runs::select;
use crate::runs::store::{self, RunStore, StoredRun};

pub(crate) fn run(settings: &AgainSettings, printer: &Printer) -> Result<ExitCode> {
    let store = RunStore::from_env()?;
    let runs = store::load_warning(&store, printer)?;
    let before = select::resolve(&runs, &settings.run, store.dir())?.latest();
    let config = config_of(before, settings)?;
    let Submitted::Job { record, stored } = submit(&config, printer)? else {
        return Ok(ExitCode::SUCCESS);
    };
    printer.info(&format!(
        "job {} runs {} (job {}) again",
        record.job_id, before.record.exp_name, before.record.job_id
    ));
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

/// The launch RUN's record keeps, with the new run's own choices; a cluster, or a run whose
/// record keeps no launch (an older rayslurm's), cannot be run again.
fn config_of(run: &StoredRun, settings: &AgainSettings) -> Result<LaunchConfig, UsageError> {
    let record = &run.record;
    let name = format!("{} (job {})", show(&record.exp_name), record.job_id);
    if record.cluster {
        return Err(
            UsageError::new(format!("{name} is a cluster, not a run to run again")).hint(format!(
                "start a cluster again with `rayslurm up {}`",
                record.exp_name
            )),
        );
    }
    let anew = "launch it anew with `rayslurm launch`";
    let Some(launch) = &record.launch else {
        return Err(UsageError::new(format!(
            "the record of {name} keeps no launch settings to render it from (an older rayslurm wrote it; its script, `{}`, is not submitted again, as another user may have changed it)",
            record.script.display()
        ))
        .hint(anew));
    };
    launch
        .config(settings.choices.clone(), record.run_dir.clone())
        .map_err(|e| {
            UsageError::new(format!(
                "the record of {name} keeps cluster options this rayslurm does not read ({e})"
            ))
            .hint(anew)
        })
}
