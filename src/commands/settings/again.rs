//! `launch --again RUN` resolved: the run to run again and what goes with it. Every other
//! option of `launch` is refused when typed: the new run is RUN's launch as its record keeps it.

use crate::cli::LaunchArgs;
use crate::error::{UsageError, show};
use crate::launch::config::recorded::AgainChoices;
use crate::launch::config::{Sources, check_log_dir_text};

/// The options that go with `--again` (the global ones included); any other one typed is
/// refused.
const GOES_WITH: &[&str] = &[
    "--again",
    "--dry-run",
    "--check",
    "--json",
    "--follow",
    "--cancel-on-interrupt",
    "--log-dir",
    "--quiet",
    "--verbose",
    "--via-allocation",
];

/// `launch --again`, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgainSettings {
    /// The run to run again: an experiment name (its latest run) or a job id.
    pub(crate) run: String,
    /// What the new run chooses for itself; the rest is the recorded run's.
    pub(crate) choices: AgainChoices,
}

impl AgainSettings {
    /// `None` without `--again`.
    pub(crate) fn resolve(args: &LaunchArgs, src: &Sources) -> Result<Option<Self>, UsageError> {
        let Some(run) = &args.again else {
            return Ok(None);
        };
        if let Some(other) = args.given.iter().find(|g| !GOES_WITH.contains(&g.as_str())) {
            return Err(UsageError::new(format!(
                "{other} does not go with --again: the run is made again from {}'s record as it was launched (its options, command and environment)",
                show(run)
            ))
            .hint(format!(
                "drop {other}, or launch anew with the options you want (`rayslurm launch --exp-name NAME --command CMD {other} ...`); --again takes only --follow, --cancel-on-interrupt, --json, --dry-run, --check and --log-dir"
            )));
        }
        if run.trim().is_empty() {
            return Err(UsageError::new("--again is empty")
                .hint("name the run to run again: its experiment name or job id"));
        }
        let (log_dir, log_dir_is_default) = super::job::resolve_log_dir(&args.job.log_dir, src);
        check_log_dir_text(&log_dir)?;
        Ok(Some(Self {
            run: run.clone(),
            choices: AgainChoices {
                log_dir,
                log_dir_is_default,
                dry_run: args.dry_run || args.check,
                check: args.check,
                json: args.json,
                follow: args.follow,
                cancel_on_interrupt: args.cancel_on_interrupt,
            },
        }))
    }
}
