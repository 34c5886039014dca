//! End-to-end: another user of a node cannot use up the ports rayslurm's runs choose, and many
//! runs share one node. The second user `rsbob` holds, in a lab node's network namespace (a
//! shell of theirs on that node), a port in every block of 1000 that rayslurm once took its
//! ports from (12000-31999: the 11 fixed ports at each block's start, 220 sockets), which
//! stopped every run on the node before ("no free block of Ray ports"); runs of `rsalice` on
//! that node complete. A default log directory that another user made is refused before
//! anything is submitted. docs/security.md lists each attack with its test here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::{Lab, NO_DASHBOARD, first_line, lab, text, wait_job_end};
use crate::shared_cluster::two_users::{project_dir, sh_as, user_bin, victim_launches_as};

const VICTIM: &str = "rsalice";
const ATTACKER: &str = "rsbob";
/// The test cluster's partition with `OverSubscribe=FORCE:4` over the lab nodes.
const SHARE_PARTITION: &str = "labshare";

/// The ports rayslurm's old port blocks started with: 11 fixed ports at the start of each of
/// the 20 blocks of 1000 from 12000 (any one of them held made the block busy).
fn old_block_ports() -> Vec<u16> {
    (0..20u16)
        .flat_map(|b| (0..11u16).map(move |j| 12_000 + 1000 * b + j))
        .collect()
}

/// `rsbob`'s program on a node: listens on every port of the old blocks it can bind (on all
/// addresses), prints how many ports and blocks it holds, and holds them until `stop` exists.
fn holder(stop: &Path) -> String {
    let ports: Vec<String> = old_block_ports().iter().map(u16::to_string).collect();
    format!(
        r#"import os, socket, time
held, blocks = [], set()
for p in [{ports}]:
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", p))
        s.listen(1)
    except OSError:
        s.close()
        continue
    held.append(s)
    blocks.add((p - 12000) // 1000)
print("held", len(held), "blocks", len(blocks), " ".join(str(s.getsockname()[1]) for s in held), flush=True)
while not os.path.exists("{stop}"):
    time.sleep(0.2)
"#,
        ports = ports.join(", "),
        stop = stop.display()
    )
}

/// `rsbob` holding the old blocks' ports on a node, until dropped.
struct Held {
    child: Child,
    stop: PathBuf,
    ports: BTreeSet<u16>,
}

impl Held {
    /// Starts the holder as `rsbob` in `node`'s network namespace and waits until it holds a
    /// port in every old block.
    fn on(node: &str, dir: &Path) -> Held {
        let stop = dir.join("stop-holding");
        let program = dir.join("hold.py");
        std::fs::write(&program, holder(&stop)).unwrap();
        let mut child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/rsl-{node}"))
            .args(["runuser", "-u", ATTACKER, "--", "python3"])
            .arg(&program)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let line = first_line(&mut child);
        let mut held = Held {
            child,
            stop,
            ports: BTreeSet::new(),
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(
            words.len() > 4 && words[0] == "held" && words[2] == "blocks",
            "{line}"
        );
        // Another run on the node may hold a few of them now; a port in every block is what
        // made the old choice fail, and most of them are held.
        let (count, blocks): (usize, usize) =
            (words[1].parse().unwrap(), words[3].parse().unwrap());
        assert_eq!(
            blocks, 20,
            "{ATTACKER} holds a port in every old block: {line}"
        );
        assert!(count >= 200, "{ATTACKER} holds at least 200 ports: {line}");
        held.ports = words[4..].iter().map(|p| p.parse().unwrap()).collect();
        held
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.stop, "");
        let _ = self.child.wait();
    }
}

/// `rsalice` launches from the project directory, without Ray's dashboard; the job id and the
/// log.
fn alice_launches(lab: &Lab, dir: &Path, name: &str, args: &str) -> (String, PathBuf) {
    victim_launches_as(lab, dir, name, &format!("{NO_DASHBOARD} {args}"))
}

/// A Ray program that says it ran, with the number of nodes it saw.
const RAY_OK: &str =
    r#"--command 'python -c "import ray; ray.init(); print(\"ray-ok\", len(ray.nodes()))"'"#;

/// `rsbob` holds a port in every old block of the node (220 ports: the 20 at the blocks'
/// starts and the 200 fixed ports after them): a Ray run of `rsalice` on that node still
/// starts and completes. With the old choice of a block it ended `startup-failed`, "no free
/// block of Ray ports".
#[test]
fn another_users_ports_in_every_old_block_stop_no_run_on_the_node() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("heldports");
    let node = lab.node_of_its_own(3);
    let held = Held::on(&node, &dir);
    let (job, log) = alice_launches(lab, &dir, "heldports", &format!("-n 1 -w {node} {RAY_OK}"));
    let info = wait_job_end(&job, Duration::from_secs(240));
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    drop(held);
    assert_eq!(info["JobState"], "COMPLETED", "{log_text}");
    assert!(log_text.contains("ray-ok 1"), "{log_text}");
}

