//! Sizes that keep the code easy to read: no source file over 500 lines (the Python package's
//! too), no test file over 900 (functions over 80 lines are clippy's `too_many_lines`, set in
//! clippy.toml and Cargo.toml).

use std::path::{Path, PathBuf};

fn files(dir: &Path, extension: &str, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, extension, found);
        } else if path.extension().is_some_and(|e| e == extension) {
            found.push(path);
        }
    }
}

/// The `.rs` files under `dir` (relative to the crate) longer than `limit` lines, with their
/// lengths.
fn longer_than(dir: &str, limit: usize) -> Vec<String> {
    longer_than_in(dir, "rs", limit)
}

/// The files under `dir` named `*.{extension}` longer than `limit` lines, with their lengths.
fn longer_than_in(dir: &str, extension: &str, limit: usize) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    files(&root.join(dir), extension, &mut found);
    assert!(found.len() > 3, "no .{extension} files found under {dir}");
    found
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
fn no_python_file_is_over_500_lines() {
    let long = longer_than_in("python", "py", 500);
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
