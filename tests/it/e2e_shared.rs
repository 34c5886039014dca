//! End-to-end: rayslurm on a shared cluster, tried as HPC users share one. Every attack runs as
//! a second member (`rsbob`) of the victim's group against a run of the first (`rsalice`),
//! launched from their shared 2775 project directory with umask 002: real users, since root
//! passes every permission check and an attack run as root proves nothing. docs/security.md
//! lists each attack with its test here.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::harness::{
    Job, Lab, bin, connect_probe, first_line, lab, text, unique_name, wait_job_end,
};

const VICTIM: &str = "rsalice";
const ATTACKER: &str = "rsbob";

/// The project directory shared by the group, as `cluster.sh up` makes it.
fn project_root() -> PathBuf {
    PathBuf::from("/srv/rayslurm-lab/project")
}

fn uid(user: &str) -> u32 {
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
        path
    })
    .clone()
}

/// Runs a bash script as `user`, with a login-like environment and umask 002 (the norm for a
/// group's project), in `cwd`.
/// The users' PATH and SLURM_CONF: the Slurm clients the tests run (a vendored release's, by
/// tests/run.sh), first. With Debian's clients instead, a newer controller refuses them
/// ("Zero Bytes were transmitted or received": Slurm serves clients of 2 releases back).
fn users_slurm() -> Vec<String> {
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

/// The victim launches from the project directory; returns the job id and the log path.
fn victim_launches(lab: &Lab, dir: &Path, args: &str) -> (String, PathBuf) {
    let out = sh_as(
        VICTIM,
        dir,
        &format!(
            "\"$RAYSLURM\" launch --json --exp-name shared --time 5 --object-store-memory 100000000 --load-env 'source {}/bin/activate' {args}",
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
struct VictimRun {
    job: String,
    log: PathBuf,
    /// Slurm's last view of the job.
    info: std::collections::HashMap<String, String>,
    log_text: String,
}

/// The victim launches from the project directory, and the run ends.
fn victim_runs(lab: &Lab, dir: &Path, args: &str) -> VictimRun {
    let (job, log) = victim_launches(lab, dir, args);
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

/// A Python program, run as the attacker on the head node, that holds 127.0.0.1:`port` for
/// `secs` seconds, answers every request as Ray's Jobs API would, and then prints how many
/// requests came and whether any carried a token.
fn squatter(port: u16, secs: u32) -> String {
    format!(
        "import os, socket, sys, time\n{}",
        hold_port(port, secs, None, false)
    )
}

/// The Python lines that bind 127.0.0.1:`port`, print `bound`, answer every request for
/// `secs` seconds or until `stop` exists (with 401 when `challenge` and the request carries no
/// token, as Ray's dashboard does; else with 200), then print how many requests came and
/// whether any carried a token.
fn hold_port(port: u16, secs: u32, stop: Option<&Path>, challenge: bool) -> String {
    let stopped = stop.map_or("False".to_owned(), |p| {
        format!("os.path.exists(\"{}\")", p.display())
    });
    let challenge = if challenge { "True" } else { "False" };
    format!(
        r#"s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", {port}))
s.listen(16)
s.settimeout(0.5)
print("bound", flush=True)
got = []
end = time.time() + {secs}
while time.time() < end and not {stopped}:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(2)
    try:
        req = c.recv(65536)
        got.append(req)
        if {challenge} and b"uthorization" not in req:
            c.sendall(b"HTTP/1.0 401 Unauthorized\r\n\r\n")
        else:
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n[]")
    except OSError:
        pass
    c.close()
print(len(got), "token" if any(b"Bearer" in g or b"uthorization" in g for g in got) else "no-token", flush=True)
"#
    )
}

/// The Python program `program`, written to `dir/squat.py`, run as the attacker in node
/// `node`'s network namespace (a shell of theirs on that node), its output piped.
fn attacker_runs_on(node: &str, dir: &Path, program: &str) -> std::process::Child {
    std::fs::write(dir.join("squat.py"), program).unwrap();
    Command::new("nsenter")
        .arg(format!("--net=/run/netns/rsl-{node}"))
        .args(["runuser", "-u", ATTACKER, "--", "python3"])
        .arg(dir.join("squat.py"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The pids listening on `port` in node `node`'s network namespace.
fn listeners_on(node: &str, port: u64) -> Vec<String> {
    let out = Command::new("nsenter")
        .arg(format!("--net=/run/netns/rsl-{node}"))
        .args(["ss", "-Htlnp"])
        .arg(format!("sport = :{port}"))
        .output()
        .unwrap();
    let re = regex::Regex::new(r"pid=(\d+)").unwrap();
    re.captures_iter(&String::from_utf8_lossy(&out.stdout))
        .map(|c| c[1].to_owned())
        .collect()
}

/// The victim's cluster, tried twice by another member. Its dashboard forwarded to the login
/// node's 127.0.0.1, where every user can connect and each connection would be an `srun` step
/// run as the victim: another member's connection is closed unanswered, the victim's own is
/// served. Then Ray's dashboard dies and the other member, with a shell on the head node, takes
/// its predictable port on 127.0.0.1: the head's poll of its Jobs API, which carries the token,
/// is never sent there, and the head's log says who holds the port. One cluster for both (a
/// Ray start is seconds of the lab's 2 cores).
#[test]
fn another_member_can_neither_use_the_victims_dashboard_forward_nor_get_the_token_on_its_port() {
    let Some((lab, _turn)) = lab(
        "another_member_can_neither_use_the_victims_dashboard_forward_nor_get_the_token_on_its_port",
    ) else {
        return;
    };
    let dir = project_dir("forward");
    let name = format!("fwd{}", std::process::id());
    let out = sh_as(
        VICTIM,
        &dir,
        &format!(
            "\"$RAYSLURM\" up {name} -n 1 --time 5 --json --object-store-memory 100000000 --load-env 'source {}/bin/activate'",
            lab.venv.display()
        ),
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "up as {VICTIM}: {stderr}");
    // Cancelled if the test fails before its `down`, so that its node is not held until the
    // time limit.
    let cluster = Job::launched(
        stdout.lines().next().unwrap_or_default().as_bytes(),
        dir.clone(),
        Default::default(),
    );
    the_victims_dashboard_forward_serves_the_victim_alone(&dir, &name);
    a_squatter_on_the_dead_dashboards_port_is_never_sent_the_token(&dir, &name, &cluster.log);
}

/// The victim's forward of cluster `name`'s dashboard, for 30 s (then Ctrl-C, as its user
/// would): the other member's connection is closed unanswered, the victim's own answered.
fn the_victims_dashboard_forward_serves_the_victim_alone(dir: &Path, name: &str) {
    let local = 30000 + (std::process::id() % 500) as u16;
    let mut forward = Command::new("runuser")
        .args(["-u", VICTIM, "--", "env", "-i"])
        .arg(format!("HOME=/home/{VICTIM}"))
        .args(users_slurm())
        .args(["timeout", "-s", "INT", "30"])
        .arg(user_bin())
        .args(["dashboard", name, "--port", &local.to_string()])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = first_line(&mut forward);
    assert_eq!(url.trim(), format!("http://localhost:{local}"));
    // Readable by both members, as the project's files are.
    std::fs::write(dir.join("probe.py"), connect_probe(local)).unwrap();
    let connect = "python3 probe.py";
    let theirs = sh_as(ATTACKER, dir, connect);
    let mine = sh_as(VICTIM, dir, connect);
    let forwarded = forward.wait_with_output().unwrap();
    assert_eq!(text(&theirs).0.trim(), "closed", "{}", text(&theirs).1);
    assert_eq!(text(&mine).0.trim(), "answered", "{}", text(&mine).1);
    let said = String::from_utf8_lossy(&forwarded.stderr);
    assert!(
        said.contains("it is not yours (1 refused so far)"),
        "{said}"
    );
}

/// Ray's dashboard of the victim's cluster `name` (whose log is `log`) dies, and the other
/// member takes its port on the head node: no request reaches them, the head's log names the
/// port and their uid, and `down` still releases the cluster.
fn a_squatter_on_the_dead_dashboards_port_is_never_sent_the_token(
    dir: &Path,
    name: &str,
    log: &Path,
) {
    let info: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(log.with_extension("d").join("cluster.json")).unwrap(),
    )
    .unwrap();
    let head = info["head_node"].as_str().unwrap().to_owned();
    let port = info["dashboard_port"].as_u64().unwrap();

    // The dashboard dies (as it may, of memory); its port is free for anyone on the node.
    let dashboard = listeners_on(&head, port);
    assert!(!dashboard.is_empty(), "Ray's dashboard listens on {port}");
    for pid in &dashboard {
        let _ = Command::new("kill").args(["-KILL", pid]).status();
    }
    let t0 = std::time::Instant::now();
    while !listeners_on(&head, port).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "port {port} stays held"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut squat = attacker_runs_on(&head, dir, &squatter(port as u16, 20));
    let mut said = std::io::BufReader::new(squat.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut said, &mut line).unwrap();
    assert_eq!(line.trim(), "bound");
    let mut counted = String::new();
    std::io::Read::read_to_string(&mut said, &mut counted).unwrap();
    let squatted = squat.wait_with_output().unwrap();
    // Ray's Jobs API is gone with the dashboard: `down` says so and still releases the cluster.
    let down = sh_as(VICTIM, dir, &format!("\"$RAYSLURM\" down {name}"));
    let said = text(&down).1;
    assert!(down.status.success(), "{said}");
    assert!(said.contains("cancelling its allocation"), "{said}");

    assert_eq!(counted.trim(), "0 no-token", "{}", text(&squatted).1);
    let log_text = std::fs::read_to_string(log).unwrap();
    assert!(
        log_text.contains(&format!(
            "port {port} on 127.0.0.1 is held by user id {}, not by you",
            uid(ATTACKER)
        )),
        "{log_text}"
    );
}

/// A Python program, run as the attacker on a node, that waits until the victim's Ray holds
/// `base` (the GCS port) and nothing of the victim's listens on `base + 1` (the run holds its
/// ports until `ray start`, and a squat made earlier would only fail its start), then binds the dashboard's port `base + 1` on 127.0.0.1 and answers as Ray's
/// dashboard does (401 without a token, 200 with one) until `stop` exists; then prints how many
/// requests came and whether any carried a token.
fn late_squatter(base: u16, victim_uid: u32, stop: &Path) -> String {
    format!(
        r#"import os, socket, sys, time
def victim_listens(port):
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in open(table).read().splitlines()[1:]:
            f = row.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port and int(f[7]) == {victim_uid}:
                return True
    return False
def ray_holds_base():
    return victim_listens({base}) and not victim_listens({base} + 1)
end = time.time() + 240
while not ray_holds_base():
    if time.time() > end:
        print("no-ray", flush=True)
        sys.exit(1)
    time.sleep(0.005)
{hold}"#,
        hold = hold_port(base + 1, 240, Some(stop), true),
    )
}

/// Another member with a shell on the head node binds a launch run's dashboard port on
/// 127.0.0.1 after the run chose its ports (the block is predictable): the start-up check,
/// which would send the token there, finds the port held by someone else, never sends it, and
/// stops the run (fail closed) naming the holder. Ray's own dashboard is off here, so the
/// squatter always gets the port and the check itself is what is tried, with no race.
#[test]
fn a_squatter_on_a_launch_runs_dashboard_port_is_never_sent_the_token() {
    let Some((lab, _turn)) = lab("a_squatter_on_a_launch_runs_dashboard_port_is_never_sent") else {
        return;
    };
    let dir = project_dir("latesquat");
    let node = lab.nodes[0].clone();
    // Outside the blocks rayslurm picks by itself (12000-31999), so no other test's run is near.
    let base = 41_000 + (std::process::id() % 50) as u16 * 100;
    let stop = dir.join("stop");
    let squat = attacker_runs_on(&node, &dir, &late_squatter(base, uid(VICTIM), &stop));
    let VictimRun {
        job: _,
        log,
        info,
        log_text,
    } = victim_runs(
        lab,
        &dir,
        &format!(
            "-n 1 -w {node} --port-base {base} --ray-head-args=--include-dashboard=false --command 'sleep 60; echo command-done'"
        ),
    );
    std::fs::write(&stop, "").unwrap();
    let squatted = squat.wait_with_output().unwrap();
    let (said, err) = text(&squatted);
    assert!(said.starts_with("bound"), "{said}{err}\n{log_text}");
    assert!(
        said.contains("no-token"),
        "the squatter got the token: {said}"
    );
    assert_ne!(info["JobState"], "COMPLETED", "{log_text}");
    assert!(
        log_text.contains(&format!(
            "port {} on 127.0.0.1 is held by user id {}, not by you",
            base + 1,
            uid(ATTACKER)
        )),
        "{log_text}"
    );
    assert!(!log_text.contains("command-done"), "{log_text}");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(log.with_extension("state.json")).unwrap())
            .unwrap();
    assert_eq!(state["ending"], "auth-not-enforced", "{state}");
}
