//! `exec`'s arguments resolved: the command as one line for bash, its variables read and
//! merged, its resources checked.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::cli::ExecArgs;
use crate::error::UsageError;
use crate::launch::snapshot::SnapshotPlan;
use crate::launch::{config, validate};
use crate::sys::quote::shell_quote;

/// `exec`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExecSettings {
    /// The cluster's name.
    pub(crate) cluster: String,
    pub(crate) detach: bool,
    /// `--name`, shown by `queue`.
    pub(crate) name: Option<String>,
    /// Ray's entrypoint resources: CPUs, GPUs (positive) and bytes of memory.
    pub(crate) num_cpus: Option<f64>,
    pub(crate) num_gpus: Option<f64>,
    pub(crate) memory: Option<u64>,
    /// `--env-file`'s then `--env`'s variables, each key once, none of `secrets`' keys.
    pub(crate) env: BTreeMap<String, String>,
    /// `--secret`'s variables: they never reach Ray (see `JobRecord::write_secrets`).
    pub(crate) secrets: BTreeMap<String, String>,
    /// The command, as bash runs it.
    pub(crate) command: String,
    pub(crate) json: bool,
    /// `--per-node`: one rank on each of several nodes.
    pub(crate) ranks: Option<RankJob>,
    /// The directory `exec` ran in: the job's, unless it gets a snapshot.
    pub(crate) workdir: PathBuf,
    /// `--snapshot`/`--workdir`: the workdir copied at submission, where the job starts.
    pub(crate) snapshot: Option<SnapshotPlan>,
}

/// `exec --per-node`: how many ranks (every node of the cluster without `-n`), and the setup
/// each runs first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RankJob {
    pub(crate) nodes: Option<u32>,
    pub(crate) setup: Option<String>,
}

impl ExecSettings {
    /// Resolves every argument of `exec`; nothing here asks the cluster.
    pub(crate) fn resolve(args: &ExecArgs) -> Result<Self, UsageError> {
        let ExecArgs {
            cluster,
            // Read before resolution (`task_file::expand`), into the flags below.
            task: _,
            detach,
            name,
            num_cpus,
            num_gpus,
            memory,
            env,
            env_file,
            secret,
            command,
            json,
            args,
            per_node,
            num_nodes,
            setup,
            snapshot,
            workdir,
            snapshot_max_size,
        } = args;
        let cwd = std::env::current_dir()
            .map_err(|e| UsageError::new(format!("cannot read the current directory: {e}")))?;
        let snapshot = SnapshotPlan::resolve(
            *snapshot,
            workdir.as_deref(),
            snapshot_max_size.as_deref(),
            &cwd,
        )?;
        if *num_nodes == Some(0) {
            return Err(UsageError::new("-n 0: a job runs on at least one node")
                .hint("e.g. `-n 2` with --per-node for one rank on each of two nodes"));
        }
        let command = command_of(command.as_deref(), args)?;
        let secrets: BTreeMap<String, String> = config::env_vars(&[], ("--secret", secret))?
            .into_iter()
            .collect();
        let env = config::env_vars(env_file, ("--env", env))?
            .into_iter()
            .filter(|(key, _)| !secrets.contains_key(key))
            .collect();
        let memory = memory
            .as_deref()
            .map(|m| validate::memory_bytes("--memory", m))
            .transpose()?;
        for (flag, value) in [("--num-cpus", *num_cpus), ("--num-gpus", *num_gpus)] {
            if let Some(v) = value
                && !(v.is_finite() && v > 0.0)
            {
                return Err(
                    UsageError::new(format!("{flag} {v} is not a positive number"))
                        .hint(format!("e.g. `{flag} 2`, or `{flag} 0.5` for a share")),
                );
            }
        }
        Ok(Self {
            cluster: cluster.clone(),
            detach: *detach,
            name: name.clone(),
            num_cpus: *num_cpus,
            num_gpus: *num_gpus,
            memory,
            env,
            secrets,
            command,
            json: *json,
            ranks: per_node.then(|| RankJob {
                nodes: *num_nodes,
                setup: setup.clone(),
            }),
            workdir: cwd,
            snapshot,
        })
    }
}

/// The command: `--command` as written, or the words after `--`, each quoted (`exec`'s and
/// `launch`'s).
pub(super) fn command_of(command: Option<&str>, words: &[String]) -> Result<String, UsageError> {
    let command = match (command, words) {
        (Some(c), []) => c.to_owned(),
        (None, words) if !words.is_empty() => words
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    };
    if command.trim().is_empty() {
        return Err(UsageError::new("no command to run").hint(
            "give it after `--`, e.g. `rayslurm exec mycluster -- python train.py --lr 0.1`, or as `--command \"...\"`",
        ));
    }
    Ok(command)
}
