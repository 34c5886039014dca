//! `docs/options.md` stays true: every option `launch`, `up` and `exec` offer is in it, and
//! each `console` example is run (in a scratch directory, rayslurm on PATH) and must print
//! the lines shown (a line ending in `...` is matched up to the dots).

use std::path::Path;

use crate::harness::{bin, rayslurm, text};

const PAGE: &str = include_str!("../../../docs/options.md");

#[test]
fn every_option_is_in_the_reference() {
    let longs = regex::Regex::new(r"(?m)^\s+(?:-\w, )?(--[a-z][a-z-]+)").unwrap();
    for command in ["launch", "up", "exec"] {
        let help = text(&rayslurm([command, "--help"]).output()).0;
        for long in longs.captures_iter(&help).map(|c| c[1].to_owned()) {
            if ["--help", "--version"].contains(&long.as_str()) {
                continue;
            }
            assert!(PAGE.contains(&format!("`{long}")), "{command} {long}");
        }
    }
}

/// The `$ ` lines of the page's console blocks, each with the lines it must print.
fn examples() -> Vec<(String, Vec<String>)> {
    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    let mut inside = false;
    for line in PAGE.lines() {
        if line.starts_with("```") {
            inside = line == "```console";
            continue;
        }
        if !inside {
            continue;
        }
        match line.strip_prefix("$ ") {
            Some(cmd) => found.push((cmd.to_owned(), Vec::new())),
            None => found.last_mut().unwrap().1.push(line.to_owned()),
        }
    }
    found
}

#[test]
fn the_examples_print_what_the_page_shows() {
    let dir = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let examples = examples();
    assert!(examples.len() >= 6, "{examples:?}");
    for (cmd, want) in examples {
        let out = run_in(dir.path(), &path, &cmd);
        for line in want {
            // `[..]` stands for any text of the line, as in the README's examples.
            let part = line.strip_suffix("...").unwrap_or(&line);
            let pattern = part
                .split("[..]")
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join(".*");
            assert!(
                regex::Regex::new(&pattern).unwrap().is_match(&out),
                "`{cmd}` did not print `{part}`:\n{out}"
            );
        }
    }
}

/// `cmd` through bash in `dir`, with no config but what the command names; stdout and stderr.
fn run_in(dir: &Path, path: &str, cmd: &str) -> String {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("{cmd} 2>&1"))
        .current_dir(dir)
        .env("PATH", path)
        .env("RAYSLURM_CONFIG", "/dev/null")
        .env("RAYSLURM_STATE_DIR", dir.join(".state"))
        .env_remove("RAYSLURM_TIME")
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}
