//! The submission `launch` and `up` share: a resolved [`LaunchConfig`] rendered into a script,
//! submitted with sbatch and recorded as a run.

use std::path::PathBuf;

use anyhow::{Context, Result};
use chrono::Local;
use serde::Serialize;

use crate::error::UsageError;
use crate::error::show;
use crate::handoff::job_env;
use crate::handoff::run_files::RunFiles;
use crate::launch::config::LaunchConfig;
use crate::launch::job_spec::JobSpec;
use crate::launch::job_spec::Link;
use crate::launch::node_binary::node_visible_copy;
use crate::launch::prelude::with_prelude;
use crate::launch::script_files;
use crate::launch::template::Template;
use crate::launch::validate;
use crate::printer::Printer;
use crate::runs::chain;
use crate::runs::store::{RunRecord, RunStore, StoredRun};
use crate::slurm::sbatch as slurm;
use crate::state_dir::{private_root, tree_error};

/// What a launch produced, as `--json` prints it.
#[derive(Debug, Serialize)]
struct LaunchResult<'a> {
    job_id: Option<&'a str>,
    exp_name: &'a str,
    script: String,
    log: String,
    submitted: bool,
}

/// What a submission gave.
pub(crate) enum Submitted {
    /// `--dry-run`: the script was written, nothing submitted.
    DryRun,
    /// The job, as recorded (`stored` is `None` if the run store could not be written).
    Job {
        record: Box<RunRecord>,
        stored: Option<Box<(RunStore, StoredRun)>>,
    },
}

/// Renders the script, submits it and records the run: `launch` and `up` alike.
pub(crate) fn submit(config: &LaunchConfig, printer: &Printer) -> Result<Submitted> {
    // Everything that can be refused is checked before a file is written.
    check_log_dir(config)?;
    let template = match &config.template {
        Some(path) => Template::from_file(path).map_err(|e| {
            UsageError::new(e.to_string()).hint("start a custom template from `rayslurm template`")
        })?,
        None => Template::builtin(),
    };
    if !config.dry_run && which::which("sbatch").is_err() {
        return Err(
            UsageError::new("`sbatch` was not found on PATH, so nothing can be submitted")
                .hint("run on a Slurm login node, or pass --dry-run to only write the script")
                .into(),
        );
    }

    warn_if_node_local(printer);
    warn_if_log_dir_is_node_local(&config.log_dir, printer);

    let link = chain::link(config.after.as_deref(), config.singleton, printer)?;
    let files = write_script(config, &template, &link, printer)?;
    if config.dry_run {
        let text = std::fs::read_to_string(&files.script)?;
        if config.json {
            print_result(printer, config, &files, None)?;
        } else {
            printer.result(text.trim_end());
        }
        printer.info(&format!(
            "dry run: wrote {} (not submitted; submit it with `sbatch {}`)",
            files.script.display(),
            crate::sys::quote::shell_quote(&files.script.display().to_string())
        ));
        return Ok(Submitted::DryRun);
    }
    sbatch(config, &files, link, printer)
}

/// The job's script (and its run files' names) under the private directory, with the node-
/// visible copy of this binary it runs.
fn write_script(
    config: &LaunchConfig,
    template: &Template,
    link: &Link,
    printer: &Printer,
) -> Result<RunFiles> {
    let root = private_root()?;
    warn_if_state_is_node_local(root.path(), printer);
    let bin_dir = root.dir("bin").map_err(tree_error)?;
    let jobs = root.dir("jobs").map_err(tree_error)?;
    let bin = node_visible_copy(&bin_dir, config.dry_run)?;
    let now = Local::now();
    let files = script_files::write_new(
        jobs.path(),
        Some(&config.log_dir),
        &config.job.exp_name,
        &now,
        |files| {
            let spec = JobSpec::new(config, files, &bin.path, now.to_rfc3339(), link);
            let script = template
                .render(&spec)
                .map_err(|e| UsageError::new(e.to_string()))?;
            Ok(with_prelude(&script, &bin.path, &bin.sha256))
        },
    )?;
    Ok(files)
}

/// Submits the written script and records the run.
fn sbatch(
    config: &LaunchConfig,
    files: &RunFiles,
    link: Link,
    printer: &Printer,
) -> Result<Submitted> {
    let job_id = slurm::sbatch(&files.script).with_context(|| {
        format!(
            "submitting `{}` failed; the script is kept there",
            files.script.display()
        )
    })?;
    let submitted_at = Local::now().fixed_offset();
    print_result(printer, config, files, Some(&job_id))?;
    printer.info(&format!(
        "submitted job {job_id} ({})\n  script: {}\n  log:    {}",
        config.job.exp_name,
        files.script.display(),
        files.log.display()
    ));

    let workdir = std::env::current_dir().unwrap_or_else(|_| config.log_dir.clone());
    let record = RunRecord {
        cluster: config.cluster.serve,
        run_dir: link.run_dir,
        ..RunRecord::new(
            &config.job.exp_name,
            &job_id,
            files,
            submitted_at,
            &workdir,
            &config.job.command,
            config.job.num_nodes,
        )
    };
    let stored = record_run(&record, printer).map(Box::new);
    Ok(Submitted::Job {
        record: Box::new(record),
        stored,
    })
}

