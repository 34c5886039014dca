//! The lab's nodes' /tmp as the host sees it, and a run's Ray temp roots in it: where the lab
//! keeps each node's /tmp (`RAYSLURM_LAB_NODE_TMP_ROOT` of `cluster.sh env`, not a path written
//! here), what a run's temp root is named (`rs{uid}-{job}.{restart}`, as
//! `bootstrap/ray_node.rs`'s `TempRoot::first_name` names it), and what appeared there. A
//! node's directory that cannot be read is a failure, never an empty one: a check that finds
//! nothing because it looked nowhere would pass whatever a run left.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The lab's description, `cluster.sh env`'s `KEY=VALUE` lines, read once.
fn cluster_env() -> &'static HashMap<String, String> {
    static ENV: OnceLock<HashMap<String, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let out = std::process::Command::new("bash")
            .arg(super::lab::cluster_script())
            .arg("env")
            .output()
            .expect("cluster.sh env runs");
        assert!(out.status.success(), "cluster.sh env: {out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    })
}

/// The value of `key` in the lab's description; a key it lacks, or leaves empty, fails.
fn lab_var(key: &str) -> &'static str {
    match cluster_env().get(key) {
        Some(v) if !v.is_empty() => v,
        _ => panic!("`cluster.sh env` gives no {key}"),
    }
}

/// Where the lab keeps each node's /tmp (`NODE_TMP/NODE` is node NODE's /tmp), as the lab
/// says: usable wherever a path is (`Path::new(NODE_TMP)`, `format!("{NODE_TMP}/{node}")`).
pub(crate) const NODE_TMP: &NodeTmp = &NodeTmp;

/// See [`NODE_TMP`].
pub(crate) struct NodeTmp;

impl NodeTmp {
    /// The directory, which must exist.
    pub(crate) fn path(&self) -> &'static Path {
        static ROOT: OnceLock<PathBuf> = OnceLock::new();
        ROOT.get_or_init(|| {
            let root = PathBuf::from(lab_var("RAYSLURM_LAB_NODE_TMP_ROOT"));
            assert!(
                root.is_dir(),
                "the nodes' /tmp root {} is missing",
                root.display()
            );
            root
        })
    }
}

impl AsRef<OsStr> for NodeTmp {
    fn as_ref(&self) -> &OsStr {
        self.path().as_os_str()
    }
}

impl AsRef<Path> for NodeTmp {
    fn as_ref(&self) -> &Path {
        self.path()
    }
}

impl fmt::Display for NodeTmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.path().display().fmt(f)
    }
}

/// Every node's /tmp as the host sees it: the lab's nodes, its crash partition's and its scale
/// partition's.
fn node_dirs() -> Vec<PathBuf> {
    let nodes: Vec<&str> = [
        "RAYSLURM_LAB_NODES",
        "RAYSLURM_LAB_CRASH_NODES",
        "RAYSLURM_LAB_SCALE_NODES",
    ]
    .iter()
    .flat_map(|k| {
        cluster_env()
            .get(*k)
            .map_or("", String::as_str)
            .split(',')
            .filter(|n| !n.is_empty())
    })
    .collect();
    assert!(!nodes.is_empty(), "`cluster.sh env` names no node");
    nodes.iter().map(|n| NODE_TMP.path().join(n)).collect()
}

/// The entries of one node's /tmp; a directory that cannot be read fails the test.
fn entries_of(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read the node's /tmp {}: {e}", dir.display()))
        .map(|e| e.expect("a /tmp entry").path())
        .collect()
}

/// What the names of the job's Ray temp roots (and the node copies beside them) start with,
/// for a job the tests launched (as this process's user): `rs{uid}-{job}.`, then the attempt,
/// and a random suffix when that name was taken.
fn temp_root_name_prefix(job_id: &str) -> String {
    format!("rs{}-{job_id}.", nix::unistd::getuid())
}

/// The name of the job's first Ray temp root on a node, for its attempt `restart`.
pub(crate) fn temp_root_name(job_id: &str, restart: u32) -> String {
    format!("{}{restart}", temp_root_name_prefix(job_id))
}

/// Ray's temp dirs of the job left on any node's /tmp.
pub(crate) fn leftover_temp_dirs(job_id: &str) -> Vec<PathBuf> {
    let prefix = temp_root_name_prefix(job_id);
    node_dirs()
        .iter()
        .flat_map(|dir| entries_of(dir))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&prefix)
        })
        .collect()
}

/// What the paths below the job's Ray temp roots start with, as the nodes see them:
/// `/tmp/rs{uid}-JOB.RESTART`, with a random suffix when that name was taken.
pub(crate) fn temp_root_prefix(job_id: &str) -> String {
    format!("/tmp/{}", temp_root_name_prefix(job_id))
}

/// The prefix of what tests make in a node's /tmp themselves (and remove): not a run's leftover.
pub(crate) const TEST_MADE: &str = "rstest-";

/// An entry of every node's /tmp (a name, not a path) removed when this guard is dropped: what
/// a test made, or had Slurm make, on whichever node ran its job.
pub(crate) struct RemovedFromNodes(pub(crate) std::ffi::OsString);

impl Drop for RemovedFromNodes {
    fn drop(&mut self) {
        for dir in node_dirs() {
            let _ = std::fs::remove_dir_all(dir.join(&self.0));
        }
    }
}

/// Every entry of every node's /tmp.
pub(crate) fn node_tmp_entries() -> BTreeSet<PathBuf> {
    node_dirs().iter().flat_map(|dir| entries_of(dir)).collect()
}

/// Entries that appeared in a node's /tmp since `before`, other than Ray temp roots (`rs0-ID.R`:
/// this job's is checked by [`leftover_temp_dirs`], other jobs' may still be running).
pub(super) fn new_tmp_entries(before: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    node_tmp_entries()
        .into_iter()
        .filter(|p| !before.contains(p))
        // Other jobs' Ray temp roots, and what tests make on the nodes themselves (named
        // `rstest-`), which the tests running beside this one may not have removed yet; pyxis's
        // file for each container it starts, there while it starts one (for any test's step).
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            !is_ray_temp_root(&name)
                && !name.starts_with(TEST_MADE)
                && !name.starts_with(".enroot_config_")
        })
        .collect()
}

/// A run's Ray temp root, of any user (`rs{uid}-{job}...`): the shared-cluster tests run
/// jobs of other users beside this one.
fn is_ray_temp_root(name: &str) -> bool {
    name.strip_prefix("rs")
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(uid, _)| !uid.is_empty() && uid.bytes().all(|b| b.is_ascii_digit()))
}

/// The harness names a run's temp root as the bootstrap does (`TempRoot::first_name`): were
/// the bootstrap's name to change alone, every temp-dir check would look for a name no run
/// makes, and pass.
#[test]
fn the_temp_root_name_is_the_bootstraps() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/bootstrap/ray_node.rs"
    ))
    .unwrap();
    assert!(
        src.contains(r#"format!("/tmp/rs{uid}-{job_id}.{restart}")"#),
        "bootstrap/ray_node.rs names the temp root otherwise: change temp_root_name_prefix too"
    );
    let uid = nix::unistd::getuid();
    assert_eq!(temp_root_name("7", 1), format!("rs{uid}-7.1"));
    assert_eq!(temp_root_prefix("7"), format!("/tmp/rs{uid}-7."));
}
