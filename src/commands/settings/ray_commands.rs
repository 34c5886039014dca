//! The arguments of `submit`, `rsync-up` and `attach` (Ray's `ray submit`, `ray rsync_up`,
//! `ray attach`) resolved: `submit` into an `exec` job whose snapshot is its script.

use std::path::PathBuf;

use super::exec::{ExecSettings, command_of};
use crate::cli::{AttachArgs, RsyncUpArgs, SubmitArgs};
use crate::clusters::files;
use crate::error::{UsageError, show};
use crate::launch::config;
use crate::sys::quote::shell_quote;

/// `submit`, resolved: the job, and the script its snapshot holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SubmitSettings {
    pub(crate) job: ExecSettings,
    pub(crate) script: PathBuf,
}

impl SubmitSettings {
    pub(crate) fn resolve(args: &SubmitArgs) -> Result<Self, UsageError> {
        let SubmitArgs {
            cluster,
            script,
            args,
            detach,
            num_cpus,
            num_gpus,
            env,
        } = args;
        let cwd = std::env::current_dir()
            .map_err(|e| UsageError::new(format!("cannot read the current directory: {e}")))?;
        let full = cwd.join(script);
        if !full.is_file() {
            return Err(UsageError::new(format!(
                "SCRIPT {} is not a file here",
                show(&script.display().to_string())
            ))
            .hint("name the script to run, e.g. `rayslurm submit mycluster train.py --epochs 3`"));
        }
        let name = full
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // As `ray submit`: python runs it, in the directory it was copied to.
        let program = if name.ends_with(".sh") || name.ends_with(".bash") {
            "bash"
        } else {
            "python"
        };
        let mut words = vec![program.to_owned(), name.clone()];
        words.extend(args.iter().cloned());
        let command = command_of(None, &words)?;
        let env = config::env_vars(&[], ("--env", env))?.into_iter().collect();
        let job = ExecSettings {
            cluster: cluster.clone(),
            detach: *detach,
            name: Some(name),
            num_cpus: *num_cpus,
            num_gpus: *num_gpus,
            memory: None,
            env,
            secrets: std::collections::BTreeMap::new(),
            command,
            json: false,
            ranks: None,
            workdir: cwd,
            snapshot: None,
        };
        Ok(Self { job, script: full })
    }
}

/// `rsync-up`, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RsyncUpSettings {
    pub(crate) cluster: String,
    pub(crate) source: PathBuf,
    /// Inside the cluster's files directory.
    pub(crate) target: PathBuf,
    /// DST as typed, for messages.
    pub(crate) shown: String,
    /// DST ends in `/`: a file goes in it under its own name.
    pub(crate) into_dir: bool,
}

impl RsyncUpSettings {
    pub(crate) fn resolve(args: &RsyncUpArgs) -> Result<Self, UsageError> {
        let RsyncUpArgs {
            cluster,
            source,
            target,
        } = args;
        let cwd = std::env::current_dir()
            .map_err(|e| UsageError::new(format!("cannot read the current directory: {e}")))?;
        let full = cwd.join(source);
        if std::fs::symlink_metadata(&full).is_err() {
            return Err(UsageError::new(format!(
                "SRC {} does not exist here",
                show(&source.display().to_string())
            ))
            .hint("name a file or directory to copy"));
        }
        Ok(Self {
            cluster: cluster.clone(),
            source: full,
            target: files::destination(target)?,
            shown: target.clone(),
            into_dir: target.ends_with('/'),
        })
    }
}

/// `attach`, resolved: the cluster, and the command to run instead of a shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AttachSettings {
    pub(crate) cluster: String,
    pub(crate) command: Option<String>,
}

impl AttachSettings {
    pub(crate) fn resolve(args: &AttachArgs) -> Self {
        let command = (!args.command.is_empty()).then(|| {
            args.command
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" ")
        });
        Self {
            cluster: args.cluster.clone(),
            command,
        }
    }
}