/// Keeps the run in the run store. The job is submitted whatever happens here, so a store that
/// cannot be written costs a warning, not the launch.
fn record_run(record: &RunRecord, printer: &Printer) -> Option<(RunStore, StoredRun)> {
    let stored = RunStore::from_env()
        .map_err(anyhow::Error::from)
        .and_then(|store| store.add(record).map(|run| (store, run)));
    match stored {
        Ok(stored) => Some(stored),
        Err(e) => {
            printer.warn(&format!(
                "job {} was submitted but not recorded, so `rayslurm status/logs/cancel` will not know it: {e:#}",
                record.job_id
            ));
            None
        }
    }
}

fn print_result(
    printer: &Printer,
    config: &LaunchConfig,
    files: &RunFiles,
    job_id: Option<&str>,
) -> Result<()> {
    if config.json {
        let result = LaunchResult {
            job_id,
            exp_name: &config.job.exp_name,
            script: files.script.display().to_string(),
            log: files.log.display().to_string(),
            submitted: job_id.is_some(),
        };
        printer.result(&serde_json::to_string(&result)?);
    } else if let Some(id) = job_id {
        printer.result(id);
    }
    Ok(())
}

/// Warns when the job is launched from a node-local directory: Slurm runs the job where it was
/// submitted, and a compute node has its own /tmp (the bootstrap then fails the job at once).
fn warn_if_node_local(printer: &Printer) {
    let Ok(cwd) = std::env::current_dir() else {
        return;
    };
    let tmpdir = std::env::var_os(job_env::TMPDIR).map(PathBuf::from);
    if let Some(root) = validate::node_local_root(&cwd, tmpdir.as_deref()) {
        printer.warn(&format!(
            "launching from {}, inside the node-local `{}`: the compute nodes cannot see it, so the job will fail at start; launch from a shared filesystem (your home or project directory)",
            show(&cwd.display().to_string()),
            root.display()
        ));
    }
}

/// Warns when `--log-dir` (or the files' `log_dir`) is node-local: the log's link and the
/// files a run keeps there are on this machine's disk alone, which the nodes do not see.
fn warn_if_log_dir_is_node_local(dir: &std::path::Path, printer: &Printer) {
    let tmpdir = std::env::var_os(job_env::TMPDIR).map(PathBuf::from);
    let cwd = std::env::current_dir().unwrap_or_default();
    // Launched from there: `warn_if_node_local` said so already.
    if *dir == cwd {
        return;
    }
    if let Some(root) = validate::node_local_root(dir, tmpdir.as_deref()) {
        printer.warn(&format!(
            "the log directory {} is inside the node-local `{}`: the compute nodes and other login nodes may not see it (each has its own); pass a --log-dir on a shared filesystem",
            show(&dir.display().to_string()),
            root.display()
        ));
    }
}

/// Warns when the private directory, which the job's binary, script and run files live in, is
/// node-local: the nodes cannot see it, and the job fails at its first line.
fn warn_if_state_is_node_local(state: &std::path::Path, printer: &Printer) {
    let tmpdir = std::env::var_os(job_env::TMPDIR).map(PathBuf::from);
    if let Some(root) = validate::node_local_root(state, tmpdir.as_deref()) {
        printer.warn(&format!(
            "rayslurm's private directory {} is inside the node-local `{}`: the compute nodes cannot see it, so the job will fail at start; set {} to a private directory on a shared filesystem (under your home, or a per-user scratch directory)",
            show(&state.display().to_string()),
            root.display(),
            crate::env_vars::STATE_DIR
        ));
    }
}

fn check_log_dir(config: &LaunchConfig) -> Result<(), UsageError> {
    let dir = &config.log_dir;
    let shown = show(&dir.display().to_string());
    if !dir.is_dir() {
        return Err(
            UsageError::new(format!("the log directory {shown} does not exist")).hint(format!(
                "create it first (`mkdir -p {}`) or pass another --log-dir",
                dir.display()
            )),
        );
    }
    // A real write, not access(2): root passes access() even on a read-only filesystem.
    if let Err(e) = tempfile::Builder::new()
        .prefix(".rayslurm-probe-")
        .tempfile_in(dir)
    {
        return Err(
            UsageError::new(format!("the log directory {shown} is not writable: {e}"))
                .hint("pass a --log-dir you can write to, on a filesystem the compute nodes share"),
        );
    }
    Ok(())
}
