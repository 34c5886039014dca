//! The local test cluster, as `tests/cluster/cluster.sh env` describes it, and a test's way in:
//! [`lab`] (or [`lab_crash`] for a test that kills a node), named after the running test.
//! A checkout or build the cluster's nodes cannot see (in /tmp) fails the test at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use super::skip;
use super::turn::{Turn, admit, turn};

/// The local test cluster, as `tests/cluster/cluster.sh env` describes it.
pub struct Lab {
    pub venv: PathBuf,
    /// A venv with `jax[cpu]`, apart from Ray's.
    pub jax_venv: PathBuf,
    pub shared: PathBuf,
    pub nodes: Vec<String>,
    pub node_ips: Vec<String>,
    pub node_ips6: Vec<String>,
    /// The partition of nodes that only the tests that kill a node use, and its nodes.
    pub crash_partition: String,
    pub crash_nodes: Vec<String>,
    /// The partition of small nodes that only the scale tests use (`cluster.sh up N C --scale
    /// S`), and its nodes (none without `--scale`).
    pub scale_partition: String,
    pub scale_nodes: Vec<String>,
}

impl Lab {
    /// The IPv4 address of one of the lab's nodes.
    pub fn ip_of(&self, node: &str) -> String {
        let k = self.nodes.iter().position(|n| n == node).unwrap();
        self.node_ips[k].clone()
    }

    /// The node that the `k`-th test placing two jobs side by side on one node uses (counted
    /// from the last node): each such test has its own, so that they never crowd each other
    /// when they run at the same time (wrapping around on a lab smaller than `k + 1`).
    pub fn node_of_its_own(&self, k: usize) -> String {
        let n = self.nodes.len();
        self.nodes[n - 1 - k % n].clone()
    }

    /// A fresh directory on the shared filesystem for one test.
    pub fn workdir(&self, name: &str) -> PathBuf {
        let dir = self.shared.join("tests").join(unique_name(name));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `--load-env` that puts the lab's Ray on PATH.
    pub fn load_env(&self) -> String {
        format!("source {}/bin/activate", self.venv.display())
    }
}

/// `name` made unique to this test process and moment: a fresh directory's name.
pub fn unique_name(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

pub(super) fn cluster_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/cluster.sh")
}

/// The test cluster if it is up, shared with other tests, for the running test (named by
/// [`this_test`]). When it is not: a loud skip on a developer's machine, a failure under CI
/// (`CI=true`), never a silent pass. A checkout or build its nodes cannot see fails the test at
/// once, saying so.
pub fn lab() -> Option<(&'static Lab, Turn)> {
    let test = this_test();
    let lab = lab_up(&test)?;
    let asked = Instant::now();
    Some((lab, turn(&test, None, admit(&test, false), asked)))
}

/// [`lab`] for a test that kills a node: it runs its jobs in the crash partition (2 nodes no
/// other test uses, `cluster.sh up N 2`), one such test at a time, beside every other test.
/// Without that partition: skipped loudly, or a failure under CI.
pub fn lab_crash() -> Option<(&'static Lab, Turn)> {
    static CRASH: Mutex<()> = Mutex::new(());
    let test = this_test();
    let lab = lab_up(&test)?;
    if lab.crash_nodes.len() < 2 {
        let why = "the test cluster has no crash partition of 2 nodes \
                   (run `bash tests/cluster/cluster.sh up 6 2`)";
        skip(&test, why, None);
        return None;
    }
    let asked = Instant::now();
    let guard = CRASH.lock().unwrap_or_else(PoisonError::into_inner);
    Some((lab, turn(&test, Some(guard), admit(&test, true), asked)))
}

/// The running test's name as libtest lists it (e.g.
/// `clusters::e2e_clusters::a_cluster_runs_many_jobs_through_rays_queue`): libtest runs each
/// test on a thread named after it. On a thread the test started itself it fails the test: the
/// lab is asked for on the test's own thread.
pub fn this_test() -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.to_owned(),
        name => panic!(
            "a test's lab is named after its thread, and this thread ({name:?}) is not a test's: \
             ask for the lab on the test's own thread"
        ),
    }
}

