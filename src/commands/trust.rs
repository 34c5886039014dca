//! `rayslurm trust FILE`: accept a project file's guarded settings (those that run code as the
//! user, `launch::project_file::guarded_keys`) as the file is now; `--list` and `--revoke`.
//! The file is read once; each guarded key is shown with its value, with the SHA-256 of the
//! bytes read, and that digest is what is recorded, after a yes or a `--digest` that matches:
//! what is trusted is what the user saw, never a later version of the file.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::TrustArgs;
use crate::error::{UsageError, show};
use crate::launch::config::parse_config;
use crate::launch::config::project_file::guarded_keys;
use crate::launch::config::trust::TrustStore;
use crate::printer::Printer;
use crate::sys::digest::sha256_hex;
use crate::sys::private_tree::owner_name;

pub(crate) fn run(args: &TrustArgs, printer: &Printer) -> Result<ExitCode> {
    let TrustArgs {
        file,
        revoke,
        list,
        digest,
    } = args;
    let store = TrustStore::from_env()?;
    match (file, *revoke, *list) {
        (_, _, true) => list_trusted(&store, printer),
        (Some(file), true, _) => forget(&store, file, printer),
        (Some(file), false, _) => trust(&store, file, digest.as_deref(), printer),
        // clap requires FILE without --list.
        (None, _, false) => Err(UsageError::new("name the file to trust").into()),
    }
}

/// Reads the file once, shows what it would run and its SHA-256, and records the digest of
/// those very bytes once the user said yes (or gave that digest with `--digest`).
fn trust(
    store: &TrustStore,
    file: &Path,
    given: Option<&str>,
    printer: &Printer,
) -> Result<ExitCode> {
    let cannot = |e: std::io::Error| {
        UsageError::new(format!(
            "cannot read {}: {e}",
            show(&file.to_string_lossy())
        ))
        .hint("name the project file to trust, e.g. `rayslurm trust ./rayslurm.toml`")
    };
    let mut opened = std::fs::File::open(file).map_err(cannot)?;
    let meta = opened.metadata().map_err(cannot)?;
    let mut content = Vec::new();
    opened.read_to_end(&mut content).map_err(cannot)?;
    let canonical = file.canonicalize().map_err(cannot)?;
    let text = String::from_utf8_lossy(&content);
    // A file that cannot be used is not worth trusting: say why now, not at the next launch.
    let defaults = parse_config(&canonical, &text)?;
    let keys = guarded_keys(&defaults);
    let sha256 = sha256_hex(&content);
    printer.result(&shown(&canonical, &meta, &text, &keys, &sha256));
    match given {
        Some(given) => check_digest(&canonical, given, &sha256)?,
        None => ask(&canonical, &sha256)?,
    }
    // What is recorded is the digest of what was shown; a file changed since then would not
    // be trusted at a launch anyway, and is refused here so that no one thinks it was.
    if given.is_none() {
        let now = std::fs::read(file)
            .map(|c| sha256_hex(&c))
            .map_err(cannot)?;
        if now != sha256 {
            return Err(UsageError::new(format!(
                "`{}` changed after it was shown (SHA-256 {sha256} shown, {now} now), so nothing was trusted",
                canonical.display()
            ))
            .hint("read it again: run `rayslurm trust` on it once more")
            .into());
        }
    }
    let record = store.record(&canonical, &content)?;
    let sets = if keys.is_empty() {
        "it sets nothing that runs code".to_owned()
    } else {
        format!("its {} will be used", keys.join(", "))
    };
    printer.info(&format!(
        "trusted `{}` as it was shown (sha256 {}): {sets}; after any change, trust it again",
        record.path.display(),
        record.sha256
    ));
    Ok(ExitCode::SUCCESS)
}

/// What the user is asked to trust: the file, its owner and mode, each key that runs code
/// with its value as written, and the SHA-256 of the bytes read.
fn shown(path: &Path, meta: &std::fs::Metadata, text: &str, keys: &[&str], sha256: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    let launch = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("launch").and_then(|l| l.as_table()).cloned())
        .unwrap_or_default();
    let mut out = format!(
        "{} (owner {}, mode {:04o})\nsha256 {sha256}\n",
        path.display(),
        owner_name(meta.uid()),
        meta.mode() & 0o7777
    );
    if keys.is_empty() {
        out.push_str("it sets nothing that runs code as you");
    } else {
        out.push_str("what it runs as you, or lets through, when trusted:");
        for key in keys {
            let value = launch.get(*key).map_or_else(String::new, value_shown);
            out.push_str(&format!("\n  {key} = {value}"));
        }
    }
    out
}

/// A value as the user should read it: strings quoted with every control character escaped
/// (nothing the file holds can move the terminal's cursor or hide a line).
fn value_shown(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("\"{}\"", s.escape_debug()),
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(value_shown).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string().escape_debug().to_string(),
    }
}

/// `--digest`: the SHA-256 given must be the file's, as read and shown.
fn check_digest(path: &Path, given: &str, sha256: &str) -> Result<(), UsageError> {
    if given.trim().eq_ignore_ascii_case(sha256) {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "the SHA-256 of `{}` is {sha256}, not the {} given with --digest, so nothing was trusted: it is not the content you checked",
        path.display(),
        show(given)
    ))
    .hint("read what it sets (shown above), then trust it with the digest shown, or without --digest to be asked"))
}

/// Asks on the terminal; anything but yes (an empty line, the end of input) trusts nothing.
fn ask(path: &Path, sha256: &str) -> Result<(), UsageError> {
    eprint!(
        "trust `{}` as shown above (sha256 {})? [y/N] ",
        path.display(),
        &sha256[..16]
    );
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    let yes = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    if !std::io::stdin().is_terminal() {
        // What was read, where a terminal would have echoed it.
        eprintln!("{}", answer.trim_end().escape_debug());
    }
    if yes {
        return Ok(());
    }
    Err(
        UsageError::new(format!("`{}` was not trusted: no yes was given", path.display())).hint(
            "answer `y` once you read what it sets, or, without a terminal, pass --digest with the SHA-256 shown above",
        ),
    )
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
