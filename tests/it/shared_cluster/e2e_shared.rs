//! End-to-end: rayslurm on a shared cluster, tried as HPC users share one. Every attack runs as
//! a second member (`rsbob`) of the victim's group against a run of the first (`rsalice`),
//! launched from their shared 2775 project directory with umask 002: real users, since root
//! passes every permission check and an attack run as root proves nothing. docs/security.md
//! lists each attack with its test here.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::planted_temp_roots::{NODES_TMP, plant_temp_roots};
use super::two_users::{
    ATTACKER, VICTIM, VictimRun, project_dir, project_root, sh_as, sha256_of, uid, victim_runs,
};
use crate::harness::{lab, text, unique_name, wait_job_end};

/// What the attacker plants before the victim's launch: the names the victim's next files
/// would have in the shared directory and in its default log directory (the victim's, made
/// group-writable by an earlier launch: links to the victim's results, for the next minute).
/// (A default log directory the attacker makes is refused: `e2e_ports`.)
fn plant(dir: &Path, results: &Path) {
    let script = format!(
        r#"
for s in $(seq 0 90); do
  stem=shared_$(date -d "+$s seconds" +%m%d-%H%M%S)
  ln -s {results} "$stem.log"
  ln -s {results} "$stem.sh"
  ln -s {results} "rayslurm-logs/$stem.log"
done
"#,
        results = results.display()
    );
    let out = sh_as(ATTACKER, dir, &script);
    assert!(out.status.success(), "{}", text(&out).1);
}

/// The victim's private tree where every member can reach it: a directory of hers (0755) in
/// the lab's sticky `/srv/rayslurm-lab/shared`, as a home or scratch directory open for
/// traversal is on many sites, with `RAYSLURM_STATE_DIR` its `state` (0755 too). So the
/// attacker's reads meet rayslurm's own modes, not a closed home (the lab's homes are 0700,
/// where every read fails whatever rayslurm does). Removed when dropped.
struct ReachableState {
    base: PathBuf,
}

impl ReachableState {
    fn new() -> Self {
        let base = PathBuf::from("/srv/rayslurm-lab/shared").join(unique_name("alice-open"));
        let out = sh_as(
            VICTIM,
            &project_root(),
            &format!("mkdir -m 755 {0} {0}/state", base.display()),
        );
        assert!(out.status.success(), "{}", text(&out).1);
        Self { base }
    }

    fn state(&self) -> PathBuf {
        self.base.join("state")
    }
}

impl Drop for ReachableState {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// `cat PATH` (or `ls` for a directory) as `user`: whether it read anything.
fn reads(user: &str, path: &Path) -> Result<String, String> {
    let tool = if path.is_dir() { "ls" } else { "cat" };
    let out = sh_as(user, &project_root(), &format!("{tool} {}", path.display()));
    let (stdout, stderr) = text(&out);
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(stderr)
    }
}

/// The attacker cannot read `path`; the refusal is the kernel's (`Permission denied`), not a
/// wrong name.
fn attacker_cannot_read(path: &Path, when: &str) {
    match reads(ATTACKER, path) {
        Ok(said) => panic!("{when}: {ATTACKER} read {}: {said}", path.display()),
        Err(why) => assert!(
            why.contains("Permission denied"),
            "{when}: {}: {why}",
            path.display()
        ),
    }
}

/// The control beside each refused read: a file the victim made world-readable (0644) in
/// `dir` is read by the attacker, so the refusals above are the modes', not a path the
/// attacker cannot reach.
fn attacker_reads_an_open_file_in(dir: &Path) {
    let open = dir.join(format!("open-{}.txt", std::process::id()));
    let out = sh_as(
        VICTIM,
        dir,
        &format!("echo readable > {0} && chmod 644 {0}", open.display()),
    );
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(
        reads(ATTACKER, &open).map(|s| s.trim().to_owned()),
        Ok("readable".to_owned()),
        "control: {ATTACKER} reaches {}",
        dir.display()
    );
    std::fs::remove_file(&open).unwrap();
}

