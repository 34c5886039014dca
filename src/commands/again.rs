//! `rayslurm launch --again RUN`: a new recorded run from RUN's script and binary. The script
//! is read from the private tree alone (opened without following links, the user's own, its
//! SHA-256 the one RUN's record holds; a script elsewhere is never submitted), written again
//! under a new name, its files' paths renamed (a new log, final state and run
//! directory; RUN's own are left as they are), and submitted, recorded and followed as a launch
//! is. What the script runs is what RUN ran: its options, command, environment and the very
//! copy of rayslurm (checked by its SHA-256, as every script checks it).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use chrono::Local;

use crate::commands::settings::again::AgainSettings;
use crate::commands::submit::{record_run, show_dry_run, submit_script};
use crate::error::{UsageError, show};
use crate::handoff::run_files::RunFiles;
use crate::launch::log_dir;
use crate::launch::node_binary::{BIN, node_visible_copy};
use crate::launch::script_files;
use crate::printer::Printer;
use crate::runs::follow;
use crate::runs::log_tail::Start;
use crate::runs::select;
use crate::runs::store::{self, RunRecord, RunStore, StoredRun};
use crate::state_dir::{private_root, tree_error};
use crate::sys::digest::{sha256_file, sha256_hex};

pub(crate) fn run(settings: &AgainSettings, printer: &Printer) -> Result<ExitCode> {
    let store = RunStore::from_env()?;
    let runs = store::load_warning(&store, printer)?;
    let before = select::resolve(&runs, &settings.run, store.dir())?.latest();
    let (old, text) = script_of(before)?;
    let binary = binary_of(&before.record, &text)?;
    // Everything that can be refused is checked before a file is written.
    log_dir::check(
        &settings.log_dir,
        settings.log_dir_is_default,
        !settings.dry_run,
    )?;
    if !settings.dry_run {
        if which::which("sbatch").is_err() {
            return Err(UsageError::new(
                "`sbatch` was not found on PATH, so nothing can be submitted",
            )
            .hint("run on a Slurm login node, or pass --dry-run to only write the script")
            .into());
        }
        log_dir::make_default(&settings.log_dir, settings.log_dir_is_default)?;
    }
    let exp_name = &before.record.exp_name;
    let jobs = private_root()?.dir("jobs").map_err(tree_error)?;
    let files = script_files::write_new(
        jobs.path(),
        (!settings.dry_run).then_some(settings.log_dir.as_path()),
        exp_name,
        &Local::now(),
        |new| {
            script_files::renamed(&text, &old, new).ok_or_else(|| {
                UsageError::new(format!(
                    "the script of {} (job {}) does not name its log and final state as paths, so they cannot be renamed for a new run",
                    show(exp_name),
                    before.record.job_id
                ))
                .hint("launch it anew with `rayslurm launch` (a template of your own must name `log_path` and `state_path` as they are)")
                .into()
            })
        },
    )?;
    if settings.dry_run {
        show_dry_run(printer, settings.json, exp_name, &files)?;
        return Ok(ExitCode::SUCCESS);
    }
    submitted(settings, before, &files, binary, printer)
}

/// Submits the new script, records it as a run of its own and follows it if asked.
fn submitted(
    settings: &AgainSettings,
    before: &StoredRun,
    files: &RunFiles,
    binary: PathBuf,
    printer: &Printer,
) -> Result<ExitCode> {
    let old = &before.record;
    let job_id = submit_script(printer, settings.json, &old.exp_name, files)?;
    printer.info(&format!(
        "job {job_id} runs {} (job {}) again",
        old.exp_name, old.job_id
    ));
    let workdir = std::env::current_dir().unwrap_or_else(|_| old.workdir.clone());
    let record = RunRecord {
        run_dir: old.run_dir.clone(),
        binary: Some(binary),
        // The same script: the same image.
        container_image: old.container_image.clone(),
        script_sha256: sha256_file(&files.script).ok(),
        ..RunRecord::new(
            &old.exp_name,
            &job_id,
            files,
            Local::now().fixed_offset(),
            &workdir,
            &old.command,
            old.num_nodes,
        )
    };
    let stored = record_run(&record, printer);
    if !settings.follow {
        return Ok(ExitCode::SUCCESS);
    }
    let request = follow::Request {
        record: &record,
        stored: stored.as_ref().map(|(store, run)| (store, run)),
        start: Start::Beginning,
        cancel_on_interrupt: settings.cancel_on_interrupt,
    };
    follow::follow(&request, printer)
}

