//! End-to-end: rayslurm on a shared cluster, tried as HPC users share one. Every attack runs as
//! a second member (`rsbob`) of the victim's group against a run of the first (`rsalice`),
//! launched from their shared 2775 project directory with umask 002: real users, since root
//! passes every permission check and an attack run as root proves nothing. docs/security.md
//! lists each attack with its test here.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::harness::{Lab, bin, lab, text, unique_name, wait_job_end};

pub(crate) const VICTIM: &str = "rsalice";
pub(crate) const ATTACKER: &str = "rsbob";

/// The project directory shared by the group, as `cluster.sh up` makes it.
fn project_root() -> PathBuf {
    PathBuf::from("/srv/rayslurm-lab/project")
}

pub(crate) fn uid(user: &str) -> u32 {
    let out = Command::new("id").args(["-u", user]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// A copy of the binary under test that every user can run (the build may sit under /root).
pub(crate) fn user_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let dir = PathBuf::from("/srv/rayslurm-lab/test-bin");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.join(format!("rayslurm-{}", std::process::id()));
        std::fs::copy(bin(), &path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A child another test's thread forked while the copy was open for writing holds it
        // until that child execs: running the copy meanwhile fails "Text file busy". Wait for
        // it here, once, rather than in whichever test runs the copy first.
        let t0 = std::time::Instant::now();
        while let Err(e) = Command::new(&path).arg("--version").output() {
            assert!(
                e.raw_os_error() == Some(nix::libc::ETXTBSY)
                    && t0.elapsed() < Duration::from_secs(10),
                "cannot run {}: {e}",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        path
    })
    .clone()
}

/// Runs a bash script as `user`, with a login-like environment and umask 002 (the norm for a
/// group's project), in `cwd`.
/// The users' PATH and SLURM_CONF: the Slurm clients the tests run (a vendored release's, by
/// tests/run.sh), first. With Debian's clients instead, a newer controller refuses them
/// ("Zero Bytes were transmitted or received": Slurm serves clients of 2 releases back).
pub(crate) fn users_slurm() -> Vec<String> {
    let slurm = which::which("sbatch")
        .ok()
        .and_then(|p| p.parent().map(|d| format!("{}:", d.display())))
        .unwrap_or_default();
    let mut vars = vec![format!("PATH={slurm}/usr/local/bin:/usr/bin:/bin")];
    if let Some(conf) = std::env::var_os("SLURM_CONF") {
        vars.push(format!("SLURM_CONF={}", conf.to_string_lossy()));
    }
    vars
}

pub(crate) fn sh_as(user: &str, cwd: &Path, script: &str) -> Output {
    Command::new("runuser")
        .args(["-u", user, "--", "env", "-i"])
        .arg(format!("HOME=/home/{user}"))
        .arg(format!("USER={user}"))
        .arg(format!("LOGNAME={user}"))
        .args(users_slurm())
        .arg(format!("RAYSLURM={}", user_bin().display()))
        .args(["bash", "-c"])
        .arg(format!("umask 002; cd \"$1\" || exit 97; {script}"))
        .arg("_")
        .arg(cwd)
        .output()
        .expect("runuser runs")
}

/// A fresh directory of the group's project, made by the victim (2775, as the parent's setgid
/// bit and umask 002 give).
pub(crate) fn project_dir(name: &str) -> PathBuf {
    let dir = project_root().join(unique_name(name));
    let out = sh_as(VICTIM, &project_root(), &format!("mkdir {}", dir.display()));
    assert!(out.status.success(), "{}", text(&out).1);
    let mode = std::fs::metadata(&dir).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o2775, "a group-writable project directory");
    dir
}

fn sha256_of(path: &Path) -> String {
    use sha2::Digest;
    let bytes = std::fs::read(path).unwrap();
    sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The victim launches experiment `name` from the project directory; returns the job id and
/// the log path.
pub(crate) fn victim_launches_as(
    lab: &Lab,
    dir: &Path,
    name: &str,
    args: &str,
) -> (String, PathBuf) {
    let out = sh_as(
        VICTIM,
        dir,
        &format!(
            "\"$RAYSLURM\" launch --json --exp-name {name} --time 5 --object-store-memory 100000000 --load-env 'source {}/bin/activate' {args}",
            lab.venv.display()
        ),
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "launch as {VICTIM} failed: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    (
        v["job_id"].as_str().unwrap().to_owned(),
        PathBuf::from(v["log"].as_str().unwrap()),
    )
}

/// A run of the victim's, followed to its end.
pub(crate) struct VictimRun {
    pub(crate) job: String,
    pub(crate) log: PathBuf,
    /// Slurm's last view of the job.
    pub(crate) info: std::collections::HashMap<String, String>,
    pub(crate) log_text: String,
}

/// The victim launches from the project directory, and the run ends.
pub(crate) fn victim_runs(lab: &Lab, dir: &Path, args: &str) -> VictimRun {
    let (job, log) = victim_launches_as(lab, dir, "shared", args);
    let info = wait_job_end(&job, Duration::from_secs(240));
    let log_text = std::fs::read_to_string(&log).unwrap();
    VictimRun {
        job,
        log,
        info,
        log_text,
    }
}

/// What the attacker plants before the victim's launch: the names the victim's next files
/// would have in the shared directory and in its default log directory (the victim's, made
/// group-writable by an earlier launch: links to the victim's results, for the next minute),
/// and a binary tree of the kind older versions reused without a check. (A default log
/// directory the attacker makes is refused: `e2e_ports`.)
fn plant(dir: &Path, results: &Path, marker: &Path) {
    let script = format!(
        r#"
mkdir -p .rayslurm/bin
printf '#!/bin/sh\ntouch {marker}\n' > .rayslurm/bin/rayslurm-0.1.0-planted
chmod 755 .rayslurm/bin/rayslurm-0.1.0-planted
for s in $(seq 0 90); do
  stem=shared_$(date -d "+$s seconds" +%m%d-%H%M%S)
  ln -s {results} "$stem.log"
  ln -s {results} "$stem.sh"
  ln -s {results} "rayslurm-logs/$stem.log"
done
"#,
        marker = marker.display(),
        results = results.display()
    );
    let out = sh_as(ATTACKER, dir, &script);
    assert!(out.status.success(), "{}", text(&out).1);
}

/// Binary, log, script, run directory and token: nothing the attacker plants in the shared
/// directory is run or written through, and nothing of the run's is readable by them. Ray's
/// temp directories are planted too (see [`plant_temp_roots`]): the run completes without
/// using them. One victim's run of 2 nodes for both (a Ray start is seconds of the lab's 2
/// cores).
#[test]
fn a_group_member_can_neither_run_code_as_the_victim_nor_read_or_destroy_their_files() {
    let Some((lab, _turn)) = lab("a_group_member_can_neither_run_code_as_the_victim") else {
        return;
    };
    let dir = project_dir("plant");
    let marker = project_root().join(format!("pwned-{}", std::process::id()));
    // The victim's results, which a followed link would truncate or append to.
    let results = PathBuf::from(format!("/home/{VICTIM}/results-{}.txt", std::process::id()));
    let out = sh_as(
        VICTIM,
        &dir,
        &format!("echo precious > {}", results.display()),
    );
    assert!(out.status.success());
    let digest = sha256_of(&results);
    let temp_roots = plant_temp_roots(&dir);
    // The default log directory, as the victim's first launch there makes it (group-writable).
    let out = sh_as(VICTIM, &dir, "mkdir rayslurm-logs");
    assert!(out.status.success(), "{}", text(&out).1);
    plant(&dir, &results, &marker);

    let secret = format!("s3cr3t-{}", std::process::id());
    let VictimRun {
        job,
        log,
        info,
        log_text,
    } = victim_runs(
        lab,
        &dir,
        &format!(
            "-n 2 --env API_KEY={secret} --command 'python -c \"import ray; ray.init(); print(\\\"ray-ok\\\")\"'"
        ),
    );
    assert_eq!(info["JobState"], "COMPLETED", "{log_text}");
    assert!(log_text.contains("ray-ok"), "{log_text}");
    temp_roots.were_neither_used_nor_written_through(&job, &log_text);
    drop(temp_roots);
    assert!(!marker.exists(), "the planted binary ran as the victim");
    assert_eq!(sha256_of(&results), digest, "the victim's results changed");

    // Everything of the run is in the victim's private tree, the user's alone.
    let home = PathBuf::from(format!("/home/{VICTIM}"));
    assert!(log.starts_with(&home), "{}", log.display());
    let script = log.with_extension("sh");
    let run_dir = log.with_extension("d");
    let token = run_dir.join(format!("ray-auth-token-{job}.0"));
    let victim = uid(VICTIM);
    for (path, mode) in [(&script, 0o700), (&run_dir, 0o700)] {
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert_eq!(
            (meta.uid(), meta.mode() & 0o777),
            (victim, mode),
            "{}",
            path.display()
        );
    }
    if let Ok(meta) = std::fs::symlink_metadata(&token) {
        assert_eq!((meta.uid(), meta.mode() & 0o777), (victim, 0o600));
    }
    // The log's name in the (shared) default log directory is a link the victim can follow,
    // the attacker not.
    let link = dir.join("rayslurm-logs").join(log.file_name().unwrap());
    assert_eq!(std::fs::read_link(&link).unwrap(), log);
    for path in [&link, &log, &script] {
        let out = sh_as(ATTACKER, &dir, &format!("cat {}", path.display()));
        assert!(
            !out.status.success(),
            "{ATTACKER} read {}: {}",
            path.display(),
            text(&out).0
        );
    }
    let out = sh_as(
        ATTACKER,
        &dir,
        &format!(
            "grep -rs {secret} {} /tmp /var/lib/rayslurm-lab/tmp; true",
            project_root().display()
        ),
    );
    assert_eq!(text(&out).0, "", "the secret is readable by another member");
}

/// A private tree in a group-writable directory is refused, naming the path, its owner and
/// mode, before anything is written or submitted.
#[test]
fn a_private_tree_inside_the_shared_directory_is_refused() {
    let Some((_lab, _turn)) = lab("a_private_tree_inside_the_shared_directory_is_refused") else {
        return;
    };
    let dir = project_dir("tree");
    let out = sh_as(
        VICTIM,
        &dir,
        "RAYSLURM_STATE_DIR=$PWD/state \"$RAYSLURM\" launch --exp-name t --command true",
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stdout, "");
    // The first directory on the way that others can write: the project's own.
    assert!(
        stderr.contains(&format!(
            "`{}` (owner uid 0 (root), mode 2775)",
            project_root().display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("can be written by others"), "{stderr}");
    assert!(stderr.contains("RAYSLURM_STATE_DIR"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
}

/// A project file another member wrote sets site keys for the victim (with a notice naming
/// it), never code that runs as the victim: `load_env` from it is refused, nothing submitted.
#[test]
fn another_members_project_file_cannot_run_code_as_the_victim() {
    let Some((_lab, _turn)) = lab("another_members_project_file_cannot_run_code_as_the_victim")
    else {
        return;
    };
    let dir = project_dir("config");
    let marker = project_root().join(format!("pwned-config-{}", std::process::id()));
    let out = sh_as(
        ATTACKER,
        &dir,
        &format!(
            "printf '[launch]\\npartition = \"lab\"\\nload_env = \"touch {}\"\\n' > rayslurm.toml",
            marker.display()
        ),
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let launch = "\"$RAYSLURM\" launch --exp-name cfg --command true";
    let out = sh_as(VICTIM, &dir, launch);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stdout, "");
    assert!(stderr.contains("rayslurm.toml"), "{stderr}");
    assert!(
        stderr.contains(&format!("uid {}", uid(ATTACKER))),
        "{stderr}"
    );
    assert!(stderr.contains("load_env"), "{stderr}");
    assert!(stderr.contains("rayslurm trust"), "{stderr}");
    assert!(!marker.exists());
    // Site keys alone are taken, with a notice naming the file and its owner.
    let out = sh_as(
        ATTACKER,
        &dir,
        "printf '[launch]\\npartition = \"lab\"\\n' > rayslurm.toml",
    );
    assert!(out.status.success());
    let out = sh_as(VICTIM, &dir, &format!("{launch} --dry-run"));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("#SBATCH --partition=lab"), "{stdout}");
    assert!(stderr.contains("rayslurm.toml"), "{stderr}");
}

/// Ray's temp directory names are predictable (`/tmp/rs{uid}-{job}.{restart}`, job ids are
/// sequential): another member pre-creates them on every node for the victim's next 21 jobs,
/// as open directories and as links to a directory of theirs (`trap`, in `dir`). Removed when
/// dropped (as root: the nodes' /tmp is the test's to clean).
fn plant_temp_roots(dir: &Path) -> PlantedTempRoots {
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
    let plant = format!(
        r#"mkdir -m 777 {trap}
for node in {NODES_TMP}/node*; do
  for id in $(seq {next} {last}); do
    if [ $((id % 2)) = 0 ]; then mkdir -m 777 "$node/rs{victim}-$id.0"; else ln -s {trap} "$node/rs{victim}-$id.0"; fi
  done
done"#,
        trap = trap.display(),
        last = next + 20,
    );
    let out = sh_as(ATTACKER, dir, &plant);
    let planted = PlantedTempRoots {
        ids: next..=next + 20,
        victim,
        trap,
    };
    assert!(out.status.success(), "{}", text(&out).1);
    planted
}

/// Where the lab keeps each node's /tmp.
const NODES_TMP: &str = "/var/lib/rayslurm-lab/tmp";

/// The temp directories [`plant_temp_roots`] planted.
struct PlantedTempRoots {
    ids: std::ops::RangeInclusive<u64>,
    victim: u32,
    trap: PathBuf,
}

impl PlantedTempRoots {
    /// The victim's run `job` (whose log is `log`) completed in fresh directories of its own:
    /// its log says the name was taken, and nothing of the victim's went into the attacker's
    /// directories or through their links.
    fn were_neither_used_nor_written_through(&self, job: &str, log: &str) {
        let victim = self.victim;
        assert!(
            log.contains(&format!("/tmp/rs{victim}-{job}.0` was there already")),
            "{log}"
        );
        assert_eq!(
            std::fs::read_dir(&self.trap).unwrap().count(),
            0,
            "written through a link"
        );
        for node in std::fs::read_dir(NODES_TMP).unwrap() {
            let planted = node.unwrap().path().join(format!("rs{victim}-{job}.0"));
            if planted.is_dir() && !planted.is_symlink() {
                assert_eq!(
                    std::fs::read_dir(&planted).unwrap().count(),
                    0,
                    "{} was used",
                    planted.display()
                );
            }
        }
    }
}

impl Drop for PlantedTempRoots {
    fn drop(&mut self) {
        for node in std::fs::read_dir(NODES_TMP).into_iter().flatten() {
            let Ok(node) = node else { continue };
            for id in self.ids.clone() {
                let p = node.path().join(format!("rs{}-{id}.0", self.victim));
                let _ = std::fs::remove_file(&p).or_else(|_| std::fs::remove_dir(&p));
            }
        }
    }
}
