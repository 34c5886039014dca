//! Names the build for `rayslurm --version`: the git commit it was built from and the target
//! triple, so that a user's report (or a node's failure) says which binary ran.
//!
//! Sets `RAYSLURM_BUILD_COMMIT` (short hash, or `unknown` when the crate is not built from its
//! own git checkout: a source archive, a vendored copy, no git installed) and
//! `RAYSLURM_BUILD_TARGET`. Never fails the build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = commit(&root).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=RAYSLURM_BUILD_COMMIT={commit}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=RAYSLURM_BUILD_TARGET={target}");
}

/// The short hash of HEAD, if `root` is the top of a git work tree. Asks cargo to run this
/// again when HEAD moves (a commit, a checkout), and not on every build.
fn commit(root: &Path) -> Option<String> {
    // Inside another project's repository (a vendored copy) its commit would be wrong.
    let top = git(root, &["rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()? != root.canonicalize().ok()? {
        return None;
    }
    // HEAD names a branch, whose ref is a loose file or a line in packed-refs; `--git-path`
    // finds both in a linked worktree too.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(root, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in &watched {
        if let Some(path) = git(root, &["rev-parse", "--git-path", name]) {
            let path = root.join(path);
            // A path that does not exist would make cargo run this script every time.
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    git(root, &["rev-parse", "--short=7", "HEAD"])
}

/// What a git command printed, trimmed, if it ran and succeeded.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}