/// 200 runs choose their ports on one node at once (`rayslurm ports --runs 200`, run as
/// `rsalice` in the node's network namespace: each run's 9 Ray ports and its `MASTER_PORT`,
/// all held together) while `rsbob` holds the old blocks' ports there: every choice succeeds,
/// the 2,000 ports are all different, and none is one of `rsbob`'s.
#[test]
fn two_hundred_runs_choose_their_ports_at_once_on_one_node() {
    let Some((_lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("twohundred");
    let node = _lab.node_of_its_own(5);
    let held = Held::on(&node, &dir);
    let out = Command::new("nsenter")
        .arg(format!("--net=/run/netns/rsl-{node}"))
        .args(["runuser", "-u", VICTIM, "--"])
        .arg(user_bin())
        .args(["ports", "--runs", "200"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let runs: Vec<&str> = stdout.lines().collect();
    assert_eq!(runs.len(), 200, "{stdout}");
    let mut all = BTreeSet::new();
    for run in &runs {
        let ports: Vec<u16> = run.split_whitespace().map(|p| p.parse().unwrap()).collect();
        assert_eq!(ports.len(), 10, "{run}");
        for p in ports {
            assert!(all.insert(p), "port {p} chosen twice:\n{stdout}");
            assert!(!held.ports.contains(&p), "port {p} is {ATTACKER}'s");
        }
    }
}

/// Three Ray runs of `rsalice` on one 2-CPU node at once, through the partition with
/// `OverSubscribe=FORCE` (as on a site's shared partition), each asking for the node's 2 CPUs,
/// while `rsbob` holds a port in every old block there: all three start together and complete.
#[test]
fn several_runs_share_one_node_while_another_user_holds_ports_there() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let shown = Command::new("scontrol")
        .args(["show", "partition", SHARE_PARTITION])
        .output()
        .unwrap();
    assert!(
        text(&shown).0.contains("OverSubscribe=FORCE"),
        "the test cluster has no partition {SHARE_PARTITION} with OverSubscribe=FORCE: bring it up with this tree's tests/cluster/cluster.sh\n{}",
        text(&shown).1
    );
    let dir = project_dir("overshare");
    let node = lab.node_of_its_own(4);
    let held = Held::on(&node, &dir);
    let args = format!(
        "-p {SHARE_PARTITION} -n 1 -w {node} --cpus-per-task 2 --mem 1000 --no-exclusive --sbatch-arg=--hold {}",
        RAY_OK.replace("print(", "import time; time.sleep(5); print(")
    );
    let runs: Vec<(String, PathBuf)> = ["share1", "share2", "share3"]
        .iter()
        .map(|name| alice_launches(lab, &dir, name, &args))
        .collect();
    let ids: Vec<&str> = runs.iter().map(|(j, _)| j.as_str()).collect();
    let released = Command::new("scontrol")
        .args(["release", &ids.join(",")])
        .output()
        .unwrap();
    assert!(released.status.success(), "{released:?}");
    let ended: Vec<_> = runs
        .iter()
        .map(|(job, log)| {
            let info = wait_job_end(job, Duration::from_secs(300));
            (info, std::fs::read_to_string(log).unwrap_or_default())
        })
        .collect();
    drop(held);
    for (info, log_text) in &ended {
        assert_eq!(info["JobState"], "COMPLETED", "{log_text}");
        assert_eq!(info["NodeList"], node, "{info:?}");
        assert!(log_text.contains("ray-ok 1"), "{log_text}");
    }
    let latest_start = ended.iter().map(|(i, _)| i["StartTime"].clone()).max();
    let earliest_end = ended.iter().map(|(i, _)| i["EndTime"].clone()).min();
    assert!(
        latest_start <= earliest_end,
        "the three ran at the same time: {:?}",
        ended.iter().map(|(i, _)| i).collect::<Vec<_>>()
    );
}

/// `rsbob` makes the default log directory `./rayslurm-logs` in the shared project directory
/// (group-writable, as their umask gives): `rsalice`'s launch from there is refused at once,
/// naming `rsbob` and what to do, exit 2, and nothing is submitted.
#[test]
fn a_default_log_directory_another_user_made_is_refused_naming_them() {
    let Some((_lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("plantedlogs");
    let out = sh_as(ATTACKER, &dir, "mkdir rayslurm-logs");
    assert!(out.status.success(), "{}", text(&out).1);
    let out = sh_as(
        VICTIM,
        &dir,
        "\"$RAYSLURM\" launch --exp-name plantedlogs --command true",
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: the default log directory `{}/rayslurm-logs` belongs to uid ",
            dir.display()
        )) && stderr.contains(&format!("({ATTACKER}), not to you")),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "hint: pass --log-dir DIR (a directory of yours), or ask its owner to remove it"
        ),
        "{stderr}"
    );
    assert_eq!(stdout, "");
    let queued = Command::new("squeue")
        .args(["-h", "-u", VICTIM, "-n", "plantedlogs", "-o", "%i"])
        .output()
        .unwrap();
    assert_eq!(text(&queued).0.trim(), "", "a job was submitted");
    assert_eq!(
        std::fs::read_dir(dir.join("rayslurm-logs"))
            .unwrap()
            .count(),
        0,
        "something was written there"
    );
    // The control: the same launch from there, the default log directory made by the victim
    // instead, is taken and links its log there.
    let out = sh_as(
        VICTIM,
        &dir,
        "rmdir rayslurm-logs && mkdir rayslurm-logs && \"$RAYSLURM\" launch --json --exp-name plantedlogs --no-ray --time 5 --command true",
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "control: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let info = wait_job_end(v["job_id"].as_str().unwrap(), Duration::from_secs(120));
    assert_eq!(info["JobState"], "COMPLETED", "control: {info:?}");
    let log = PathBuf::from(v["log"].as_str().unwrap());
    let link = dir.join("rayslurm-logs").join(log.file_name().unwrap());
    assert_eq!(std::fs::read_link(&link).unwrap(), log, "control");
}
