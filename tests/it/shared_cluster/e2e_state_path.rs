//! End-to-end: symbolic links on the way to the private tree (`RAYSLURM_STATE_DIR`), tried as
//! the group's second member (`rsbob`) against runs of the first (`rsalice`). A link in the
//! group's 2775 directory is refused at the launch (any member may swap it); one in a
//! directory of the victim's own is followed, and the run uses the resolved path from then
//! on: the link changed while the job waits in the queue changes nothing of the run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::harness::{lab, text, unique_name, wait_job_end};
use crate::shared_cluster::two_users::{project_dir, sh_as};

const VICTIM: &str = "rsalice";
const ATTACKER: &str = "rsbob";

/// Every file below `dir` (none if it is gone), sorted.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p.clone());
            }
            found.push(p);
        }
    }
    found.sort();
    found
}

/// The victim's private directory in their home (0700), removed at the end.
struct Home(PathBuf);

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("link"));
    }
}

/// `RAYSLURM_STATE_DIR=/proj/grp/alice/state`, `alice` a link in the group's directory, where
/// any member may replace it: refused before anything is written or submitted.
fn the_link_in_the_groups_directory_is_refused(dir: &Path, home: &Home, exp: &str) {
    let out = sh_as(
        VICTIM,
        dir,
        &format!(
            "RAYSLURM_STATE_DIR=$PWD/alice/state \"$RAYSLURM\" launch --exp-name {exp} --no-ray --command true"
        ),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stdout, "");
    assert!(stderr.contains("mode 2775"), "{stderr}");
    assert!(stderr.contains("can be written by others"), "{stderr}");
    assert!(stderr.contains("RAYSLURM_STATE_DIR"), "{stderr}");
    assert!(
        !home.0.join("state").exists(),
        "nothing written through the link"
    );
    let queued = Command::new("squeue")
        .args(["-h", "-n", exp, "-o", "%i"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&queued.stdout).trim(),
        "",
        "nothing submitted"
    );
}

/// While the victim's run waits: the attacker plants a tree of his own (a binary under the
/// name of the victim's copy, directories anyone can write) and swaps what he can. The link in
/// the group's directory is his to replace (the run never used it); the victim's own link is
/// not, so it is changed as the victim (or root) could: to lead to the attacker's tree.
fn the_attacker_swaps_what_he_can(dir: &Path, home: &Home, bin: &std::ffi::OsStr, marker: &Path) {
    let home_dir = home.0.display().to_string();
    let out = sh_as(
        ATTACKER,
        dir,
        &format!(
            "mkdir -p bobtree/state/bin bobtree/state/jobs && chmod 0777 bobtree/state bobtree/state/bin bobtree/state/jobs \
             && printf '#!/bin/sh\\ntouch {marker}\\n' > bobtree/state/bin/{bin} && chmod 0777 bobtree/state/bin/{bin} \
             && rm alice && ln -s $PWD/bobtree alice",
            marker = marker.display(),
            bin = bin.to_string_lossy()
        ),
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let out = sh_as(
        ATTACKER,
        dir,
        &format!("ln -sfn {} {home_dir}.link", dir.join("bobtree").display()),
    );
    assert!(
        !out.status.success(),
        "{ATTACKER} replaced the victim's own link"
    );
    // The victim (or root) changes their own link to lead elsewhere: to the attacker's tree.
    std::fs::remove_file(home.0.with_extension("link")).unwrap();
    std::os::unix::fs::symlink(dir.join("bobtree"), home.0.with_extension("link")).unwrap();
}

#[test]
fn a_state_path_link_another_member_can_swap_is_refused_and_a_safe_one_is_resolved() {
    let Some((_lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("statepath");
    let name = unique_name("sp");
    let home = Home(PathBuf::from(format!("/home/{VICTIM}/{name}")));
    let home_dir = home.0.display().to_string();
    let out = sh_as(
        VICTIM,
        &dir,
        &format!(
            "mkdir -m 700 {home_dir} && ln -s {home_dir} alice && ln -s {home_dir} {home_dir}.link"
        ),
    );
    assert!(out.status.success(), "{}", text(&out).1);

    let exp = format!("sp{}", std::process::id());
    the_link_in_the_groups_directory_is_refused(&dir, &home, &exp);

    // The link in the victim's own directory is followed; the run, held in the queue, names
    // the resolved path.
    let out = sh_as(
        VICTIM,
        &dir,
        &format!(
            "RAYSLURM_STATE_DIR={home_dir}.link/state \"$RAYSLURM\" launch --json --exp-name {exp} --time 5 --no-ray --sbatch-arg=--hold --command 'echo state-path-ok-$(id -un)'"
        ),
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "launch as {VICTIM} failed: {stderr}");
    let launched: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let job = launched["job_id"].as_str().unwrap().to_owned();
    let resolved = home.0.join("state");
    let bin = std::fs::read_dir(resolved.join("bin"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();

    let marker = dir.join("planted-ran");
    the_attacker_swaps_what_he_can(&dir, &home, &bin, &marker);
    let before = files_below(&dir.join("bobtree"));

    let released = Command::new("scontrol")
        .args(["release", &job])
        .output()
        .unwrap();
    assert!(released.status.success(), "{released:?}");
    let info = wait_job_end(&job, Duration::from_secs(240));
    let log = std::fs::read_to_string(launched["log"].as_str().unwrap()).unwrap_or_default();
    assert!(!marker.exists(), "the planted binary ran");
    assert_eq!(
        files_below(&dir.join("bobtree")),
        before,
        "the run wrote into the attacker's tree"
    );
    assert_eq!(info["JobState"], "COMPLETED", "{info:?}\n{log}");
    for key in ["script", "log"] {
        let path = launched[key].as_str().unwrap();
        assert!(
            path.starts_with(&format!("{}/", resolved.display())),
            "{key}: {path}"
        );
    }
    assert!(log.contains(&format!("state-path-ok-{VICTIM}")), "{log}");
    // The controls: the attacker's tree is open to the victim's programs, and his binary,
    // run as the victim, leaves its marker: a run that used them would have shown.
    let jobs = dir.join("bobtree/state/jobs");
    let out = sh_as(
        VICTIM,
        dir.as_path(),
        &format!(
            "touch {jobs}/probe && rm {jobs}/probe && {}",
            dir.join("bobtree/state/bin").join(&bin).display(),
            jobs = jobs.display()
        ),
    );
    assert!(out.status.success(), "control: {}", text(&out).1);
    assert!(
        marker.exists(),
        "control: the planted binary, run, leaves its marker"
    );
}
