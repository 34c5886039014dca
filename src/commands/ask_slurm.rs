//! Asking Slurm, before anything runs, whether it would take a job (`sbatch --test-only`, one
//! call, bounded): what `launch --dry-run` and `up --dry-run` print after the script, and
//! what `up --max-nodes` checks of its worker jobs. A wrong partition, account, QOS, node
//! count or GRES is Slurm's refusal here, in its own words.

use std::time::Duration;

use anyhow::Result;

use crate::env_vars;
use crate::error::{UsageError, show};
use crate::handoff::run_files::RunFiles;
use crate::launch::config::LaunchConfig;
use crate::printer::Printer;
use crate::slurm::sbatch::{TestOnly, test_only};

/// How long sbatch is given to answer when [`env_vars::TEST_ONLY_TIMEOUT`] is unset: a
/// controller that answers nothing in this time would not take a submission either.
const DEFAULT_BOUND_SECS: u64 = 20;

/// The time sbatch is given to answer: `RAYSLURM_TEST_ONLY_TIMEOUT` seconds, else the default.
pub(crate) fn bound() -> Result<Duration, UsageError> {
    let var = env_vars::TEST_ONLY_TIMEOUT;
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&s| s > 0)
            .map(Duration::from_secs)
            .ok_or_else(|| {
                UsageError::new(format!("{var}={} is not a number of seconds", show(&v))).hint(
                    format!("e.g. `{var}=30`, or unset it for {DEFAULT_BOUND_SECS}"),
                )
            }),
        _ => Ok(Duration::from_secs(DEFAULT_BOUND_SECS)),
    }
}

/// A dry run's question to Slurm: whether it would take the script just written, as it is
/// (its `#SBATCH` lines). Slurm's answer is printed; with `--check`, a refusal or no answer
/// is an error (exit 2), else the dry run succeeds whatever Slurm said.
pub(crate) fn dry_run(config: &LaunchConfig, files: &RunFiles, printer: &Printer) -> Result<()> {
    let answer = test_only(&[], &files.script, bound()?);
    let what = if config.cluster.serve.on {
        "this cluster's job"
    } else {
        "this job"
    };
    match answer {
        TestOnly::Accepted(said) => {
            printer.info(&format!(
                "Slurm would take {what} (sbatch --test-only, nothing submitted): {said}"
            ));
            Ok(())
        }
        TestOnly::Refused(said) if config.check => Err(UsageError::new(format!(
            "Slurm would refuse {what} (sbatch --test-only, nothing submitted): {said}"
        ))
        .hint("change the option Slurm names (--partition, --account, --qos, --num-nodes, --num-gpus, ...); `sinfo` and `sacctmgr show assoc user=$USER` show what you may ask for")
        .into()),
        TestOnly::Refused(said) => {
            printer.warn(&format!(
                "Slurm would refuse {what} (sbatch --test-only, nothing submitted): {said}"
            ));
            Ok(())
        }
        TestOnly::NoAnswer(why) if config.check => Err(UsageError::new(format!(
            "--check: Slurm could not be asked whether it would take {what}: {why}"
        ))
        .hint(format!(
            "run on a Slurm login node, or give Slurm longer to answer ({}=SECS, default {DEFAULT_BOUND_SECS})",
            env_vars::TEST_ONLY_TIMEOUT
        ))
        .into()),
        TestOnly::NoAnswer(why) => {
            printer.info(&format!(
                "Slurm was not asked whether it would take {what}: {why} (the script is written; --check makes this an error)"
            ));
            Ok(())
        }
    }
}
