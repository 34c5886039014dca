//! The dependency rule of `src/main.rs`, checked on the source: which layer may name which.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The top-level modules a layer's files name as `crate::X`, with the file of each.
fn uses(layer: &str) -> BTreeSet<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let re = regex::Regex::new(r"crate::([a-z_]+)").unwrap();
    let mut found = BTreeSet::new();
    for file in rust_files(&src.join(layer)) {
        let text = std::fs::read_to_string(&file).unwrap();
        for cap in re.captures_iter(&text) {
            let name = file.strip_prefix(&src).unwrap().display().to_string();
            found.insert((cap[1].to_owned(), name));
        }
    }
    assert!(
        !found.is_empty() || layer == "sys",
        "no uses found in {layer}"
    );
    found
}

fn assert_only(layer: &str, allowed: &[&str]) {
    let bad: Vec<String> = uses(layer)
        .into_iter()
        .filter(|(module, _)| module != layer && !allowed.contains(&module.as_str()))
        .map(|(module, file)| format!("{file} uses crate::{module}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{layer}/ may use only {allowed:?}:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_bootstrap_uses_only_the_layers_it_shares_with_the_launcher() {
    assert_only("bootstrap", &["handoff", "slurm", "sys", "error"]);
}

#[test]
fn the_shared_layers_stay_below_the_login_side() {
    assert_only("handoff", &["sys", "error"]);
    assert_only("slurm", &["sys", "error"]);
    assert_only("sys", &["error"]);
}

#[test]
fn the_login_side_never_reaches_into_the_bootstrap() {
    for layer in ["launch", "runs", "clusters"] {
        let bad: Vec<_> = uses(layer)
            .into_iter()
            .filter(|(module, _)| module == "bootstrap" || module == "commands")
            .collect();
        assert!(bad.is_empty(), "{layer}/: {bad:?}");
    }
}

#[test]
fn the_launcher_knows_nothing_of_what_follows_a_run() {
    assert_only(
        "launch",
        &[
            "handoff",
            "slurm",
            "sys",
            "error",
            "env_vars",
            "printer",
            "state_dir",
        ],
    );
}

#[test]
fn runs_know_nothing_of_clusters() {
    let bad: Vec<_> = uses("runs")
        .into_iter()
        .filter(|(module, _)| ["clusters", "cli", "commands"].contains(&module.as_str()))
        .collect();
    assert!(bad.is_empty(), "runs/: {bad:?}");
}

/// The clap structs stay at the top: only `main.rs` and `commands/` (which resolve them into
/// each command's settings) name `cli`, so no layer below knows the command line.
#[test]
fn only_main_and_the_commands_use_the_command_line() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bad = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if ["main.rs", "cli", "commands"].contains(&name.as_str()) {
            continue;
        }
        if path.is_dir() {
            bad.extend(
                uses(&name)
                    .into_iter()
                    .filter(|(module, _)| module == "cli")
                    .map(|(_, file)| file),
            );
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("crate::cli") {
                bad.push(name);
            }
        }
    }
    assert!(bad.is_empty(), "these use crate::cli: {bad:?}");
}
