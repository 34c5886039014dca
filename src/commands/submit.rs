//! The submission `launch` and `up` share: a resolved [`LaunchConfig`] rendered into a script,
//! submitted with sbatch and recorded as a run.

use std::path::PathBuf;

use anyhow::{Context, Result};
use chrono::Local;
use serde::Serialize;

use crate::commands::ask_slurm;
use crate::commands::bin_copies::prune_copies;
use crate::commands::worker_type_scripts;
use crate::error::UsageError;
use crate::error::show;
use crate::handoff::elastic::worker_sbatch_args;
use crate::handoff::job_env;
use crate::handoff::run_files::{RunFiles, create_private_dir};
use crate::handoff::worker_types::WorkerType;
use crate::launch::config::Link;
use crate::launch::config::recorded::RecordedLaunch;
use crate::launch::config::{LaunchConfig, without_secrets};
use crate::launch::digest_check::with_digest_check;
use crate::launch::job_spec::JobSpec;
use crate::launch::job_spec::snapshot_dir;
use crate::launch::log_dir;
use crate::launch::node_binary::{NodeBinary, node_visible_copy};
use crate::launch::script_files;
use crate::launch::snapshot::{Listing, SnapshotInfo};
use crate::launch::template::Template;
use crate::launch::validate;
use crate::printer::Printer;
use crate::runs::after_chain;
use crate::runs::store::{RunRecord, RunStore, StoredRun};
use crate::slurm::sbatch::{self as slurm, TestOnly};
use crate::state_dir::{private_root, tree_error};

/// What a launch produced, as `--json` prints it.
#[derive(Debug, Serialize)]
struct LaunchResult<'a> {
    job_id: Option<&'a str>,
    exp_name: &'a str,
    script: String,
    log: String,
    submitted: bool,
    /// A job array's tasks (`launch --array`), each a run of its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tasks: Vec<TaskResult>,
}

