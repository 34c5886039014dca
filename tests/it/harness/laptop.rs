//! A "laptop" for the tests of `rayslurm --host`: a mount namespace of its own on this machine,
//! where the lab's user `rsalice` has no Slurm and no Ray, and a HOME and a work directory
//! that the login node cannot read; it reaches the lab's login node, the host itself, through
//! the lab's real OpenSSH server (`tests/cluster/sshd.sh`, `127.0.0.1:2222`) as `lab-login`.
//!
//! Inside the namespace a fresh tmpfs is over `/srv/rayslurm-lab` (the cluster's shared
//! filesystem and project directory are gone, and [`LAPTOP_ROOT`] holds the laptop's `home/`,
//! `work/` and `bin/`; on the host that directory is empty) and another over `/tmp` (the
//! laptop's own), empty ones over `/home`,
//! `/opt/rayslurm-lab` (the lab's Ray venvs), `/etc/slurm`, the lab's state and runtime
//! directories and any Slurm directory on PATH, and every Slurm client is a script that says
//! "no Slurm on the laptop" and exits 127. Its `/etc/passwd` gives `rsalice` the laptop's HOME
//! (OpenSSH finds `~/.ssh` there, not in `$HOME`). `~/.ssh` holds a key of the laptop's own,
//! which the harness authorizes on the login node while the laptop lives (so that
//! [`Laptop::auth_count`] counts this laptop's logins alone, whatever other tests do), the
//! login node's host key, and a `Host lab-login` entry. The binary under test is `rayslurm` on
//! the laptop's PATH.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::no_real_slurm::SLURM_CLIENTS;
use super::{Lab, bin, skip, text, this_test, unique_name};

/// The login node's name in the laptop's `~/.ssh/config`.
pub const LOGIN_HOST: &str = "lab-login";
/// Who uses the laptop, and is the same user on the login node.
pub const LAPTOP_USER: &str = "rsalice";
const LAPTOP_GROUP: &str = "rslproj";
/// The laptop's own files, as seen inside: a tmpfs there; on the host, an empty directory.
pub const LAPTOP_ROOT: &str = "/srv/rayslurm-lab/laptop";
const SSH_PORT: u16 = 2222;
const SSHD_PID: &str = "/run/rayslurm-lab/sshd.pid";
const SSHD_LOG: &str = "/var/lib/rayslurm-lab/log/sshd.log";
const HOST_KEY: &str = "/var/lib/rayslurm-lab/ssh/ssh_host_ed25519_key.pub";
const AUTHORIZED_KEYS: &str = "/var/lib/rayslurm-lab/ssh/authorized_keys";
const AUTHORIZED_KEYS_LOCK: &str = "/run/rayslurm-lab/authorized-keys.lock";
const NS_DIR: &str = "/run/rayslurm-lab/laptop-ns";

impl Lab {
    /// How many times the login node's sshd has let `user` in by a key ("Accepted publickey
    /// for USER" in its log), by any key: every test's. [`Laptop::auth_count`] counts one
    /// laptop's.
    pub fn sshd_auth_count(&self, user: &str) -> usize {
        auth_lines(&format!("Accepted publickey for {user} from "), "")
    }
}

/// A laptop in its own mount namespace; ended (its processes, its namespace and tmpfs, its key
/// on the login node) when dropped.
pub struct Laptop {
    /// The namespace's file (bind-mounted nsfs), what `nsenter --mount` enters.
    ns: PathBuf,
    /// The line added to the login node's `authorized_keys/rsalice`, if it was.
    key_line: Option<String>,
    /// The laptop's key, as sshd's log names it (`SHA256:...`).
    fingerprint: String,
}

impl Laptop {
    /// A new laptop for the running test (`name` shows in its key's comment), or `None` when
    /// the login node's sshd is not running (`cluster.sh up` starts it): skipped loudly, a
    /// failure under CI. Takes about a tenth of a second.
    pub fn new(lab: &Lab, name: &str) -> Option<Laptop> {
        let _ = lab; // the cluster is up: its turn is the caller's
        if let Err(why) = sshd_running() {
            skip(&this_test(), &why, None);
            return None;
        }
        let unique = unique_name(name);
        let ns = Path::new(NS_DIR).join(&unique);
        private_ns_dir();
        std::fs::File::create(&ns).unwrap();
        let mut laptop = Laptop {
            ns,
            key_line: None,
            fingerprint: String::new(),
        };
        let made = Command::new("unshare")
            .arg(format!("--mount={}", laptop.ns.display()))
            .args(["--propagation", "private", "true"])
            .output()
            .unwrap();
        assert!(made.status.success(), "unshare: {}", text(&made).1);
        laptop.furnish();
        let public = laptop.ssh_setup(&format!("rayslurm-lab-{unique}"));
        laptop.fingerprint = fingerprint(&public);
        authorize(Some(&public), None);
        laptop.key_line = Some(public);
        Some(laptop)
    }

