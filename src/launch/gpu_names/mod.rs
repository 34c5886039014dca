//! GPU names as the site spells them. `--num-gpus TYPE:N` and a task file's `accelerators`
//! (one name, a set or list of candidates, `any_of`, `ordered`) are written in SkyPilot's names
//! (`A100-80GB`); Slurm takes only the site's GRES types (`a100_80gb`). At submission (dry runs
//! too) one `sinfo` call gives the site's GPUs; each name is matched to a type ([`matching`]),
//! or to a partition by the config's `gpu_partitions`, and one candidate is chosen
//! ([`choice`]); a name the site does not have is refused, listing the site's types. Where
//! Slurm cannot be asked, the name goes as written, and a warning says so.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::error::UsageError;
use crate::launch::config::LaunchConfig;
use crate::printer::Printer;
use crate::slurm::query::sinfo_gpus;

mod ask;
mod choice;
mod matching;

pub(crate) use ask::{GpuAsk, Pick, Show};

/// What resolution needs of a launch whose GPUs name a type (kept with its job, never shown
/// to templates nor recorded: a recorded run is already resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GpuNaming {
    pub(crate) ask: GpuAsk,
    /// Where a task file gave it (`task.yaml:5: resources.accelerators`); `None` for
    /// `--num-gpus`.
    pub(crate) origin: Option<String>,
    /// The config files' `gpu_partitions`: GPU type -> the partition that stands for it.
    pub(crate) gpu_partitions: BTreeMap<String, String>,
}

impl GpuNaming {
    /// `None` where nothing is to be looked up (no GPUs, or a count without a type).
    pub(crate) fn of(
        ask: &GpuAsk,
        origin: Option<String>,
        gpu_partitions: BTreeMap<String, String>,
    ) -> Option<Self> {
        ask.names_a_type().then(|| Self {
            ask: ask.clone(),
            origin,
            gpu_partitions,
        })
    }
}

/// `config` with its GPUs as the site names them (and the partition `gpu_partitions` gives),
/// the choice said on stderr; as it is where there is nothing to look up, or Slurm cannot be
/// asked (then a warning says so).
pub(crate) fn for_site<'a>(
    config: &'a LaunchConfig,
    printer: &Printer,
) -> Result<Cow<'a, LaunchConfig>, UsageError> {
    let Some(naming) = &config.job.gpu_naming else {
        return Ok(Cow::Borrowed(config));
    };
    // A partition goes into an `#SBATCH` line as it is written.
    for (kind, partition) in &naming.gpu_partitions {
        crate::launch::validate::directive(&format!("gpu_partitions.{kind}"), partition)?;
    }
    let label = if naming.origin.is_some() {
        "accelerators"
    } else {
        "--num-gpus"
    };
    let nodes = match sinfo_gpus() {
        Ok(nodes) => nodes,
        Err(why) => {
            printer.warn(&format!(
                "{label}: Slurm could not be asked for the site's GPU types ({why}), so `{}` is asked as written",
                Show(&naming.ask.first())
            ));
            return Ok(Cow::Borrowed(config));
        }
    };
    let job = choice::Job {
        label,
        partition: config.job.partition.as_deref(),
        num_nodes: config.job.num_nodes,
        exclusive: config.job.exclusive,
        gpu_partitions: &naming.gpu_partitions,
    };
    let chosen = choice::choose(&naming.ask, &nodes, &job).map_err(|refused| {
        let place = match &naming.origin {
            Some(origin) => origin.clone(),
            None => format!("--num-gpus {}", crate::error::show(&naming.ask.to_string())),
        };
        UsageError::new(format!("{place}: {}", refused.why)).hint(refused.hint)
    })?;
    if let Some(note) = &chosen.note {
        printer.info(note);
    }
    let mut resolved = config.clone();
    resolved.job.num_gpus = chosen.request.per_node;
    resolved.job.gpu_type = chosen.request.kind;
    if let Some(partition) = chosen.partition {
        resolved.job.partition = Some(partition);
    }
    resolved.job.gpu_naming = None;
    Ok(Cow::Owned(resolved))
}