/// The files of the run and its script's text; a cluster or a run whose script is gone
/// cannot be run again.
fn script_of(run: &StoredRun) -> Result<(RunFiles, String), UsageError> {
    let record = &run.record;
    let name = format!("{} (job {})", show(&record.exp_name), record.job_id);
    if record.cluster {
        return Err(
            UsageError::new(format!("{name} is a cluster, not a run to run again")).hint(format!(
                "start a cluster again with `rayslurm up {}`",
                record.exp_name
            )),
        );
    }
    let files = record.files().ok_or_else(|| {
        UsageError::new(format!(
            "the record of {name} names no files of a run (`{}`)",
            record.state_file.display()
        ))
    })?;
    let jobs = private_root()?.dir("jobs").map_err(tree_error)?;
    let script = record.script.display();
    let anew = "launch it anew with `rayslurm launch`";
    // Only a script in the private tree: one elsewhere (an older rayslurm kept them beside
    // the logs) may have been changed by anyone who can write there.
    let in_tree = record
        .script
        .parent()
        .and_then(|p| p.canonicalize().ok())
        .is_some_and(|p| p == jobs.path());
    let Some(file_name) = record.script.file_name().filter(|_| in_tree) else {
        return Err(UsageError::new(format!(
            "the script of {name}, `{script}`, lies outside your private directory `{}`, where another user may have changed it, so it is not submitted again",
            jobs.path().display()
        ))
        .hint(anew));
    };
    let bytes = jobs.read_own_file(file_name).map_err(|e| {
        UsageError::new(format!(
            "the script of {name} cannot be read from your private directory ({e}), so it cannot be run again"
        ))
        .hint(anew)
    })?;
    let digest = sha256_hex(&bytes);
    if let Some(want) = &record.script_sha256
        && *want != digest
    {
        return Err(UsageError::new(format!(
            "the script of {name}, `{script}`, is not the one submitted (SHA-256 {want} recorded, {digest} now), so it is not submitted again"
        ))
        .hint(anew));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        UsageError::new(format!(
            "the script of {name}, `{script}`, is not UTF-8 text"
        ))
        .hint(anew)
    })?;
    Ok((files, text))
}

/// The copy of rayslurm the script runs (its record names it, or, for a record written
/// before that was kept, its script does), checked to be the one the script expects (its
/// SHA-256 is in the script's check). A copy removed since is put back if this rayslurm is
/// that build.
fn binary_of(record: &RunRecord, text: &str) -> Result<PathBuf, UsageError> {
    let root = private_root()?;
    let bin = root.path().join(BIN);
    let named = record.binary.clone().or_else(|| {
        let name = regex::Regex::new(r"rayslurm-[0-9A-Za-z.+-]*?-[0-9a-f]{16}\b")
            .ok()?
            .find(text)?
            .as_str()
            .to_owned();
        Some(bin.join(name))
    });
    let is_expected = |p: &PathBuf| sha256_file(p).is_ok_and(|d| text.contains(&d));
    if let Some(path) = &named {
        if is_expected(path) {
            return Ok(path.clone());
        }
        // Gone (or changed): this build may be the one the script runs (asked first without
        // copying: a refusal writes nothing).
        if node_visible_copy(&root, true).is_ok_and(|c| &c.path == path && text.contains(&c.sha256))
        {
            let copy = node_visible_copy(&root, false).map_err(|e| {
                UsageError::new(format!("cannot put back `{}`: {e:#}", path.display()))
            })?;
            return Ok(copy.path);
        }
    }
    Err(UsageError::new(format!(
        "the copy of rayslurm that {} (job {}) ran, {}, is gone or changed, so its script cannot run again",
        show(&record.exp_name),
        record.job_id,
        named.map_or_else(|| "(not named in its script)".to_owned(), |p| format!("`{}`", p.display()))
    ))
    .hint("launch it anew with `rayslurm launch`, which copies this rayslurm"))
}