    /// The laptop user's HOME, as seen inside.
    pub fn home(&self) -> PathBuf {
        Path::new(LAPTOP_ROOT).join("home")
    }

    /// The laptop's work directory (rsalice's), as seen inside: where its commands start.
    pub fn work(&self) -> PathBuf {
        Path::new(LAPTOP_ROOT).join("work")
    }

    /// The directory first on the laptop's PATH: `rayslurm` (the binary under test) is there.
    pub fn bin_dir(&self) -> PathBuf {
        Path::new(LAPTOP_ROOT).join("bin")
    }

    /// Writes `text` to `rel_path` under [`Laptop::work`] as the laptop user (directories made
    /// as needed); returns its path inside.
    pub fn write(&self, rel_path: &str, text: &str) -> PathBuf {
        let path = self.work().join(rel_path);
        let mut write = self.command("sh");
        write
            .args(["-c", "mkdir -p \"$(dirname \"$1\")\" && cat >\"$1\"", "_"])
            .arg(&path)
            .stderr(Stdio::piped());
        let out = fed(write, text.as_bytes());
        assert!(out.status.success(), "write {rel_path}: {}", text_of(&out));
        path
    }

    /// The text of a file the laptop user can read, by its path inside (relative: under
    /// [`Laptop::work`]).
    pub fn read(&self, path: impl AsRef<Path>) -> String {
        let out = self.command("cat").arg(path.as_ref()).output().unwrap();
        assert!(out.status.success(), "read: {}", text_of(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Binds a host file or directory into the laptop at `rel_path` under [`LAPTOP_ROOT`]
    /// (read-only), e.g. a second build beside `bin/rayslurm`; returns its path inside.
    #[allow(dead_code)]
    pub fn bind_in(&self, host: &Path, rel_path: &str) -> PathBuf {
        let inside = Path::new(LAPTOP_ROOT).join(rel_path);
        let script = "set -e; mkdir -p \"$(dirname \"$2\")\"; \
                      if [ -d \"$1\" ]; then mkdir -p \"$2\"; else : >>\"$2\"; fi; \
                      mount --bind \"$1\" \"$2\"; mount -o remount,bind,ro \"$2\"";
        self.as_root(script, &[host, &inside]);
        inside
    }

    /// `program` run inside the laptop as its user, in [`Laptop::work`], with HOME, USER,
    /// LOGNAME, PATH (the laptop's `bin/` first) and LANG alone: nothing of the test process's
    /// environment (no `SLURM_*`, no `RAYSLURM_*`) unless the test adds it.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        self.command_in(&self.work(), program)
    }

    /// [`Laptop::command`] started in `dir` (a path inside).
    pub fn command_in(&self, dir: &Path, program: impl AsRef<std::ffi::OsStr>) -> Command {
        // (not nsenter's --wd: it opens the directory before it enters the namespace)
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--mount={}", self.ns.display()))
            .args(["--", "setpriv"])
            .arg(format!("--reuid={LAPTOP_USER}"))
            .arg(format!("--regid={LAPTOP_GROUP}"))
            .args(["--init-groups", "--", "env", "-C"])
            .arg(dir)
            .arg("--")
            .arg(program);
        let path = format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin_dir().display());
        cmd.env_clear()
            .env("HOME", self.home())
            .env("USER", LAPTOP_USER)
            .env("LOGNAME", LAPTOP_USER)
            .env("PATH", path)
            .env("LANG", "C.UTF-8");
        cmd
    }

    /// `rayslurm ARGS` run on the laptop, to its end.
    #[allow(dead_code)]
    pub fn run<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.command("rayslurm").args(args).output().unwrap()
    }

    /// A bash script run on the laptop, to its end.
    pub fn sh(&self, script: &str) -> Output {
        self.command("bash").args(["-c", script]).output().unwrap()
    }

    /// How many times the login node's sshd has let this laptop's key in.
    pub fn auth_count(&self) -> usize {
        let who = format!("Accepted publickey for {LAPTOP_USER} from ");
        auth_lines(&who, &format!(" {}", self.fingerprint))
    }

