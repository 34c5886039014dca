//! `.skyignore`: SkyPilot's file of patterns (a `.gitignore`'s syntax) that a workdir or a
//! file mount's directory leaves out of its copy. As in SkyPilot, one at the directory's top
//! takes the place of `.gitignore` altogether: every file is copied but those it (and any
//! `.skyignore` below it) names, whatever `.gitignore` says. Git's own matcher reads it, with a
//! throwaway repository, so that neither `.gitignore` nor the user's global excludes apply.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{UsageError, show};
use crate::launch::git_workdir;
use crate::launch::snapshot::nul_separated;

/// The file's name, at the top of a directory (and below it).
pub(crate) const SKYIGNORE: &str = ".skyignore";

/// Every file of `dir` but those its `.skyignore` files name (`.git` is never listed).
pub(crate) fn kept(dir: &Path) -> Result<Vec<PathBuf>, UsageError> {
    let cannot = |why: String| {
        UsageError::new(format!(
            "cannot apply the .skyignore of {}: {why}",
            show(&dir.display().to_string())
        ))
        .hint("a .skyignore is read with git: install git, or remove the .skyignore")
    };
    let scratch = tempfile::tempdir().map_err(|e| cannot(e.to_string()))?;
    let git_dir = scratch.path().join("git");
    git_workdir::run(
        Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(&git_dir),
    )
    .map_err(cannot)?;
    let out = git_workdir::run(
        Command::new("git")
            .arg("--git-dir")
            .arg(&git_dir)
            .arg("--work-tree")
            .arg(dir)
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "core.bare=false",
                "-c",
                "core.excludesFile=/dev/null",
                "ls-files",
                "-o",
                "-z",
                "--exclude-per-directory",
                SKYIGNORE,
            ]),
    )
    .map_err(cannot)?;
    Ok(nul_separated(&out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::snapshot::{Kept, kept_files};

    /// A git repository whose `.gitignore` names `logs/` and `data.bin`, and whose
    /// `.skyignore` (at the top and in `sub/`) names `data.bin`, `secret/` and `sub/*.tmp`.
    fn repo(with_skyignore: bool) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let out = Command::new("git")
            .arg("-C")
            .arg(d)
            .args(["init", "-q"])
            .output()
            .unwrap();
        assert!(out.status.success());
        std::fs::write(d.join(".gitignore"), "logs/\ndata.bin\n").unwrap();
        for dir in ["logs", "secret", "sub"] {
            std::fs::create_dir(d.join(dir)).unwrap();
        }
        for f in [
            "train.py",
            "data.bin",
            "logs/a.log",
            "secret/key",
            "sub/x.tmp",
            "sub/y.py",
        ] {
            std::fs::write(d.join(f), f).unwrap();
        }
        if with_skyignore {
            std::fs::write(d.join(SKYIGNORE), "# comment\ndata.bin\n/secret/\n").unwrap();
            std::fs::write(d.join("sub").join(SKYIGNORE), "*.tmp\n").unwrap();
        }
        tmp
    }

    fn names(kept: Kept) -> Vec<String> {
        let (Kept::Git(files) | Kept::All(files)) = kept;
        let mut names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_skyignore_takes_the_place_of_gitignore() {
        let with = repo(true);
        assert_eq!(
            names(kept_files(with.path()).unwrap()),
            [
                ".gitignore",
                ".skyignore",
                "logs/a.log",
                "sub/.skyignore",
                "sub/y.py",
                "train.py"
            ]
        );
        let without = repo(false);
        assert_eq!(
            names(kept_files(without.path()).unwrap()),
            [
                ".gitignore",
                "secret/key",
                "sub/x.tmp",
                "sub/y.py",
                "train.py"
            ]
        );
    }
}
