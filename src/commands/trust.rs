//! `rayslurm trust FILE`: accept a project file's guarded settings (those that run code as the
//! user, `launch::project_file::guarded_keys`) as the file is now; `--list` and `--revoke`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::TrustArgs;
use crate::error::{UsageError, show};
use crate::launch::config::parse_config;
use crate::launch::config::project_file::guarded_keys;
use crate::launch::config::trust::TrustStore;
use crate::printer::Printer;

pub(crate) fn run(args: &TrustArgs, printer: &Printer) -> Result<ExitCode> {
    let TrustArgs { file, revoke, list } = args;
    let store = TrustStore::from_env()?;
    match (file, *revoke, *list) {
        (_, _, true) => list_trusted(&store, printer),
        (Some(file), true, _) => forget(&store, file, printer),
        (Some(file), false, _) => trust(&store, file, printer),
        // clap requires FILE without --list.
        (None, _, false) => Err(UsageError::new("name the file to trust").into()),
    }
}

fn trust(store: &TrustStore, file: &Path, printer: &Printer) -> Result<ExitCode> {
    let cannot = |e: std::io::Error| {
        UsageError::new(format!(
            "cannot read {}: {e}",
            show(&file.to_string_lossy())
        ))
        .hint("name the project file to trust, e.g. `rayslurm trust ./rayslurm.toml`")
    };
    let content = std::fs::read(file).map_err(cannot)?;
    let canonical = file.canonicalize().map_err(cannot)?;
    // A file that cannot be used is not worth trusting: say why now, not at the next launch.
    let defaults = parse_config(&canonical, &String::from_utf8_lossy(&content))?;
    let record = store.record(&canonical, &content)?;
    let keys = guarded_keys(&defaults);
    let sets = if keys.is_empty() {
        "it sets nothing that runs code".to_owned()
    } else {
        format!("its {} will be used", keys.join(", "))
    };
    printer.info(&format!(
        "trusted `{}` as it is now (sha256 {}): {sets}; after any change, trust it again",
        record.path.display(),
        &record.sha256[..16]
    ));
    Ok(ExitCode::SUCCESS)
}

fn forget(store: &TrustStore, file: &Path, printer: &Printer) -> Result<ExitCode> {
    // A file removed since it was trusted is forgotten by the path it had.
    let canonical = file.canonicalize().unwrap_or_else(|_| absolute(file));
    if store.revoke(&canonical)? {
        printer.info(&format!("`{}` is no longer trusted", canonical.display()));
        Ok(ExitCode::SUCCESS)
    } else {
        Err(
            UsageError::new(format!("`{}` was not trusted", canonical.display()))
                .hint("`rayslurm trust --list` shows the trusted files")
                .into(),
        )
    }
}

fn absolute(file: &Path) -> PathBuf {
    std::path::absolute(file).unwrap_or_else(|_| file.to_owned())
}

/// One line a trusted file on stdout: its path, the first 16 digits of its SHA-256, and when.
fn list_trusted(store: &TrustStore, printer: &Printer) -> Result<ExitCode> {
    let records = store.list()?;
    if records.is_empty() {
        printer.info("no project file is trusted");
    }
    for r in records {
        printer.result(&format!(
            "{}\t{}\t{}",
            r.path.display(),
            &r.sha256[..16.min(r.sha256.len())],
            r.trusted_at
        ));
    }
    Ok(ExitCode::SUCCESS)
}
