//! The one SSH connection to a login node: the system's `ssh`, so that the user's keys, agent,
//! `~/.ssh/config` (aliases, `ProxyJump`), known hosts and prompts work as they always do. A
//! master connection is opened once (`ControlMaster`, its socket in the laptop's private state
//! directory, `ControlPersist` 10 minutes) and every command, upload and port forward after it
//! goes through it: one authentication for a whole `launch --follow`, or `up` then `exec`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::UsageError;
use crate::sys::quote::shell_quote;

/// How long the master connection stays open after its last use.
pub(crate) const PERSIST: &str = "10m";

/// A login node reached through a master connection.
#[derive(Debug, Clone)]
pub(crate) struct Ssh {
    /// As the user gave it: `[USER@]HOST` or an alias of `~/.ssh/config`.
    pub(crate) host: String,
    /// The master's socket: named by the host as given.
    control: PathBuf,
}

impl Ssh {
    /// The connection to `host` whose socket is in `dir` (private, the caller's): not opened.
    pub(crate) fn new(host: &str, dir: &Path) -> Result<Self, UsageError> {
        if host.is_empty() || host.starts_with('-') || host.chars().any(char::is_whitespace) {
            return Err(
                UsageError::new(format!("--host {}: not a host name", shell_quote(host))).hint(
                    "give [USER@]HOST or an alias of ~/.ssh/config, e.g. --host login.cluster.org",
                ),
            );
        }
        // Not ssh's `%C` (40 characters): a socket's path has at most 107 bytes, and ssh adds
        // 17 to it while it makes it.
        let name = crate::sys::digest::sha256_hex(host.as_bytes());
        Ok(Self {
            host: host.to_owned(),
            control: dir.join(&name[..16]),
        })
    }

    fn ssh(&self) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.arg("-S").arg(&self.control);
        cmd
    }

    /// Whether the master connection is open.
    pub(crate) fn is_open(&self) -> bool {
        let mut check = self.ssh();
        check.args(["-O", "check", "--", &self.host]);
        quiet(&mut check).status().is_ok_and(|s| s.success())
    }

    /// Opens the master connection unless it is open: the one authentication (prompts, if
    /// any, on the terminal as ssh asks them). What ssh said goes to `log` (the master keeps
    /// no handle on this process's output).
    pub(crate) fn open(&self, log: &Path) -> Result<(), UsageError> {
        if self.is_open() {
            return Ok(());
        }
        let file = std::fs::File::create(log)
            .map_err(|e| UsageError::new(format!("cannot write `{}`: {e}", log.display())))?;
        let mut master = self.ssh();
        master
            .args(["-o", "ControlMaster=yes"])
            .args(["-o", &format!("ControlPersist={PERSIST}")])
            .args(["-f", "-N", "--", &self.host])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file);
        let status = master.status().map_err(|e| {
            UsageError::new(format!("cannot run ssh: {e}"))
                .hint("--host needs OpenSSH's client (`ssh`) on this machine")
        })?;
        if status.success() {
            return Ok(());
        }
        let said = std::fs::read_to_string(log).unwrap_or_default();
        Err(unreachable(&self.host, said.trim()))
    }

    /// `ssh` running `script` with `sh` on the login node, through the master (never a new
    /// authentication: without a master it fails).
    pub(crate) fn script(&self, script: &str) -> Command {
        self.script_with(script, "-T")
    }

    /// As [`Ssh::script`], on a terminal of its own there (`-tt`), for a shell on this
    /// terminal: what is typed, Ctrl-C included, goes there as typed.
    pub(crate) fn script_on_terminal(&self, script: &str) -> Command {
        self.script_with(script, "-tt")
    }

    fn script_with(&self, script: &str, tty: &str) -> Command {
        let mut cmd = self.ssh();
        cmd.args(["-o", "ControlMaster=no", tty, "--", &self.host])
            .arg(format!("exec sh -c {}", shell_quote(script)));
        cmd
    }

    /// Forwards `local` on this machine's loopback to `remote` on the login node's.
    pub(crate) fn forward(&self, local: u16, remote: u16) -> Result<(), UsageError> {
        self.control_op("forward", local, remote)
    }

    /// Ends a forward of [`Ssh::forward`].
    pub(crate) fn cancel_forward(&self, local: u16, remote: u16) -> Result<(), UsageError> {
        self.control_op("cancel", local, remote)
    }

    fn control_op(&self, op: &str, local: u16, remote: u16) -> Result<(), UsageError> {
        let spec = format!("127.0.0.1:{local}:127.0.0.1:{remote}");
        let mut cmd = self.ssh();
        cmd.args(["-O", op, "-L", &spec, "--", &self.host]);
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| UsageError::new(format!("cannot run ssh: {e}")))?;
        if out.status.success() {
            return Ok(());
        }
        Err(UsageError::new(format!(
            "ssh could not {op} the forward of port {local} to {}'s port {remote}: {}",
            self.host,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }

    /// Ends the master connection; whether there was one.
    pub(crate) fn close(&self) -> bool {
        if !self.is_open() {
            return false;
        }
        let mut exit = self.ssh();
        exit.args(["-O", "exit", "--", &self.host]);
        quiet(&mut exit).status().is_ok_and(|s| s.success())
    }
}

fn quiet(cmd: &mut Command) -> &mut Command {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
}

/// A connection that could not be made, with what ssh said and what to do.
fn unreachable(host: &str, said: &str) -> UsageError {
    let hint = if said.contains("Host key verification failed")
        || said.contains("No ED25519 host key")
        || said.contains("host key for")
    {
        format!(
            "ssh does not know {host}'s host key: run `ssh {host}` once and check the key it shows, then try again"
        )
    } else if said.contains("Permission denied") {
        format!(
            "{host} refused your key: check that `ssh {host}` logs you in (your key, agent, ~/.ssh/config)"
        )
    } else if said.contains("Could not resolve")
        || said.contains("Connection refused")
        || said.contains("timed out")
        || said.contains("No route")
    {
        format!("check the name and that {host} is reachable: `ssh {host}` should log you in")
    } else {
        format!("`ssh {host}` should log you in; fix that first (see docs/laptop.md)")
    };
    let said = if said.is_empty() { "(nothing)" } else { said };
    UsageError::new(format!(
        "cannot connect to {host} over SSH: ssh said: {said}"
    ))
    .hint(hint)
}

/// The longest directory a master's socket may be put in (its name, 16, ssh's temporary
/// suffix, 17, and the separators within the 107 bytes of a socket's path).
pub(crate) const SOCKET_DIR_MAX: usize = 72;
