//! `rayslurm launch`: config -> job spec -> rendered script -> submission.

use std::process::ExitCode;

use anyhow::{Context, Result};
use chrono::Local;
use serde::Serialize;

use crate::config::LaunchConfig;
use crate::error::UsageError;
use crate::job_spec::JobSpec;
use crate::node_binary::node_visible_copy;
use crate::printer::Printer;
use crate::script_files::{self, ScriptFiles};
use crate::slurm;
use crate::template::Template;
use crate::validate::show;

/// What a launch produced, as `--json` prints it.
#[derive(Debug, Serialize)]
struct LaunchResult<'a> {
    job_id: Option<&'a str>,
    exp_name: &'a str,
    script: String,
    log: String,
    submitted: bool,
}

pub(crate) fn run(config: &LaunchConfig, printer: &Printer) -> Result<ExitCode> {
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

    let bin = node_visible_copy(&config.log_dir)?;
    let now = Local::now();
    let files = script_files::write_new(&config.log_dir, &config.exp_name, &now, |files| {
        let spec = JobSpec::new(config, files, &bin, now.to_rfc3339());
        template
            .render(&spec)
            .map_err(|e| UsageError::new(e.to_string()).into())
    })?;

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
            crate::quote::shell_quote(&files.script.display().to_string())
        ));
        return Ok(ExitCode::SUCCESS);
    }

    let job_id = slurm::sbatch(&files.script).with_context(|| {
        format!(
            "submitting `{}` failed; the script is kept there",
            files.script.display()
        )
    })?;
    print_result(printer, config, &files, Some(&job_id))?;
    printer.info(&format!(
        "submitted job {job_id} ({})\n  script: {}\n  log:    {}",
        config.exp_name,
        files.script.display(),
        files.log.display()
    ));
    Ok(ExitCode::SUCCESS)
}

fn print_result(
    printer: &Printer,
    config: &LaunchConfig,
    files: &ScriptFiles,
    job_id: Option<&str>,
) -> Result<()> {
    if config.json {
        let result = LaunchResult {
            job_id,
            exp_name: &config.exp_name,
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

fn check_log_dir(config: &LaunchConfig) -> Result<(), UsageError> {
    use nix::unistd::{AccessFlags, access};
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
    if access(dir, AccessFlags::W_OK | AccessFlags::X_OK).is_err() {
        return Err(
            UsageError::new(format!("the log directory {shown} is not writable"))
                .hint("pass a --log-dir you can write to, on a filesystem the compute nodes share"),
        );
    }
    Ok(())
}
