//! Ray's temp directories of a victim's next jobs, planted on the nodes by another member of
//! the group (open directories and links), and what a run must then not have done with them.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::two_users::{ATTACKER, VICTIM, project_root, sh_as, uid};
use crate::harness::text;

/// Ray's temp directory names are predictable (`/tmp/rs{uid}-{job}.{restart}`, job ids are
/// sequential): another member pre-creates them for the victim's next 21 jobs, on every other
/// node of the lab (`nodes[0]`, `nodes[2]`, ...) as open directories and on the rest as links
/// to a directory of theirs (`trap`, in `dir`). A run on two nodes placed by
/// [`PlantedTempRoots::placement`] meets both. Removed when dropped (as root: the nodes' /tmp is
/// the test's to clean).
pub(super) fn plant_temp_roots(dir: &Path, nodes: &[String]) -> PlantedTempRoots {
    let out = Command::new("scontrol")
        .args(["show", "config"])
        .output()
        .unwrap();
    let next: u64 = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("NEXT_JOB_ID"))
        .and_then(|v| v.trim().trim_start_matches('=').trim().parse().ok())
        .expect("scontrol shows NEXT_JOB_ID");
    let victim = uid(VICTIM);
    let trap = dir.join("trap");
    let (open, link): (Vec<_>, Vec<_>) = nodes.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let names = |of: Vec<(usize, &String)>| -> Vec<String> {
        of.into_iter().map(|(_, n)| n.clone()).collect()
    };
    let mut planted = PlantedTempRoots {
        ids: next..=next + 20,
        victim,
        trap,
        open: names(open),
        link: names(link),
        changed: std::collections::HashMap::new(),
    };
    assert!(
        !planted.open.is_empty() && !planted.link.is_empty(),
        "two nodes at least: {nodes:?}"
    );
    let plant = format!(
        r#"mkdir -m 777 {trap}
for id in $(seq {next} {last}); do
  for node in {open}; do mkdir -m 777 "{NODES_TMP}/$node/rs{victim}-$id.0"; done
  for node in {link}; do ln -s {trap} "{NODES_TMP}/$node/rs{victim}-$id.0"; done
done"#,
        trap = planted.trap.display(),
        last = next + 20,
        open = planted.open.join(" "),
        link = planted.link.join(" "),
    );
    let out = sh_as(ATTACKER, dir, &plant);
    assert!(out.status.success(), "{}", text(&out).1);
    for node in planted.open.clone() {
        for id in planted.ids.clone() {
            let changed = planted.open_changed(&node, id);
            planted.changed.insert((node.clone(), id), changed);
        }
    }
    planted
}

/// Where the lab keeps each node's /tmp.
pub(super) const NODES_TMP: &str = "/var/lib/rayslurm-lab/tmp";

/// The temp directories [`plant_temp_roots`] planted.
pub(super) struct PlantedTempRoots {
    ids: std::ops::RangeInclusive<u64>,
    victim: u32,
    trap: PathBuf,
    /// The nodes with open directories, and those with links.
    open: Vec<String>,
    link: Vec<String>,
    /// When each open directory last changed, as planted (a run that made anything in one
    /// changes it, even once its teardown emptied it again).
    changed: std::collections::HashMap<(String, u64), (i64, i64)>,
}

impl PlantedTempRoots {
    /// The planted name of job `id` on `node`.
    pub(super) fn path(&self, node: &str, id: u64) -> PathBuf {
        PathBuf::from(NODES_TMP)
            .join(node)
            .join(format!("rs{}-{id}.0", self.victim))
    }

    /// The last change (ctime) of the open directory planted for job `id` on `node`.
    pub(super) fn open_changed(&self, node: &str, id: u64) -> (i64, i64) {
        let meta = std::fs::symlink_metadata(self.path(node, id)).unwrap();
        (meta.ctime(), meta.ctime_nsec())
    }

    /// The launch options that put a run of two nodes on one node of each kind: the first
    /// node with links, and any node with open directories (the other nodes with links
    /// excluded), so that it need not wait for a node another test holds.
    pub(super) fn placement(&self) -> String {
        format!(
            "-n 2 -w {} --sbatch-arg=--exclude={}",
            self.link[0],
            self.link[1..].join(",")
        )
    }

    /// The victim's run `job` (whose log is `log`) on `nodes` completed in fresh directories
    /// of its own on both: its log says the name was taken on each, what was planted for it
    /// is still there and unchanged (an open directory, a link), and nothing of the victim's
    /// went into the attacker's directory or through the link.
    pub(super) fn were_neither_used_nor_written_through(
        &self,
        job: &str,
        log: &str,
        nodes: &[String],
    ) {
        let id: u64 = job.parse().unwrap();
        assert!(self.ids.contains(&id), "job {job} is one planted for");
        let open: Vec<&String> = nodes.iter().filter(|n| self.open.contains(n)).collect();
        let link: Vec<&String> = nodes.iter().filter(|n| self.link.contains(n)).collect();
        assert_eq!(
            (open.len(), link.len()),
            (1, 1),
            "one node of each kind: {nodes:?}"
        );
        let taken = format!("/tmp/rs{}-{job}.0` was there already", self.victim);
        assert_eq!(log.matches(&taken).count(), 2, "taken on both nodes: {log}");
        let planted = self.path(open[0], id);
        assert!(
            std::fs::symlink_metadata(&planted).unwrap().is_dir(),
            "{} is still the open directory",
            planted.display()
        );
        assert_eq!(
            (
                self.open_changed(open[0], id),
                std::fs::read_dir(&planted).unwrap().count()
            ),
            (self.changed[&(open[0].clone(), id)], 0),
            "{} was used",
            planted.display()
        );
        let planted = self.path(link[0], id);
        assert_eq!(
            std::fs::read_link(&planted).unwrap(),
            self.trap,
            "{}",
            planted.display()
        );
        assert_eq!(
            std::fs::read_dir(&self.trap).unwrap().count(),
            0,
            "written through a link"
        );
    }

    /// Control: what was planted is open to the victim's programs: one of hers writes into
    /// an open directory and through a link (the last planted job id's), so a run that used
    /// them would have left something there.
    pub(super) fn were_open_to_the_victim(&self) {
        let id = *self.ids.end();
        for planted in [self.path(&self.open[0], id), self.path(&self.link[0], id)] {
            let probe = planted.join("probe");
            let out = sh_as(
                VICTIM,
                &project_root(),
                &format!("echo used > {}", probe.display()),
            );
            assert!(
                out.status.success(),
                "control: {VICTIM} writes in {}: {}",
                planted.display(),
                text(&out).1
            );
            std::fs::remove_file(&probe).unwrap();
        }
    }
}

impl Drop for PlantedTempRoots {
    fn drop(&mut self) {
        for node in self.open.iter().chain(&self.link) {
            for id in self.ids.clone() {
                let p = self.path(node, id);
                let _ = std::fs::remove_file(&p).or_else(|_| std::fs::remove_dir(&p));
            }
        }
    }
}
