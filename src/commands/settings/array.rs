//! `launch --array SPEC` resolved: the spec checked ([`ArraySpec`]), and refused beside the
//! options an array's tasks cannot go with yet.

use crate::error::{UsageError, show};
use crate::handoff::cluster::ClusterOptions;
use crate::launch::array_spec::ArraySpec;

/// The array asked for, if any, checked against the rest of the launch.
pub(super) fn resolve(
    spec: Option<&str>,
    cluster: &ClusterOptions,
    after: &Option<String>,
    follow: bool,
) -> Result<Option<ArraySpec>, UsageError> {
    let Some(text) = spec else {
        return Ok(None);
    };
    let spec = ArraySpec::parse(text).map_err(|why| {
        UsageError::new(format!("--array {}: {why}", show(text)))
            .hint("as sbatch takes it: `0-7`, `1,3,5`, `0-15:4`, each with `%N` for at most N tasks at once")
    })?;
    let with = |flag: &str, why: &str, hint: &str| {
        Err(UsageError::new(format!("--array goes without {flag}: {why}")).hint(hint.to_owned()))
    };
    let long_run = &cluster.long_run;
    if long_run.requeue || long_run.restarts_on_error > 0 {
        let flag = if long_run.requeue {
            "--requeue"
        } else {
            "--restarts-on-error"
        };
        return with(
            flag,
            "rayslurm does not requeue the tasks of an array yet",
            "launch the array without it, or one requeued run per task",
        );
    }
    if after.is_some() {
        return with(
            "--after",
            "each task has a private directory of its own, so none can take over another run's",
            "launch the array without --after, or one run per task with --after each",
        );
    }
    if follow {
        return with(
            "--follow",
            "it follows one run, and an array is one run a task",
            "follow a task after the launch: `rayslurm logs -f JOBID_TASK`",
        );
    }
    Ok(Some(spec))
}
