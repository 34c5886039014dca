//! End to end on the test cluster: a task file's code and files reach every node. Local
//! `file_mounts` (a file and a directory) placed in the node's workdir, under the user's home
//! (shared by the nodes: both write it at once) and under the node's own `/tmp`; a workdir
//! with a `.skyignore` (its files absent, a `.gitignore`d one present, as SkyPilot's rule has
//! it); a git workdir cloned at a tag from a bare repository the test makes (no network).

use std::time::Duration;

use super::code_and_files::bare_repo;
use crate::harness::{Job, assert_clean, expand_nodes, lab, launch_in};

/// The lines of rank `k` on `node` that start with `what`.
fn rank_line(job: &Job, k: usize, node: &str, what: &str) -> String {
    let log = job.log_text();
    log.lines()
        .find(|l| l.starts_with(&format!("[{k} {node}] {what}")))
        .unwrap_or_else(|| panic!("rank {k} on {node}, `{what}`:\n{log}"))
        .to_owned()
}

#[test]
fn e2e_file_mounts_and_skyignore_reach_every_node() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("fmounts");
    let unique = dir.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::create_dir_all(dir.join("code/logs")).unwrap();
    // A git work tree, where `.gitignore` would leave `logs/` out but for the `.skyignore`.
    let init = std::process::Command::new("git")
        .arg("-C")
        .arg(dir.join("code"))
        .args(["init", "-q"])
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    std::fs::write(dir.join("code/.gitignore"), "logs/\n").unwrap();
    std::fs::write(dir.join("code/.skyignore"), "secret.txt\n").unwrap();
    std::fs::write(dir.join("code/secret.txt"), "s").unwrap();
    std::fs::write(dir.join("code/logs/kept.log"), "log-kept").unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/a.csv"), "dir-a").unwrap();
    std::fs::write(dir.join("cfg.json"), "file-cfg").unwrap();
    let home = std::env::home_dir()
        .unwrap()
        .join(format!(".rstest-{unique}"));
    let tmp = format!("/tmp/rstest-{unique}");
    std::fs::write(
        dir.join("task.yaml"),
        format!(
            r#"num_nodes: 2
workdir: code
file_mounts:
  inputs/data: ./data
  ~/.rstest-{unique}/cfg.json: cfg.json
  {tmp}/data: data
run: |
  echo "mounts rel=$(cat inputs/data/a.csv) home=$(cat ~/.rstest-{unique}/cfg.json) tmp=$(cat {tmp}/data/a.csv)"
  echo "ignored secret=$(test -e secret.txt && echo yes || echo no) log=$(cat logs/kept.log)"
  rm -rf {tmp}
"#
        ),
    )
    .unwrap();
    let job = launch_in(lab, &dir, "fmounts", &["task.yaml", "--per-node"]);
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    let _ = std::fs::remove_dir_all(&home);
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let nodes = expand_nodes(&info["NodeList"]);
    assert_eq!(nodes.len(), 2, "{log}");
    for (k, node) in nodes.iter().enumerate() {
        assert!(
            rank_line(&job, k, node, "mounts ")
                .ends_with("mounts rel=dir-a home=file-cfg tmp=dir-a"),
            "{log}"
        );
        assert!(
            rank_line(&job, k, node, "ignored ").ends_with("ignored secret=no log=log-kept"),
            "{log}"
        );
    }
    assert_clean(&job);
}

#[test]
fn e2e_a_git_workdir_is_cloned_at_its_ref_for_the_nodes() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("gitwd");
    let url = bare_repo(&dir);
    std::fs::write(
        dir.join("task.yaml"),
        format!(
            "workdir:\n  url: {url}\n  ref: v1\nrun: |\n  echo \"cloned $(cat train.py) later=$(test -e later.py && echo yes || echo no) head=$(git rev-parse --short HEAD)\"\n"
        ),
    )
    .unwrap();
    let tagged = std::process::Command::new("git")
        .arg("-C")
        .arg(dir.join("repo.git"))
        .args(["rev-parse", "--short", "v1^{commit}"])
        .output()
        .unwrap();
    let tagged = String::from_utf8(tagged.stdout).unwrap().trim().to_owned();
    let job = launch_in(lab, &dir, "gitwd", &["task.yaml", "--per-node"]);
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    let node = &expand_nodes(&info["NodeList"])[0];
    assert!(
        rank_line(&job, 0, node, "cloned ")
            .ends_with(&format!("cloned print('at v1') later=no head={tagged}")),
        "{log}"
    );
    assert_clean(&job);
}
