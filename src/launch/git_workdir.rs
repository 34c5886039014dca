//! `--git-workdir URL` with `--git-ref REF` (a task file's `workdir: {url: URL, ref: REF}`):
//! the workdir is a clone of a git repository, made at submission on the login node with the
//! system `git`, and snapshotted as a directory is. A branch or tag is cloned shallow; a
//! commit, which a shallow clone cannot name, by a whole clone and a checkout. A clone that
//! fails is refused with what git said, and nothing is submitted.

use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::error::{UsageError, show};

/// The repository and the ref a run's workdir is cloned from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GitSource {
    pub(crate) url: String,
    /// A branch, tag or commit; the remote's default branch when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reference: Option<String>,
}

impl GitSource {
    /// How the submission names it: `URL@REF`, or the URL alone.
    pub(crate) fn shown(&self) -> String {
        match &self.reference {
            Some(r) => format!("{}@{r}", self.url),
            None => self.url.clone(),
        }
    }

    /// Clones the repository into `dest` (which must not exist) at the ref.
    pub(crate) fn clone_into(&self, dest: &Path) -> Result<(), UsageError> {
        let mut shallow = Command::new("git");
        shallow.args(["clone", "-q", "--depth", "1"]);
        if let Some(r) = &self.reference {
            shallow.args(["--branch", r]);
        }
        let first = match run(shallow.arg("--").arg(&self.url).arg(dest)) {
            Ok(_) => return keep_refs(dest).map_err(|said| self.refused(&said)),
            Err(said) => said,
        };
        // A commit is not a branch or tag: clone it all and check the commit out.
        let Some(reference) = &self.reference else {
            return Err(self.refused(&first));
        };
        let _ = std::fs::remove_dir_all(dest);
        run(Command::new("git")
            .args(["clone", "-q", "--no-checkout", "--"])
            .arg(&self.url)
            .arg(dest))
        .and_then(|_| {
            run(Command::new("git")
                .arg("-C")
                .arg(dest)
                .args(["checkout", "-q", "--detach", reference, "--"]))
        })
        .and_then(|_| keep_refs(dest))
        .map_err(|said| {
            let _ = std::fs::remove_dir_all(dest);
            self.refused(&said)
        })
    }

    fn refused(&self, said: &str) -> UsageError {
        UsageError::new(format!(
            "the git workdir {} could not be cloned, so nothing was submitted: git said: {said}",
            show(&self.shown())
        ))
        .hint("check the URL and that the ref (`ref:`, a branch, tag or commit) is in the repository; `git clone URL` must work on this login node")
    }
}

/// Names the checked-out commit `refs/rayslurm/workdir` in the clone. A snapshot copies files,
/// not empty directories, and a clone of a tag or commit may hold its refs only in
/// `packed-refs`: without a file under `refs/`, the nodes' copy would not be a repository.
fn keep_refs(dest: &Path) -> Result<(), String> {
    run(Command::new("git").arg("-C").arg(dest).args([
        "update-ref",
        "refs/rayslurm/workdir",
        "HEAD",
    ]))
    .map(|_| ())
}

/// Runs a git command, never asking for a password: its stdout, or what it said on stderr
/// when it fails.
pub(crate) fn run(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let out = cmd
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    Err(if said.is_empty() {
        format!("exited with {}", out.status)
    } else {
        said
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A bare repository made here, with `train.py` at tag `v1` (and at commit `first`), and
    /// another file on `main` after it: (its directory, its file:// URL, the first commit).
    pub(crate) fn bare_repo() -> (tempfile::TempDir, String, String) {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        let bare = tmp.path().join("repo.git");
        let git = |dir: &Path, args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        std::fs::create_dir(&work).unwrap();
        git(&work, &["init", "-q", "-b", "main"]);
        std::fs::write(work.join("train.py"), "print('v1')\n").unwrap();
        git(&work, &["add", "train.py"]);
        git(&work, &["commit", "-qm", "one"]);
        git(&work, &["tag", "v1"]);
        let first = git(&work, &["rev-parse", "HEAD"]);
        std::fs::write(work.join("later.py"), "x\n").unwrap();
        git(&work, &["add", "later.py"]);
        git(&work, &["commit", "-qm", "two"]);
        git(tmp.path(), &["clone", "-q", "--bare", "work", "repo.git"]);
        let url = format!("file://{}", bare.display());
        (tmp, url, first)
    }

    #[test]
    fn a_tag_a_commit_and_the_default_branch_are_cloned() {
        let (_repo, url, first) = bare_repo();
        let clone = |reference: Option<&str>| {
            let dest = tempfile::tempdir().unwrap();
            let to = dest.path().join("c");
            GitSource {
                url: url.clone(),
                reference: reference.map(str::to_owned),
            }
            .clone_into(&to)
            .unwrap();
            // A file under `refs/`: a copy of the files alone is still a repository.
            assert!(to.join(".git/refs/rayslurm/workdir").is_file());
            (
                to.join("later.py").exists(),
                to.join("train.py").exists(),
                dest,
            )
        };
        assert!(matches!(clone(Some("v1")), (false, true, _)));
        assert!(matches!(clone(Some(&first)), (false, true, _)));
        assert!(matches!(clone(None), (true, true, _)));
    }

    #[test]
    fn a_clone_that_fails_says_what_git_said() {
        let (_repo, url, _) = bare_repo();
        let dest = tempfile::tempdir().unwrap();
        let err = GitSource {
            url,
            reference: Some("no-such-ref".into()),
        }
        .clone_into(&dest.path().join("c"))
        .unwrap_err();
        assert!(
            err.message.contains("could not be cloned"),
            "{}",
            err.message
        );
        assert!(err.message.contains("no-such-ref"), "{}", err.message);
        assert!(!dest.path().join("c").exists());
    }
}