/// `chmod MODE path`, as root (the test opening one layer of the victim's tree at a time).
fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Log, script, run directory and token of the victim's run (`log`, job `job`), the state
/// tree `state` reachable by everyone: each is the victim's with its own mode, and the
/// attacker reads none of them, one directory opened at a time, so that each file's own mode
/// is what refuses the read (and beside each, the control that an open file there is read).
fn the_attacker_reads_nothing_of_the_run(state: &Path, log: &Path, job: &str, link: &Path) {
    let victim = uid(VICTIM);
    let jobs = state.join("jobs");
    let script = log.with_extension("sh");
    let run_dir = log.with_extension("d");
    let token = run_dir.join(format!("ray-auth-token-{job}.0"));
    assert!(log.starts_with(&jobs), "{}", log.display());
    for (path, mode) in [
        (&jobs, 0o700),
        (&script, 0o700),
        (&log.to_path_buf(), 0o600),
        (&run_dir, 0o700),
        (&token, 0o600),
    ] {
        let meta =
            std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            (meta.uid(), meta.mode() & 0o777),
            (victim, mode),
            "{}",
            path.display()
        );
    }
    // As the run left them: the state reached, `jobs/` (0700) closed.
    attacker_reads_an_open_file_in(state);
    for path in [&jobs, link, log, &script, &run_dir, &token] {
        attacker_cannot_read(path, "as the run left it");
    }
    // `jobs/` opened for traversal: each file's own mode refuses.
    chmod(&jobs, 0o711);
    attacker_reads_an_open_file_in(&jobs);
    for path in [link, log, &script, &run_dir, &token] {
        attacker_cannot_read(path, "jobs/ open");
    }
    // The run's directory opened too: the token's own mode refuses.
    chmod(&run_dir, 0o711);
    attacker_reads_an_open_file_in(&run_dir);
    attacker_cannot_read(&token, "jobs/ and the run's directory open");
    chmod(&run_dir, 0o700);
    chmod(&jobs, 0o700);
}

/// Log, script, run directory and token: nothing the attacker plants in the shared directory
/// is written through, and nothing of the run's is readable by them, its private tree
/// reachable by all ([`ReachableState`]). Ray's temp directories (where Ray keeps its sockets,
/// session and runtime environments, what it runs from) are planted too (see
/// [`plant_temp_roots`]), an open directory on one node of the run and a link on the other:
/// the run completes without using them. (A binary planted for the run: `e2e_state_path`.) One
/// victim's run of 2 nodes for both (a Ray start is seconds of the lab's 2 cores).
#[test]
fn a_group_member_can_neither_run_code_as_the_victim_nor_read_or_destroy_their_files() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("plant");
    let state = ReachableState::new();
    // The victim's results, which a followed link would truncate or append to.
    let results = PathBuf::from(format!("/home/{VICTIM}/results-{}.txt", std::process::id()));
    let out = sh_as(
        VICTIM,
        &dir,
        &format!("echo precious > {}", results.display()),
    );
    assert!(out.status.success());
    let digest = sha256_of(&results);
    let temp_roots = plant_temp_roots(&dir, &lab.nodes);
    // The default log directory, as the victim's first launch there makes it (group-writable).
    let out = sh_as(VICTIM, &dir, "mkdir rayslurm-logs");
    assert!(out.status.success(), "{}", text(&out).1);
    plant(&dir, &results);

    let secret = format!("s3cr3t-{}", std::process::id());
    let VictimRun {
        job,
        log,
        info,
        log_text,
    } = victim_runs(
        lab,
        &dir,
        &format!("RAYSLURM_STATE_DIR={}", state.state().display()),
        &format!(
            "{} --env API_KEY={secret} --command 'python -c \"import ray; ray.init(); print(\\\"ray-ok\\\")\"'",
            temp_roots.placement()
        ),
    );
    assert_eq!(info["JobState"], "COMPLETED", "{log_text}");
    assert!(log_text.contains("ray-ok"), "{log_text}");
    let nodes = crate::harness::expand_nodes(&info["NodeList"]);
    temp_roots.were_neither_used_nor_written_through(&job, &log_text, &nodes);
    temp_roots.were_open_to_the_victim();
    drop(temp_roots);
    assert_eq!(sha256_of(&results), digest, "the victim's results changed");
    // Control: the planted links lead to the victim's results, which a run of hers writing
    // through one would change.
    let planted = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .expect("a planted link");
    assert_eq!(std::fs::read_link(planted.path()).unwrap(), results);

    // Everything of the run is in the victim's private tree, the user's alone.
    assert!(log.starts_with(state.state()), "{}", log.display());
    // The log's name in the (shared) default log directory is a link the victim can follow,
    // the attacker not.
    let link = dir.join("rayslurm-logs").join(log.file_name().unwrap());
    assert_eq!(std::fs::read_link(&link).unwrap(), log);
    assert!(reads(VICTIM, &link).is_ok_and(|t| t.contains("ray-ok")));
    the_attacker_reads_nothing_of_the_run(&state.state(), &log, &job, &link);
    // The control in the same search: a file of the victim's state she made world-readable,
    // holding the secret, is the one file found.
    let open = state.state().join("open-secret.txt");
    let out = sh_as(
        VICTIM,
        &dir,
        &format!("echo {secret} > {0} && chmod 644 {0}", open.display()),
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let grep = format!(
        "grep -rls {secret} {} {} /tmp {NODES_TMP}; true",
        project_root().display(),
        state.base.display()
    );
    let out = sh_as(ATTACKER, &dir, &grep);
    assert_eq!(
        text(&out).0.lines().collect::<Vec<_>>(),
        [open.display().to_string()],
        "files another member reads the secret in (the control file alone expected)"
    );
}

