//! The stages of a task file's `launch`: each its arguments (with the file's flags) and what
//! the launch prints of it, resolved, and so checked, all before the first is submitted.

use std::path::Path;

use crate::cli::LaunchArgs;
use crate::error::UsageError;
use crate::launch::config::{LaunchConfig, Sources};

/// One stage of a task file's `launch` (the file's one task, or a stage of its pipeline): its
/// arguments, with the file's flags, and what the launch prints of it.
#[derive(Debug)]
pub(crate) struct Stage {
    pub(crate) args: Box<LaunchArgs>,
    /// The ports its task serves (`resources.ports`), to forward.
    pub(crate) ports: Vec<String>,
    /// The pipeline it is a stage of, by name.
    pub(crate) pipeline: Option<String>,
    /// The runs it waits for, in a pipeline that is a graph; `None`: the stage before it.
    pub(crate) waits_for: Option<Vec<String>>,
}

/// A stage resolved: the launch it is, and what the launch prints of it.
#[derive(Debug)]
pub(crate) struct StageSettings {
    pub(crate) config: LaunchConfig,
    pub(crate) ports: Vec<String>,
    pub(crate) pipeline: Option<String>,
    pub(crate) waits_for: Option<Vec<String>>,
}

/// Every stage resolved (and so checked) before the first is submitted.
pub(crate) fn resolve_stages(
    stages: &[Stage],
    sources: &Sources,
) -> Result<Vec<StageSettings>, UsageError> {
    stages
        .iter()
        .map(|s| {
            Ok(StageSettings {
                config: super::launch::resolve(&s.args, sources)?,
                ports: s.ports.clone(),
                pipeline: s.pipeline.clone(),
                waits_for: s.waits_for.clone(),
            })
        })
        .collect()
}

/// Each stage of a pipeline is a run of its own name (a name typed with `--exp-name` would
/// give them all one).
pub(super) fn distinct_names(path: &Path, stages: &[Stage]) -> Result<(), UsageError> {
    for (i, stage) in stages.iter().enumerate() {
        let name = &stage.args.exp_name;
        if stages[..i].iter().any(|s| s.args.exp_name == *name) {
            return Err(UsageError::new(format!(
                "two stages of the pipeline `{}` are both named `{}`",
                path.display(),
                name.as_deref().unwrap_or_default()
            ))
            .hint("give each stage its own `name:` (the run is PIPELINE-NAME), and no --exp-name on the command line"));
        }
    }
    Ok(())
}
