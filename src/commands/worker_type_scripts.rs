//! An elastic cluster's worker types at `up`: each type's script, rendered from the same
//! template as the cluster's own (the run's files, its binary and its place among runs), with
//! the type's job; checked by Slurm (`sbatch --test-only`) before anything is submitted, and
//! written with the types' list into the run's private directory for the head. A dry run shows
//! each type's `#SBATCH` lines and writes nothing.

use anyhow::{Context, Result};

use crate::commands::ask_slurm;
use crate::error::show as shown;
use crate::handoff::elastic::worker_sbatch_args;
use crate::handoff::run_files::RunFiles;
use crate::handoff::worker_types::{self, WorkerType};
use crate::launch::config::{LaunchConfig, Link, without_secrets};
use crate::launch::digest_check::with_digest_check;
use crate::launch::job_spec::JobSpec;
use crate::launch::node_binary::NodeBinary;
use crate::launch::template::Template;
use crate::printer::Printer;
use crate::slurm::sbatch::{self as slurm, TestOnly};

/// What the types' scripts are rendered with: the cluster's own.
pub(super) struct Rendering<'a> {
    pub(super) template: &'a Template,
    pub(super) files: &'a RunFiles,
    pub(super) bin: &'a NodeBinary,
    pub(super) link: &'a Link,
}

/// Each type with its script's text, its GPUs named as the site names them.
fn render(
    config: &LaunchConfig,
    with: &Rendering,
    printer: &Printer,
) -> Result<Vec<(WorkerType, String, LaunchConfig)>> {
    let now = chrono::Local::now().to_rfc3339();
    let mut out = Vec::new();
    for t in &config.worker_types {
        let own = crate::launch::gpu_names::for_site(&t.config, printer)?.into_owned();
        let spec = JobSpec::new(&own, with.files, &with.bin.path, now.clone(), with.link);
        let script = with
            .template
            .render(&spec)
            .with_context(|| format!("cannot render the script of worker type {}", t.spec.name))?;
        let text = with_digest_check(&script, &with.bin.path, &with.bin.sha256);
        out.push((t.spec.clone(), text, own));
    }
    Ok(out)
}

/// A dry run: each type's `#SBATCH` lines, after the cluster's script.
pub(super) fn show_dry_run(
    config: &LaunchConfig,
    with: &Rendering,
    printer: &Printer,
) -> Result<()> {
    for (spec, text, own) in render(config, with, printer)? {
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("#SBATCH")).collect();
        printer.result(&format!(
            "# worker type {} ({} to {} nodes, {} a job):\n{}",
            spec.name,
            spec.min_workers,
            spec.max_workers
                .map_or("as many as --max-nodes allows".to_owned(), |m| m
                    .to_string()),
            spec.nodes_per_job,
            without_secrets(&lines.join("\n"), &own.job.env)
        ));
    }
    Ok(())
}

/// Writes each type's script and the types' list into the run's private directory, once Slurm
/// has said it would take a job of each (nothing is submitted; a refusal names the type and
/// keeps the scripts).
pub(super) fn write(config: &LaunchConfig, with: &Rendering, printer: &Printer) -> Result<()> {
    let run_dir = with
        .link
        .run_dir
        .clone()
        .unwrap_or_else(|| with.files.dir.clone());
    let mut types = Vec::new();
    for (mut spec, text, _) in render(config, with, printer)? {
        let script = worker_types::write_script(&run_dir, &spec.name, &text)?;
        let options = worker_sbatch_args(&config.job.exp_name, &run_dir, "test.0", &spec);
        let said = match slurm::test_only(&options, &script, ask_slurm::bound()?) {
            TestOnly::Accepted(said) => said,
            TestOnly::Refused(why) | TestOnly::NoAnswer(why) => {
                return Err(anyhow::anyhow!(why)).with_context(|| {
                    format!(
                        "Slurm refuses the jobs of worker type {} of elastic cluster {}, so nothing was submitted; their script is kept at `{}`",
                        spec.name,
                        shown(&config.job.exp_name),
                        script.display()
                    )
                });
            }
        };
        printer.info(&format!(
            "Slurm takes worker type {}'s jobs (sbatch --test-only: {said})",
            spec.name
        ));
        spec.script = Some(script);
        types.push(spec);
    }
    worker_types::write(&run_dir, &types)
}
