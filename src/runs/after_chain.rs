//! `launch --after RUN` and `--singleton`: where a new run stands among the others. A run after
//! another waits for it to end, however it ends (Slurm's `afterany`), and keeps using its
//! private directory, so a training written as a chain of allocations resumes from the last
//! one's checkpoints. A run whose predecessor has already ended starts at once: sbatch refuses a
//! dependency on a job it has forgotten.

use anyhow::Result;

use crate::error::{UsageError, show};
use crate::launch::config::Link;
use crate::printer::Printer;
use crate::runs::select;
use crate::runs::status;
use crate::slurm::query::Phase;

/// The link of a new run to `after` (a run the store knows) and to its experiment's other jobs
/// (`singleton`); the printer tells the user what was decided.
pub(crate) fn link(after: Option<&str>, singleton: bool, printer: &Printer) -> Result<Link> {
    let say = |m: &str| printer.info(m);
    let mut dependency = Vec::new();
    let mut run_dir = None;
    if let Some(target) = after {
        let (_, before) = select::open(target, printer)?;
        if before.record.cluster {
            return Err(UsageError::new(format!(
                "{} is a cluster, not a run to follow",
                show(target)
            ))
            .hint("--after takes a run of `rayslurm launch`")
            .into());
        }
        let state = status::current(&before, printer)?;
        let job = &before.record.job_id;
        match state.phase {
            Some(Phase::Ended) => say(&format!(
                "{} (job {job}) has ended ({}): this run starts without waiting for it",
                before.record.exp_name,
                state.label()
            )),
            None => {
                return Err(UsageError::new(format!(
                    "cannot tell whether {} (job {job}) has ended: Slurm did not say",
                    before.record.exp_name
                ))
                .hint("try again when `rayslurm status` can see the job")
                .into());
            }
            Some(_) => {
                say(&format!(
                    "this run waits for {} (job {job}) to end",
                    before.record.exp_name
                ));
                dependency.push(format!("afterany:{job}"));
            }
        }
        run_dir = before.record.run_dir();
    }
    if singleton {
        dependency.push("singleton".to_owned());
    }
    Ok(Link {
        dependency: (!dependency.is_empty()).then(|| dependency.join(",")),
        run_dir,
    })
}
