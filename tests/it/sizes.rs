//! Sizes that keep the code easy to read: no source file over 500 lines, no test file over 900
//! (functions over 80 lines are clippy's `too_many_lines`, set in clippy.toml and Cargo.toml).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The files under `dir` (relative to the crate) longer than `limit` lines, with their lengths.
fn longer_than(dir: &str, limit: usize) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join(dir), &mut files);
    assert!(files.len() > 5, "no Rust files found under {dir}");
    files
        .into_iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            (n > limit).then(|| format!("{}: {n} lines", f.strip_prefix(root).unwrap().display()))
        })
        .collect()
}

#[test]
fn no_source_file_is_over_500_lines() {
    let long = longer_than("src", 500);
    assert!(long.is_empty(), "split by subject:\n{}", long.join("\n"));
}

#[test]
fn no_test_file_is_over_900_lines() {
    let long = longer_than("tests", 900);
    assert!(
        long.is_empty(),
        "one file per feature:\n{}",
        long.join("\n")
    );
}