    /// Runs `script` as root inside the namespace, with `args` as `$1...`.
    fn as_root(&self, script: &str, args: &[&Path]) {
        let out = Command::new("nsenter")
            .arg(format!("--mount={}", self.ns.display()))
            .args(["--", "sh", "-c", script, "_"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "in the laptop as root: {}",
            text_of(&out)
        );
    }

    /// Hides the lab's Slurm, Ray, homes and shared filesystem, and makes the laptop's own.
    fn furnish(&self) {
        let mut files: Vec<PathBuf> = Vec::new();
        for client in SLURM_CLIENTS {
            let found = which::which_all_global(client).into_iter().flatten();
            let more =
                ["/usr/bin", "/usr/local/bin", "/usr/sbin"].map(|d| Path::new(d).join(client));
            for p in found.chain(more).filter(|p| p.is_file()) {
                let real = p.canonicalize().unwrap_or(p);
                if !files.contains(&real) {
                    files.push(real);
                }
            }
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs: Vec<PathBuf> = std::env::split_paths(&path)
            .filter(|d| d.to_string_lossy().contains("slurm") && d.is_dir())
            .collect();
        let bin = bin();
        let mut args: Vec<&Path> = vec![Path::new(LAPTOP_ROOT), &bin];
        args.extend(dirs.iter().map(PathBuf::as_path));
        args.push(Path::new("--"));
        args.extend(files.iter().map(PathBuf::as_path));
        self.as_root(FURNISH, &args);
    }

    /// The laptop user's `~/.ssh`: a key of its own, the login node's host key, `Host
    /// lab-login`. Returns the public key's line.
    fn ssh_setup(&self, comment: &str) -> String {
        let host_key = std::fs::read_to_string(HOST_KEY).unwrap();
        let host_key: Vec<&str> = host_key.split_whitespace().take(2).collect();
        let known = format!("[127.0.0.1]:{SSH_PORT} {}", host_key.join(" "));
        let config = format!(
            "Host {LOGIN_HOST}\n  HostName 127.0.0.1\n  Port {SSH_PORT}\n  User {LAPTOP_USER}\n  \
             IdentityFile ~/.ssh/id_ed25519\n  IdentitiesOnly yes\n  StrictHostKeyChecking yes\n  \
             BatchMode yes\n"
        );
        let out = self
            .command("sh")
            .args(["-c", SSH_SETUP, "_", comment, &known, &config])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the laptop's ~/.ssh: {}",
            text_of(&out)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Laptop {
    fn drop(&mut self) {
        end_processes_in(&self.ns);
        if let Some(line) = self.key_line.take() {
            authorize(None, Some(&line));
        }
        let _ = Command::new("umount").arg(&self.ns).output();
        let _ = std::fs::remove_file(&self.ns);
    }
}

/// Run as root in the new namespace: `$1` the laptop's root, `$2` the binary under test, then
/// Slurm directories to hide, `--`, and Slurm clients to mask.
const FURNISH: &str = r#"set -eu
L=$1 BIN=$2; shift 2
hide() { if [ -d "$1" ]; then mount -t tmpfs -o mode=0755,size=1m laptop-hidden "$1"; fi; }
mount -t tmpfs -o mode=0755,size=512m rayslurm-laptop /srv/rayslurm-lab
mount -t tmpfs -o mode=1777,size=256m laptop-tmp /tmp
for d in /home /opt/rayslurm-lab /etc/slurm /var/lib/rayslurm-lab /run/rayslurm-lab; do hide "$d"; done
while [ "$1" != -- ]; do hide "$1"; shift; done
shift
sys=/srv/rayslurm-lab/laptop-sys
mkdir -p "$L/home" "$L/work" "$L/bin" "$sys"
printf '#!/bin/sh\necho "${0##*/}: no Slurm on the laptop" >&2\nexit 127\n' >"$sys/no-slurm"
chmod 0755 "$sys/no-slurm"
# (a client in a directory hidden above, a vendored Slurm's `bin/`, is gone already)
for f in "$@"; do if [ -e "$f" ]; then mount --bind "$sys/no-slurm" "$f"; fi; done
awk -F: -v OFS=: -v home="$L/home" '$1 == "rsalice" { $6 = home } { print }' /etc/passwd >"$sys/passwd"
chmod 0644 "$sys/passwd"
mount --bind "$sys/passwd" /etc/passwd
: >"$L/bin/rayslurm"
mount --bind "$BIN" "$L/bin/rayslurm"
chown rsalice:rslproj "$L/home" "$L/work"
chmod 0700 "$L/home"
chmod 0755 "$L/work"
"#;

/// Run as the laptop user: `$1` the key's comment, `$2` the known_hosts line, `$3` the
/// config; prints the public key.
const SSH_SETUP: &str = r#"set -eu
umask 077
mkdir -p ~/.ssh
ssh-keygen -q -t ed25519 -N '' -C "$1" -f ~/.ssh/id_ed25519
printf '%s\n' "$2" >~/.ssh/known_hosts
printf '%s' "$3" >~/.ssh/config
cat ~/.ssh/id_ed25519.pub
"#;

/// Why the login node cannot be reached, if it cannot: its sshd's PID file names no sshd.
fn sshd_running() -> Result<(), String> {
    let pid = std::fs::read_to_string(SSHD_PID).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid.trim())).unwrap_or_default();
    if !pid.trim().is_empty() && String::from_utf8_lossy(&cmdline).contains("sshd") {
        return Ok(());
    }
    Err(
        "the test cluster's login node (sshd on 127.0.0.1:2222) is not running \
         (run `bash tests/cluster/cluster.sh up`)"
            .into(),
    )
}

/// `NS_DIR` as a private bind mount of itself, as a mount namespace's file needs (made once,
/// under a lock: tests and test processes make laptops at once).
fn private_ns_dir() {
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(format!("{NS_DIR}.lock"))
        .unwrap();
    lock.lock().unwrap();
    let script = "mountpoint -q \"$1\" || { mkdir -p \"$1\" && mount --bind \"$1\" \"$1\" && \
                  mount --make-private \"$1\"; }";
    let out = Command::new("sh")
        .args(["-c", script, "_", NS_DIR])
        .output()
        .unwrap();
    assert!(out.status.success(), "{NS_DIR}: {}", text_of(&out));
}

/// Adds `add` to rsalice's authorized keys on the login node, or removes `remove`, under a
/// lock; the file is replaced whole (sshd reads either the old or the new).
fn authorize(add: Option<&str>, remove: Option<&str>) {
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(AUTHORIZED_KEYS_LOCK)
        .unwrap();
    lock.lock().unwrap();
    let file = Path::new(AUTHORIZED_KEYS).join(LAPTOP_USER);
    let old = std::fs::read_to_string(&file).unwrap_or_default();
    let mut lines: Vec<&str> = old.lines().filter(|l| Some(*l) != remove).collect();
    lines.extend(add);
    let tmp = file.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, lines.join("\n") + "\n").unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::rename(&tmp, &file).unwrap();
}

/// `cmd` run to its end with `input` on its stdin (its stdout captured).
fn fed(mut cmd: Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// A public key's `SHA256:...` fingerprint, as sshd logs it.
fn fingerprint(public: &str) -> String {
    let mut keygen = Command::new("ssh-keygen");
    keygen.args(["-l", "-f", "/dev/stdin"]);
    let out = fed(keygen, public.as_bytes());
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let fp = listed.split_whitespace().nth(1).unwrap_or_default();
    assert!(fp.starts_with("SHA256:"), "ssh-keygen -l: {listed}");
    fp.to_owned()
}

/// The sshd log's lines that begin (after sshd's own prefix, if any) with `who` and end with
/// `tail`.
fn auth_lines(who: &str, tail: &str) -> usize {
    let log = std::fs::read_to_string(SSHD_LOG).unwrap_or_default();
    log.lines()
        .filter(|l| l.contains(who) && l.ends_with(tail))
        .count()
}

/// Ends every process whose mount namespace is the laptop's (its ssh masters, a command a
/// failed test left): TERM, then KILL after a second.
fn end_processes_in(ns: &Path) {
    use nix::sys::signal::{Signal, kill};
    let Ok(meta) = std::fs::metadata(ns) else {
        return;
    };
    let wanted = format!("mnt:[{}]", meta.ino());
    let inside = || -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/ns/mnt"))
                    .is_ok_and(|l| l.to_string_lossy() == wanted)
            })
            .collect()
    };
    let start = Instant::now();
    let mut signal = Signal::SIGTERM;
    loop {
        let pids = inside();
        if pids.is_empty() {
            return;
        }
        if start.elapsed() > Duration::from_secs(1) {
            signal = Signal::SIGKILL;
        }
        if start.elapsed() > Duration::from_secs(5) {
            eprintln!("laptop {}: processes {pids:?} do not end", ns.display());
            return;
        }
        for pid in pids {
            let _ = kill(nix::unistd::Pid::from_raw(pid), signal);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn text_of(out: &Output) -> String {
    let (stdout, stderr) = text(out);
    format!("exit {:?}\n{stdout}{stderr}", out.status.code())
}