fn lab_up(test: &str) -> Option<&'static Lab> {
    if super::steps::left_to_its_step(test) {
        return None;
    }
    static LAB: OnceLock<Result<Lab, String>> = OnceLock::new();
    let lab = LAB.get_or_init(|| {
        let out = Command::new("bash")
            .arg(cluster_script())
            .arg("env")
            .output()
            .map_err(|e| format!("cannot run cluster.sh env: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let vars: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        if vars.get("RAYSLURM_LAB_UP") != Some(&"1") {
            return Err(
                "the test cluster is not up (run `bash tests/cluster/cluster.sh up`)".into(),
            );
        }
        let list = |k: &str| -> Vec<String> {
            vars.get(k)
                .map(|v| {
                    v.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(Lab {
            venv: PathBuf::from(vars.get("RAYSLURM_LAB_VENV").copied().unwrap_or_default()),
            jax_venv: PathBuf::from(
                vars.get("RAYSLURM_LAB_JAX_VENV")
                    .copied()
                    .unwrap_or_default(),
            ),
            shared: PathBuf::from(vars.get("RAYSLURM_LAB_SHARED").copied().unwrap_or_default()),
            nodes: list("RAYSLURM_LAB_NODES"),
            node_ips: list("RAYSLURM_LAB_NODE_IPS"),
            node_ips6: list("RAYSLURM_LAB_NODE_IPS6"),
            crash_partition: vars
                .get("RAYSLURM_LAB_CRASH_PARTITION")
                .copied()
                .unwrap_or_default()
                .to_owned(),
            crash_nodes: list("RAYSLURM_LAB_CRASH_NODES"),
            scale_partition: vars
                .get("RAYSLURM_LAB_SCALE_PARTITION")
                .copied()
                .unwrap_or_default()
                .to_owned(),
            scale_nodes: list("RAYSLURM_LAB_SCALE_NODES"),
        })
    });
    match lab {
        Ok(lab) => {
            if let Some(refusal) = unseen_by_the_nodes() {
                panic!("{refusal}");
            }
            Some(lab)
        }
        Err(why) => {
            skip(test, why, None);
            None
        }
    }
}

/// Why the lab's nodes cannot run this build's tests, in one line: the checkout (the examples
/// and scripts the jobs run) or the build (the binary under test, the harness's run records)
/// is in /tmp, and each node has a /tmp of its own (tests/cluster/cluster.sh mounts a
/// directory of the node's there; the rest of the filesystem is the host's).
fn unseen_by_the_nodes() -> Option<String> {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let build = Path::new(env!("CARGO_TARGET_TMPDIR"));
    unseen_checkout(checkout).or_else(|| unseen_build(build))
}

fn unseen_checkout(checkout: &Path) -> Option<String> {
    let shown = in_node_tmp(checkout)?;
    Some(format!(
        "the checkout {shown} is under /tmp, which the test cluster's nodes do not see (each has \
         a /tmp of its own): clone the repository outside /tmp, e.g. under /root or /srv, and \
         run the tests there"
    ))
}

fn unseen_build(build: &Path) -> Option<String> {
    let shown = in_node_tmp(build)?;
    Some(format!(
        "the build {shown} is under /tmp, which the test cluster's nodes do not see (each has a \
         /tmp of its own): set CARGO_TARGET_DIR outside /tmp, e.g. under /root or /srv"
    ))
}

/// `path` as shown in a refusal when it is, once its links are followed, in /tmp (and so, on
/// a node, in the node's own /tmp); `None` when the nodes see it as the host does.
fn in_node_tmp(path: &Path) -> Option<String> {
    let real = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    if !real.starts_with("/tmp") {
        return None;
    }
    Some(if real == path {
        path.display().to_string()
    } else {
        format!("{} (that is {})", path.display(), real.display())
    })
}

/// A checkout or build in /tmp is refused in one line that names it and where to go instead;
/// anywhere else (a name that only begins with `tmp` too) is not.
#[test]
fn a_checkout_the_nodes_cannot_see_is_refused_in_one_line() {
    let refusal = unseen_checkout(Path::new("/tmp/work/rayslurm")).unwrap();
    assert!(
        refusal.starts_with("the checkout /tmp/work/rayslurm is under /tmp"),
        "{refusal}"
    );
    assert!(refusal.contains("e.g. under /root or /srv"), "{refusal}");
    assert!(!refusal.contains('\n'), "{refusal}");
    let refusal = unseen_build(Path::new("/tmp/target/tmp")).unwrap();
    assert!(
        refusal.contains("CARGO_TARGET_DIR outside /tmp"),
        "{refusal}"
    );
    for seen in [
        "/root/rayslurm",
        "/srv/rayslurm",
        "/tmpfs/rayslurm",
        "/work/tmp/rayslurm",
    ] {
        assert_eq!(unseen_checkout(Path::new(seen)), None, "{seen}");
    }
    // A link out of /tmp is followed: the nodes would follow it into their own /tmp.
    let linked = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let link = linked.path().join("checkout");
    let in_tmp = tempfile::tempdir_in("/tmp").unwrap();
    std::os::unix::fs::symlink(in_tmp.path(), &link).unwrap();
    let refusal = unseen_checkout(&link).unwrap();
    assert!(refusal.contains("(that is /tmp/"), "{refusal}");
}

/// A test's lab name is its path as libtest lists it, taken on its own thread; a thread it
/// started has no test's name and is refused.
#[test]
fn a_tests_lab_name_is_its_own_path() {
    assert_eq!(
        this_test(),
        "harness::lab::a_tests_lab_name_is_its_own_path"
    );
    let on_another_thread = std::thread::spawn(this_test).join();
    assert!(on_another_thread.is_err(), "{on_another_thread:?}");
}
