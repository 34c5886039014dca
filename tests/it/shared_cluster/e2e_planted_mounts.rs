//! A file mount under `/tmp` (docs/task-files.md, `file_mounts`) and another member of the
//! group: `/tmp` is everyone's, so he can make the destination's directory there first, open
//! to him, on every node, to read what the victim's run puts in it (or to hand it files of
//! his). The run must not write into it: it fails at start naming the directory and its owner,
//! and the planted directories stay empty. The control: directories the victim made herself
//! there are used.

use std::os::unix::fs::MetadataExt;

use super::planted_temp_roots::NODES_TMP;
use super::two_users::{ATTACKER, VICTIM, project_dir, sh_as, uid, victim_runs};
use crate::harness::{lab, text};

#[test]
fn a_file_mount_under_tmp_never_goes_into_a_directory_another_member_planted() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("plantmount");
    let out = sh_as(
        VICTIM,
        &dir,
        "mkdir -m 700 data && echo victim-data > data/secret.csv",
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let name = format!("rstest-{}", dir.file_name().unwrap().to_string_lossy());
    mkdir_on_every_node(ATTACKER, &dir, &lab.nodes, &name, "777");
    let planted: Vec<_> = lab
        .nodes
        .iter()
        .map(|n| std::path::Path::new(NODES_TMP).join(n).join(&name))
        .collect();
    let run = victim_runs(
        lab,
        &dir,
        "",
        &format!(
            "-n 2 --file-mount /tmp/{name}/data=./data --command 'cat /tmp/{name}/data/secret.csv'"
        ),
    );
    let leftovers: Vec<String> = planted
        .iter()
        .flat_map(|p| std::fs::read_dir(p).unwrap())
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    for p in &planted {
        assert_eq!(std::fs::metadata(p).unwrap().uid(), uid(ATTACKER));
        let _ = std::fs::remove_dir_all(p);
    }
    assert_ne!(run.info["JobState"], "COMPLETED", "{}", run.log_text);
    let why = format!(
        "`/tmp/{name}` is there and belongs to uid {}: another user may have made it",
        uid(ATTACKER)
    );
    assert!(run.log_text.contains(&why), "{why}\n{}", run.log_text);
    assert!(!run.log_text.contains("victim-data"), "{}", run.log_text);
    assert_eq!(
        leftovers,
        Vec::<String>::new(),
        "the victim's files in the planted directories"
    );

    // Control: the same directories made by the victim herself (0700) are used, and the run
    // reads her file there.
    let own = format!("{name}-own");
    mkdir_on_every_node(VICTIM, &dir, &lab.nodes, &own, "700");
    let control = victim_runs(
        lab,
        &dir,
        "",
        &format!(
            "-n 2 --file-mount /tmp/{own}/data=./data --command 'cat /tmp/{own}/data/secret.csv'"
        ),
    );
    for node in &lab.nodes {
        let _ = std::fs::remove_dir_all(std::path::Path::new(NODES_TMP).join(node).join(&own));
    }
    assert_eq!(
        control.info["JobState"], "COMPLETED",
        "{}",
        control.log_text
    );
    assert!(
        control.log_text.contains("victim-data"),
        "{}",
        control.log_text
    );
}

/// `user` makes `/tmp/NAME` (mode `mode`) on each of `nodes`.
fn mkdir_on_every_node(
    user: &str,
    dir: &std::path::Path,
    nodes: &[String],
    name: &str,
    mode: &str,
) {
    let script = format!(
        "for node in {}; do mkdir -m {mode} {NODES_TMP}/$node/{name}; done",
        nodes.join(" ")
    );
    let out = sh_as(user, dir, &script);
    assert!(out.status.success(), "{}", text(&out).1);
}
