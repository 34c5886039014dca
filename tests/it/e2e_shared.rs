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
    victim_launches_with(lab, dir, name, "", args)
}

/// [`victim_launches_as`] with the variables `vars` (`K=V ...`) set for the launch.
fn victim_launches_with(
    lab: &Lab,
    dir: &Path,
    name: &str,
    vars: &str,
    args: &str,
) -> (String, PathBuf) {
    let out = sh_as(
        VICTIM,
        dir,
        &format!(
            "{vars} \"$RAYSLURM\" launch --json --exp-name {name} --time 5 --object-store-memory 100000000 --load-env 'source {}/bin/activate' {args}",
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

/// The victim launches from the project directory with the variables `vars`, and the run ends.
pub(crate) fn victim_runs(lab: &Lab, dir: &Path, vars: &str, args: &str) -> VictimRun {
    let (job, log) = victim_launches_with(lab, dir, "shared", vars, args);
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
    let Some((lab, _turn)) = lab("a_group_member_can_neither_run_code_as_the_victim") else {
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
    let Some((_lab, _turn)) = lab("another_members_project_file_cannot_run_code_as_the_victim")
    else {
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

/// Ray's temp directory names are predictable (`/tmp/rs{uid}-{job}.{restart}`, job ids are
/// sequential): another member pre-creates them for the victim's next 21 jobs, on every other
/// node of the lab (`nodes[0]`, `nodes[2]`, ...) as open directories and on the rest as links
/// to a directory of theirs (`trap`, in `dir`). A run on two nodes placed by
/// [`PlantedTempRoots::placement`] meets both. Removed when dropped (as root: the nodes' /tmp is
/// the test's to clean).
fn plant_temp_roots(dir: &Path, nodes: &[String]) -> PlantedTempRoots {
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
const NODES_TMP: &str = "/var/lib/rayslurm-lab/tmp";

/// The temp directories [`plant_temp_roots`] planted.
struct PlantedTempRoots {
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
    fn path(&self, node: &str, id: u64) -> PathBuf {
        PathBuf::from(NODES_TMP)
            .join(node)
            .join(format!("rs{}-{id}.0", self.victim))
    }

    /// The last change (ctime) of the open directory planted for job `id` on `node`.
    fn open_changed(&self, node: &str, id: u64) -> (i64, i64) {
        let meta = std::fs::symlink_metadata(self.path(node, id)).unwrap();
        (meta.ctime(), meta.ctime_nsec())
    }

    /// The launch options that put a run of two nodes on one node of each kind: the first
    /// node with links, and any node with open directories (the other nodes with links
    /// excluded), so that it need not wait for a node another test holds.
    fn placement(&self) -> String {
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
    fn were_neither_used_nor_written_through(&self, job: &str, log: &str, nodes: &[String]) {
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
    fn were_open_to_the_victim(&self) {
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
