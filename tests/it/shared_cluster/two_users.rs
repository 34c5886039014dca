//! The lab's two users of one group, as the shared-cluster tests use them: the victim
//! `rsalice` launches from the group's 2775 project directory, the attacker `rsbob` runs
//! commands as themself (`runuser`), both with the binary under test, and programs in a
//! node's network namespace (a shell of theirs on that node) that squat a port and answer.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::harness::{Lab, bin, text, unique_name, wait_job_end};

pub(crate) const VICTIM: &str = "rsalice";
pub(crate) const ATTACKER: &str = "rsbob";

/// The project directory shared by the group, as `cluster.sh up` makes it.
pub(crate) fn project_root() -> PathBuf {
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

pub(crate) fn sha256_of(path: &Path) -> String {
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

/// The file whose existence stops an attacker's program: made when dropped, so that a test
/// that fails leaves no program of theirs behind.
pub(crate) struct Stop(pub(crate) PathBuf);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}

/// A job cancelled if the test fails (a held one would wait in the queue for ever).
pub(crate) struct CancelOnPanic(pub(crate) String);

impl Drop for CancelOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = Command::new("scancel").arg(&self.0).status();
        }
    }
}

/// The Python lines that answer every request to the listening socket `s` until `stop` exists
/// or `secs` have passed (with 401 when `challenge` and the request carries no token, as Ray's
/// dashboard does; else with 200 and an empty list, as the Jobs API would), then print how
/// many requests came and whether any carried a token.
pub(crate) fn answer(secs: u32, stop: &Path, challenge: bool) -> String {
    let challenge = if challenge { "True" } else { "False" };
    format!(
        r#"s.settimeout(0.5)
got = []
end = time.time() + {secs}
while time.time() < end and not os.path.exists("{stop}"):
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(2)
    try:
        req = c.recv(65536)
        got.append(req)
        print("request:", req[:400], file=sys.stderr, flush=True)
        if {challenge} and b"uthorization" not in req:
            c.sendall(b"HTTP/1.0 401 Unauthorized\r\n\r\n")
        else:
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n[]")
    except OSError:
        pass
    c.close()
print(len(got), "token" if any(b"Bearer" in g or b"uthorization" in g for g in got) else "no-token", flush=True)
"#,
        stop = stop.display()
    )
}

/// The Python program `program`, written to `dir/squat.py`, run as the attacker in node
/// `node`'s network namespace (a shell of theirs on that node), its output piped.
pub(crate) fn attacker_runs_on(node: &str, dir: &Path, program: &str) -> std::process::Child {
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
pub(crate) fn listeners_on(node: &str, port: u64) -> Vec<String> {
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