/// A private tree in a group-writable directory is refused, naming the path, its owner and
/// mode, before anything is written or submitted.
#[test]
fn a_private_tree_inside_the_shared_directory_is_refused() {
    let Some((_lab, _turn)) = lab() else {
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
    // The control: the same launch with a state directory of the victim's own, which every
    // member may read but no one else write, is taken.
    let state = ReachableState::new();
    let out = sh_as(
        VICTIM,
        &dir,
        &format!(
            "RAYSLURM_STATE_DIR={} \"$RAYSLURM\" launch --dry-run --exp-name t --command true",
            state.state().display()
        ),
    );
    assert!(out.status.success(), "control: {}", text(&out).1);
}

/// The victim's jobs named `name` that Slurm knows (pending, running, or ended within
/// `MinJobAge`).
fn victims_jobs_named(name: &str) -> Vec<String> {
    let out = Command::new("squeue")
        .args(["-h", "-t", "all", "-u", VICTIM, "-n", name, "-o", "%i"])
        .output()
        .unwrap();
    assert!(out.status.success(), "squeue: {}", text(&out).1);
    text(&out).0.split_whitespace().map(str::to_owned).collect()
}

/// A project file another member wrote sets site keys for the victim (with a notice naming
/// it), never code that runs as the victim: `load_env` from it is refused, nothing submitted,
/// its code never runs. The control: the same file, once the victim trusted it, runs its
/// `load_env` on the node, leaving the marker the refused launch did not.
#[test]
fn another_members_project_file_cannot_run_code_as_the_victim() {
    let Some((_lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("config");
    let marker = dir.join("pwned-config");
    let out = sh_as(
        ATTACKER,
        &dir,
        &format!(
            "printf '[launch]\\npartition = \"lab\"\\nload_env = \"touch {}\"\\n' > rayslurm.toml",
            marker.display()
        ),
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let exp = format!("cfg{}", std::process::id());
    let launch = format!("\"$RAYSLURM\" launch --exp-name {exp} --time 5 --no-ray --command true");
    let out = sh_as(VICTIM, &dir, &launch);
    let (stdout, stderr) = text(&out);
    // A job the launch submitted, run to its end: its nodes would have run `load_env` by then.
    let submitted = victims_jobs_named(&exp);
    for job in &submitted {
        wait_job_end(job, Duration::from_secs(120));
    }
    assert!(
        !marker.exists(),
        "the other member's load_env ran as the victim: {stderr}"
    );
    assert_eq!(
        submitted,
        Vec::<String>::new(),
        "a job was submitted: {stderr}"
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stdout, "");
    assert!(stderr.contains("rayslurm.toml"), "{stderr}");
    assert!(
        stderr.contains(&format!("uid {}", uid(ATTACKER))),
        "{stderr}"
    );
    assert!(stderr.contains("load_env"), "{stderr}");
    assert!(stderr.contains("rayslurm trust"), "{stderr}");

    // Control: the victim reads the file and trusts it; the same launch runs its `load_env`.
    let digest = sha256_of(&dir.join("rayslurm.toml"));
    let out = sh_as(
        VICTIM,
        &dir,
        &format!("\"$RAYSLURM\" trust rayslurm.toml --digest {digest}"),
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let out = sh_as(VICTIM, &dir, &format!("{launch} --json"));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "trusted: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let info = wait_job_end(v["job_id"].as_str().unwrap(), Duration::from_secs(120));
    assert_eq!(info["JobState"], "COMPLETED", "{info:?}");
    assert!(marker.exists(), "control: the trusted file's load_env ran");

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
