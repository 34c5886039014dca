//! The Python package's types, checked by mypy in strict mode: the package itself, a user's
//! typed use of it (`tests/python/typing/uses.py`, which must pass) and a misuse
//! (`tests/python/typing/refused.py`: each line marked `# refused: WORD` must be an error that
//! names WORD, and no other line may be). mypy comes from `RAYSLURM_TEST_MYPY`, or the venv
//! `tests/python/tools.sh` makes (`target/python-tools`, what tests/run.sh runs first);
//! without either the test is skipped loudly (a failure under CI unless
//! `RAYSLURM_TEST_MYPY=0`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::{skip, text};

const VARIABLE: &str = "RAYSLURM_TEST_MYPY";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The mypy to run, if there is one.
fn mypy() -> Option<PathBuf> {
    match std::env::var_os(VARIABLE) {
        Some(v) if v == "0" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => Some(repo().join("target/python-tools/bin/mypy")).filter(|p| p.is_file()),
    }
}

fn run_mypy(mypy: &Path, what: &[&str]) -> Output {
    Command::new(mypy)
        .args(["--strict", "--no-incremental", "--cache-dir", "/dev/null"])
        .args(what)
        .current_dir(repo().join("python"))
        .env("MYPYPATH", repo().join("python"))
        .output()
        .expect("mypy runs")
}

/// The lines of `refused.py` marked `# refused: WORD`, and their WORD.
fn marked(file: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let (_, word) = line.split_once("# refused: ")?;
            Some((i + 1, word.trim().to_owned()))
        })
        .collect()
}

#[test]
fn the_package_and_its_use_pass_mypy_strict() {
    let Some(mypy) = mypy() else {
        skip(
            "python_typing::the_package_and_its_use_pass_mypy_strict",
            "no mypy (bash tests/python/tools.sh makes target/python-tools)",
            Some(VARIABLE),
        );
        return;
    };
    let typing = repo().join("tests/python/typing");
    let uses = typing.join("uses.py");
    let package = repo().join("python/rayslurm");
    let out = run_mypy(&mypy, &[package.to_str().unwrap(), uses.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Success: no issues found"), "{stdout}");

    let refused = typing.join("refused.py");
    let out = run_mypy(&mypy, &[refused.to_str().unwrap()]);
    let (stdout, _) = text(&out);
    assert!(!out.status.success(), "mypy took every misuse:\n{stdout}");
    let errors: Vec<&str> = stdout.lines().filter(|l| l.contains(": error: ")).collect();
    let marks = marked(&refused);
    assert!(marks.len() >= 5, "{marks:?}");
    for (line, word) in &marks {
        let at = format!("refused.py:{line}: error: ");
        assert!(
            errors
                .iter()
                .any(|e| e.contains(&at) && e.contains(word.as_str())),
            "line {line} of refused.py (`{word}`) was not refused:\n{stdout}"
        );
    }
    for error in &errors {
        assert!(
            marks
                .iter()
                .any(|(line, _)| error.contains(&format!("refused.py:{line}: "))),
            "an error on a line not marked `# refused:`:\n{stdout}"
        );
    }
}