/// One task of a submitted job array, as `--json` prints it.
#[derive(Debug, Serialize)]
struct TaskResult {
    task: u32,
    /// Slurm's `JOBID_TASK`, which `status`, `logs` and `cancel` take.
    job_id: String,
    log: String,
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
    // The GPUs as the site names them, before anything is checked or written.
    let config = &*crate::launch::gpu_names::for_site(config, printer)?;
    // Everything that can be refused is checked before a file is written.
    // A dry run writes nothing there, so it need not be writable (nor, the default, made).
    log_dir::check(&config.log_dir, config.log_dir_is_default, !config.dry_run)?;
    let template = match &config.template {
        Some(text) => Template::of_user(text).map_err(|e| {
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

    if !config.dry_run {
        check_slurm_release(printer)?;
    }
    warn_if_node_local(printer);
    warn_if_log_dir_is_node_local(&config.log_dir, printer);
    // Listed (and its size checked) before anything is written; written only for a real job.
    let listing = config.snapshot.as_ref().map(Listing::of).transpose()?;
    if config
        .snapshot
        .as_ref()
        .is_some_and(|p| p.workdir.is_none() && p.git.is_none() && !p.mounts_only)
    {
        printer.info(EMPTY_WORKDIR);
    }
    if let Some(plan) = &config.snapshot {
        crate::launch::file_mounts::announce(plan, printer);
    }

    let link = match &config.link {
        Some(link) => link.clone(),
        None => after_chain::link(config.after.as_deref(), config.singleton, printer)?,
    };
    if !config.dry_run {
        // The private tree first: a launch it refuses leaves nothing behind, not even the
        // default log directory.
        private_root()?;
        log_dir::make_default(&config.log_dir, config.log_dir_is_default)?;
    }
    let (files, bin) = write_script(config, &template, &link, printer)?;
    let types = worker_type_scripts::Rendering {
        template: &template,
        files: &files,
        bin: &bin,
        link: &link,
    };
    if config.dry_run {
        show_dry_run(printer, config, &files)?;
        worker_type_scripts::show_dry_run(config, &types, printer)?;
        ask_slurm::dry_run(config, &files, printer)?;
        return Ok(Submitted::DryRun);
    }
    if !config.worker_types.is_empty() {
        worker_type_scripts::write(config, &types, printer)?;
    } else if config.cluster.serve.max_nodes.is_some() {
        check_worker_jobs(config, &files, &link, printer)?;
    }
    let snapshot = match listing {
        Some(l) => write_snapshot(&l, &files, printer)?,
        None => None,
    };
    sbatch(config, &files, &bin, link, snapshot, printer)
}

/// What a dry run shows: the script it wrote (or, with `--json`, its paths), and how to submit
/// it as a run rayslurm records.
/// A secret's value (`--secret`) is shown as `***`: it is only in the private script. Slurm is
/// then asked whether it would take the script ([`ask_slurm::dry_run`]).
pub(crate) fn show_dry_run(
    printer: &Printer,
    config: &LaunchConfig,
    files: &RunFiles,
) -> Result<()> {
    let text = std::fs::read_to_string(&files.script)?;
    if config.json {
        print_result(printer, true, config, files, None)?;
    } else {
        printer.result(without_secrets(&text, &config.job.env).trim_end());
    }
    // Not `sbatch SCRIPT`: that would make a run no record names (`status`, `logs` and
    // `--again` would not know it), writing into the log and state this script names.
    printer.info(&format!(
        "dry run: wrote {} (not submitted; to submit it as a recorded run, run the same command without --dry-run)",
        files.script.display(),
    ));
    Ok(())
}

/// Refuses a Slurm too old for rayslurm, and notes one outside the tested range; says nothing
/// when `srun --version` does not say which it is.
fn check_slurm_release(printer: &Printer) -> Result<()> {
    let Some(release) = crate::slurm::version::of_clients() else {
        return Ok(());
    };
    if let Some(note) = crate::slurm::version::judge(release)? {
        printer.warn(&note);
    }
    Ok(())
}

/// What a launch with `--empty-workdir` (a task file without `workdir:`) says of it.
const EMPTY_WORKDIR: &str = "no workdir: on each node, setup and command start in a new, empty directory of its own in the node's /tmp, removed at the end (give a task file `workdir: DIR`, or pass --workdir DIR, to start from a copy of DIR)";

/// Writes the snapshot into the run's private directory, before the job is submitted: what
/// the run's record says of it.
fn write_snapshot(
    listing: &Listing,
    files: &RunFiles,
    printer: &Printer,
) -> Result<Option<SnapshotInfo>> {
    create_private_dir(&files.dir)?;
    let Some(info) = listing
        .write(&snapshot_dir(files))
        .context("the workdir's snapshot could not be written, so nothing was submitted")?
    else {
        return Ok(None);
    };
    printer.info(&info.summary());
    Ok(Some(info))
}

/// The job's script (and its run files' names) under the private directory, with the node-
/// visible copy of this binary it runs.
fn write_script(
    config: &LaunchConfig,
    template: &Template,
    link: &Link,
    printer: &Printer,
) -> Result<(RunFiles, NodeBinary)> {
    let root = private_root()?;
    warn_if_state_is_node_local(root.path(), printer);
    let jobs = root.dir("jobs").map_err(tree_error)?;
    let bin = node_visible_copy(&root, config.dry_run)?;
    let now = Local::now();
    // A dry run writes the script it shows, and nothing else: no link to a log to come.
    let files = script_files::write_new(
        jobs.path(),
        (!config.dry_run).then_some(config.log_dir.as_path()),
        &config.job.exp_name,
        &now,
        config.job.array.as_ref().map_or(&[], |a| a.tasks()),
        |files| {
            let spec = JobSpec::new(config, files, &bin.path, now.to_rfc3339(), link);
            let script = template
                .render(&spec)
                .map_err(|e| UsageError::new(e.to_string()))?;
            Ok(with_digest_check(&script, &bin.path, &bin.sha256))
        },
    )?;
    Ok((files, bin))
}

/// Asks Slurm whether it takes the worker jobs an elastic cluster's head will submit (the
/// same options, `sbatch --test-only`), so that a partition, account or limit that refuses
/// them fails `up` now rather than leaving a cluster that cannot grow. Nothing is submitted;
/// a refusal keeps the script, as a refused submission does.
fn check_worker_jobs(
    config: &LaunchConfig,
    files: &RunFiles,
    link: &Link,
    printer: &Printer,
) -> Result<()> {
    let run_dir = link.run_dir.clone().unwrap_or_else(|| files.dir.clone());
    let plain = WorkerType::plain();
    let options = worker_sbatch_args(&config.job.exp_name, &run_dir, "test.0", &plain);
    let said = match slurm::test_only(&options, &files.script, ask_slurm::bound()?) {
        TestOnly::Accepted(said) => said,
        TestOnly::Refused(why) | TestOnly::NoAnswer(why) => {
            return Err(anyhow::anyhow!(why)).with_context(|| {
                format!(
                    "Slurm refuses the worker jobs of elastic cluster {} (--max-nodes), so nothing was submitted; the script is kept at `{}`",
                    show(&config.job.exp_name),
                    files.script.display()
                )
            });
        }
    };
    printer.info(&format!(
        "Slurm takes this cluster's worker jobs (sbatch --test-only: {said})"
    ));
    Ok(())
}

/// Submits the written script and records the run.
fn sbatch(
    config: &LaunchConfig,
    files: &RunFiles,
    bin: &NodeBinary,
    link: Link,
    snapshot: Option<SnapshotInfo>,
    printer: &Printer,
) -> Result<Submitted> {
    let job_id = submit_script(printer, config, files)?;
    let submitted_at = Local::now().fixed_offset();

    let workdir = std::env::current_dir().unwrap_or_else(|_| config.log_dir.clone());
    let launch = (!config.cluster.serve.on).then(|| Box::new(RecordedLaunch::of(config, &link)));
    let record = RunRecord {
        cluster: config.cluster.serve.on,
        max_nodes: config.cluster.serve.max_nodes,
        container_image: config.cluster.container.container_image.clone(),
        run_dir: link.run_dir,
        binary: Some(bin.path.clone()),
        snapshot,
        launch,
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
    if let Some(array) = &config.job.array {
        let records = array_records(&record, files, array.tasks());
        let stored = records
            .iter()
            .map(|r| record_run(r, printer))
            .collect::<Vec<_>>();
        prune_copies(bin, printer);
        let first = records.into_iter().zip(stored).next();
        let (record, stored) = first.context("an array has at least one task")?;
        return Ok(Submitted::Job {
            record: Box::new(record),
            stored: stored.map(Box::new),
        });
    }
    let stored = record_run(&record, printer).map(Box::new);
    prune_copies(bin, printer);
    Ok(Submitted::Job {
        record: Box::new(record),
        stored,
    })
}

/// An array's runs: one record a task (job id `JOBID_TASK`, its own log and state), each
/// naming the array's job.
fn array_records(array: &RunRecord, files: &RunFiles, tasks: &[u32]) -> Vec<RunRecord> {
    tasks
        .iter()
        .filter_map(|&task| {
            let own = files.of_task(task)?;
            Some(RunRecord {
                job_id: format!("{}_{task}", array.job_id),
                log: own.log,
                state_file: own.state,
                array_job: Some(array.job_id.clone()),
                ..array.clone()
            })
        })
        .collect()
}

/// `sbatch SCRIPT`, and what was submitted told (the job id alone, or `--json`, on stdout).
fn submit_script(printer: &Printer, config: &LaunchConfig, files: &RunFiles) -> Result<String> {
    let exp_name = &config.job.exp_name;
    let job_id = slurm::sbatch(&files.script).with_context(|| {
        format!(
            "submitting `{}` failed; the script is kept there",
            files.script.display()
        )
    })?;
    print_result(printer, config.json, config, files, Some(&job_id))?;
    let log = log_of(config, files);
    let tasks = match &config.job.array {
        Some(array) => format!(
            "\n  tasks:  {}{} (each a run of its own: `rayslurm status {exp_name}`, `rayslurm logs {job_id}_{}`)",
            array.tasks().len(),
            array
                .limit()
                .map(|n| format!(", at most {n} at once"))
                .unwrap_or_default(),
            array.tasks().first().copied().unwrap_or_default()
        ),
        None => String::new(),
    };
    printer.info(&format!(
        "submitted job {job_id} ({exp_name})\n  script: {}\n  log:    {}{tasks}",
        files.script.display(),
        log.display()
    ));
    Ok(job_id)
}

/// Keeps the run in the run store. The job is submitted whatever happens here, so a store that
/// cannot be written costs a warning, not the launch.
pub(crate) fn record_run(record: &RunRecord, printer: &Printer) -> Option<(RunStore, StoredRun)> {
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
    json: bool,
    config: &LaunchConfig,
    files: &RunFiles,
    job_id: Option<&str>,
) -> Result<()> {
    if json {
        let result = LaunchResult {
            job_id,
            exp_name: &config.job.exp_name,
            script: files.script.display().to_string(),
            log: log_of(config, files).display().to_string(),
            submitted: job_id.is_some(),
            tasks: match (&config.job.array, job_id) {
                (Some(array), Some(id)) => array
                    .tasks()
                    .iter()
                    .filter_map(|&task| {
                        Some(TaskResult {
                            task,
                            job_id: format!("{id}_{task}"),
                            log: files.of_task(task)?.log.display().to_string(),
                        })
                    })
                    .collect(),
                _ => Vec::new(),
            },
        };
        printer.result(&serde_json::to_string(&result)?);
    } else if let Some(id) = job_id {
        printer.result(id);
    }
    Ok(())
}

/// The run's log; an array's, each task's as `#SBATCH --output` names it (`%a` the task id).
fn log_of(config: &LaunchConfig, files: &RunFiles) -> PathBuf {
    match &config.job.array {
        Some(_) => files
            .task_log_pattern()
            .unwrap_or_else(|| files.log.clone()),
        None => files.log.clone(),
    }
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
