//! `up`'s arguments resolved: the cluster's name, and the job it submits, resolved from the job
//! and cluster flags it shares with `launch`, kept alive for `exec` instead of running a
//! command.

use crate::cli::UpArgs;
use crate::error::UsageError;
use crate::launch::config::{self, LaunchConfig, Sources};
use crate::launch::validate;

/// What the script says the command is: a no-op, since a cluster runs `exec`'s jobs instead.
const NO_COMMAND: &str = ": a persistent cluster; its jobs come with rayslurm exec";

/// `up`, resolved.
#[derive(Debug)]
pub(crate) struct UpSettings {
    /// The cluster's name (its experiment name).
    pub(crate) name: String,
    /// Return once submitted, without waiting for the cluster.
    pub(crate) detach: bool,
    /// The allocation to submit.
    pub(crate) config: LaunchConfig,
}

impl UpSettings {
    /// Resolves every argument of `up`, with the files' values and the defaults.
    pub(crate) fn resolve(args: &UpArgs, src: &Sources) -> Result<Self, UsageError> {
        let UpArgs {
            name,
            // Read before resolution (`task_file::expand`), into the flags below.
            task: _,
            idle_timeout,
            job,
            cluster,
            detach,
            dry_run,
            json,
        } = args;
        validate::cluster_name(name)?;
        let job = super::launch::resolve_job(job, name, NO_COMMAND, src)?;
        let mut cluster = super::cluster::resolve(cluster, job.request.num_nodes, src)?;
        // The files' `signal` is `launch`'s, but a bad one is refused here too.
        super::launch::signal_of(None, src)?;
        super::launch::check_stop_grace(&cluster, job.request.time.as_deref())?;
        for (flag, given) in [
            ("--per-node", cluster.per_node),
            ("--no-ray", cluster.no_ray),
        ] {
            if given {
                return Err(UsageError::new(format!(
                    "{flag} does not go with `up`: a cluster runs Ray, for the jobs `exec` gives it"
                ))
                .hint("use `rayslurm launch` for a run without Ray"));
            }
        }
        cluster.serve = true;
        cluster.idle_timeout = config::idle_timeout(*idle_timeout, src);
        let config = LaunchConfig {
            job: job.request,
            log_dir: job.log_dir,
            log_dir_is_default: job.log_dir_is_default,
            template: job.template,
            dry_run: *dry_run,
            json: *json,
            follow: false,
            cancel_on_interrupt: false,
            cluster,
            after: None,
            singleton: false,
            snapshot: None,
        };
        Ok(Self {
            name: name.clone(),
            detach: *detach,
            config,
        })
    }
}
