//! One command run on the login node: a short `sh` script sent through the master connection
//! that finds rayslurm's copy in the user's private state directory there, unpacks what this
//! machine sends (the code, the values of `--env KEY`) into a private directory of its own,
//! runs the command and removes that directory when it ends. One round trip, the command's
//! output and exit code as they are; Ctrl-C here is sent there as the signal the command
//! would have had on the login node.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::remote::ssh::Ssh;
use crate::sys::quote::shell_quote;

/// The exit code the script gives when rayslurm's copy is missing there.
const NEEDS_BINARY: i32 = 97;
/// The exit code the script gives when its private directory cannot be made.
const NO_PLACE: i32 = 98;

/// The user's state directory on the login node, as rayslurm finds it there
/// (`$RAYSLURM_STATE_DIR`, `$XDG_STATE_HOME/rayslurm`, `~/.local/state/rayslurm`).
pub(crate) const STATE_DIR: &str = r#"case ${XDG_STATE_HOME:-} in /*) X=$XDG_STATE_HOME ;; *) X=$HOME/.local/state ;; esac
S=${RAYSLURM_STATE_DIR:-$X/rayslurm}"#;

/// What takes each line a command prints on stdout, instead of this process's stdout.
pub(crate) type LineReader = Box<dyn FnMut(&str) + Send>;

/// A word of the command: as it is, or a path into what was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Word {
    Plain(OsString),
    /// `before` then the path of `rel` in the session's directory (`--workdir=` `w0`).
    Sent {
        before: String,
        rel: String,
    },
}

/// The command to run there and what goes with it.
#[derive(Debug)]
pub(crate) struct Session<'a> {
    pub(crate) ssh: &'a Ssh,
    /// Names the private directory there (`laptop/ID` in the state directory).
    pub(crate) id: String,
    /// The binary's SHA-256: its copy there is `laptop-bin/rayslurm-SHA`.
    pub(crate) binary: String,
    pub(crate) words: Vec<Word>,
    /// A directory here whose contents are sent and unpacked there (`None`: nothing).
    pub(crate) sent: Option<&'a Path>,
    /// Whether `env.sh` among what is sent is read before the command.
    pub(crate) env_file: bool,
    /// The command is a shell on this terminal (`attach`): it gets a terminal there, and this
    /// terminal's keys (Ctrl-C too) go to it as typed.
    pub(crate) terminal: bool,
    /// What `rayslurm --version` prints: a rayslurm on the PATH there that prints the same
    /// is used when no copy has been sent.
    pub(crate) version: String,
}

impl Session<'_> {
    /// The script the login node runs.
    pub(crate) fn script(&self) -> String {
        let mut words = String::new();
        for word in &self.words {
            words.push(' ');
            match word {
                Word::Plain(w) => words.push_str(&shell_quote(&w.to_string_lossy())),
                Word::Sent { before, rel } => {
                    if !before.is_empty() {
                        words.push_str(&shell_quote(before));
                    }
                    words.push_str("\"$U\"/");
                    words.push_str(&shell_quote(rel));
                }
            }
        }
        let unpack = if self.sent.is_some() {
            format!("tar -xf - -C \"$U\" || exit {NO_PLACE}\n")
        } else {
            String::new()
        };
        let env = if self.env_file {
            ". \"$U/env.sh\"\n"
        } else {
            ""
        };
        let stdin = if self.sent.is_some() {
            " </dev/null"
        } else {
            ""
        };
        // Every command but the Python API's outcome asks Slurm: a login node whose
        // non-interactive shells have no Slurm on PATH is named, with what to do.
        let slurm = if matches!(self.words.first(), Some(Word::Plain(w)) if w == "call-outcome") {
            ""
        } else {
            NEEDS_SLURM
        };
        format!(
            "{STATE_DIR}\n\
             {slurm}\
             B=$S/laptop-bin/rayslurm-{sha}\n\
             if [ -x \"$B\" ]; then\n\
             {private}\n\
             else\n\
             {on_path}\n\
             fi\n\
             umask 077\n\
             export RAYSLURM_HOST=\n\
             U=$S/laptop/{id}\n\
             mkdir -p \"$S/laptop\" && mkdir \"$U\" || exit {NO_PLACE}\n\
             trap 'rm -rf \"$U\"' EXIT\n\
             {unpack}{env}\
             sh -c 'echo $$ > \"$1/pid\"; shift; exec \"$@\"' sh \"$U\" \"$B\"{words}{stdin}\n\
             st=$?\n\
             exit $st\n",
            sha = self.binary,
            private = PRIVATE_CHECK,
            on_path = on_path(&self.version),
            id = self.id,
        )
    }

    /// Runs the command there until it ends; its exit status. Ctrl-C (SIGINT) and SIGTERM here
    /// are sent to it there; ssh itself is kept from them (its own process group), so that
    /// the command's output goes on until it ends as it would on the login node. With
    /// `each_line`, each line the command prints on stdout goes to it (on a thread of its own)
    /// instead of this process's stdout.
    fn run_reading(&self, each_line: Option<LineReader>) -> Result<ExitStatus> {
        if self.terminal {
            let status = self
                .ssh
                .script_on_terminal(&self.script())
                .status()
                .context("cannot run ssh")?;
            return Ok(status);
        }
        let mut ssh = self.ssh.script(&self.script());
        if each_line.is_some() {
            ssh.stdout(Stdio::piped());
        }
        ssh.process_group(0);
        let mut tar = None;
        if let Some(dir) = self.sent {
            let mut packer = Command::new("tar")
                .arg("-cf")
                .arg("-")
                .arg("-C")
                .arg(dir)
                .arg(".")
                .stdout(Stdio::piped())
                .spawn()
                .context("cannot run tar to send the files")?;
            let out = packer.stdout.take().context("tar's output")?;
            ssh.stdin(Stdio::from(out));
            tar = Some(packer);
        }
        let _signals = Forwarded::install();
        let mut child: Child = ssh.spawn().context("cannot run ssh")?;
        let reader = match (each_line, child.stdout.take()) {
            (Some(mut each_line), Some(out)) => Some(std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(out).lines() {
                    match line {
                        Ok(line) => each_line(&line),
                        Err(_) => break,
                    }
                }
            })),
            _ => None,
        };
        let mut sent_signals = 0;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            let caught = CAUGHT.load(Ordering::SeqCst);
            if caught > sent_signals {
                sent_signals = caught;
                self.signal("INT");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        if let Some(mut tar) = tar {
            let _ = tar.wait();
        }
        if let Some(reader) = reader {
            let _ = reader.join();
        }
        Ok(status)
    }

    /// As [`Session::run_reading`] (`reader` gives each run its line reader), first sending
    /// rayslurm's copy `binary` when the login node has none of this version, after
    /// `on_copy` (a notice): then the command runs again.
    pub(crate) fn run_with_copy(
        &self,
        binary: &Path,
        mut reader: impl FnMut() -> Option<LineReader>,
        on_copy: impl FnOnce(),
    ) -> Result<ExitStatus> {
        let status = self.run_reading(reader())?;
        if status.code() != Some(NEEDS_BINARY) {
            return Ok(status);
        }
        on_copy();
        send_binary(self.ssh, binary, &self.binary)?;
        self.run_reading(reader())
    }

    /// Sends `signal` to the command there (through the master: no new authentication).
    fn signal(&self, signal: &str) {
        let script = format!(
            "{STATE_DIR}\nP=$(cat \"$S/laptop/{id}/pid\" 2>/dev/null) && kill -{signal} \"$P\"\n",
            id = self.id
        );
        let mut kill = self.ssh.script(&script);
        let _ = kill
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Without a copy sent: the `rayslurm` on the PATH there if it is this very version and no
/// one but root or the user can change it or its directory; else the code that asks for the
/// copy.
fn on_path(version: &str) -> String {
    format!(
        "P=$(command -v rayslurm 2>/dev/null) && [ \"$(\"$P\" --version 2>/dev/null)\" = {v} ] || exit {NEEDS_BINARY}\n\
         for p in \"$P\" \"${{P%/*}}\"; do [ -n \"$(find \"$p\" -maxdepth 0 \\( -uid 0 -o -uid \"$(id -u)\" \\) ! -perm /022)\" ] || exit {NEEDS_BINARY}; done\n\
         B=$P",
        v = shell_quote(version)
    )
}

/// The check that Slurm's commands are on the PATH of a command run over SSH there.
const NEEDS_SLURM: &str = "command -v sbatch >/dev/null 2>&1 || { echo \"error: $(hostname) has no Slurm where rayslurm runs over SSH: sbatch is not on the PATH of a non-interactive shell there ($PATH)\" >&2; echo '  hint: make Slurm reachable without a login shell there (the module load or PATH line early in ~/.bashrc), or give --host a login node of the cluster' >&2; exit 2; }\n";

/// The state directory there and rayslurm's copy in it must be the user's and writable by no
/// one else before the copy is run.
const PRIVATE_CHECK: &str = r#"for p in "$S" "$S/laptop-bin" "$B"; do
  [ -O "$p" ] && [ -z "$(find "$p" -maxdepth 0 -perm /022)" ] || { echo "rayslurm: $p is not yours alone (another user could change the copy of rayslurm run there): make it yours and writable by you only" >&2; exit 96; }
done"#;

/// SIGINT/SIGTERM caught while a command runs there.
static CAUGHT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn caught(_: nix::libc::c_int) {
    CAUGHT.fetch_add(1, Ordering::SeqCst);
}

/// SIGINT and SIGTERM counted rather than ending this process, while it lives.
struct Forwarded;

impl Forwarded {
    fn install() -> Self {
        use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
        let action = SigAction::new(
            SigHandler::Handler(caught),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        for signal in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: the handler only adds to an atomic counter.
            unsafe {
                let _ = sigaction(signal, &action);
            }
        }
        Self
    }
}

impl Drop for Forwarded {
    fn drop(&mut self) {
        use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
        let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
        for signal in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: restoring the default disposition.
            unsafe {
                let _ = sigaction(signal, &default);
            }
        }
    }
}

/// Copies `binary` (whose SHA-256 is `sha`) to `laptop-bin/rayslurm-SHA` in the state
/// directory there, checked by its SHA-256 there before it takes that name: a copy cut short
/// or changed on the way is removed, and nothing is left half-written. A copy already there
/// (another command sent it meanwhile) is kept: a running rayslurm's own file is never
/// replaced under it.
fn send_binary(ssh: &Ssh, binary: &Path, sha: &str) -> Result<()> {
    let script = format!(
        "{STATE_DIR}\n\
         D=$S/laptop-bin\n\
         umask 077\n\
         mkdir -p \"$D\" || exit 1\n\
         T=$D/.rayslurm-{sha}.$$\n\
         trap 'rm -f \"$T\"' EXIT\n\
         cat > \"$T\" || exit 1\n\
         echo \"{sha}  $T\" | sha256sum -c --status || {{ echo \"rayslurm: the copy sent to $(hostname) is not the one sent (SHA-256 differs)\" >&2; exit 1; }}\n\
         chmod 700 \"$T\" || exit 1\n\
         ln \"$T\" \"$D/rayslurm-{sha}\" 2>/dev/null || [ -x \"$D/rayslurm-{sha}\" ]\n"
    );
    let file = std::fs::File::open(binary)
        .with_context(|| format!("cannot read `{}`", binary.display()))?;
    let out = ssh
        .script(&script)
        .stdin(Stdio::from(file))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run ssh")?
        .wait_with_output()?;
    if out.status.success() {
        return Ok(());
    }
    let mut said = String::from_utf8_lossy(&out.stderr).into_owned();
    if said.trim().is_empty() {
        said = crate::sys::process::describe_status(out.status);
    }
    anyhow::bail!(
        "cannot copy rayslurm to {}'s state directory: {}",
        ssh.host,
        said.trim()
    )
}

/// What a session's stderr said, when it is read whole (tests).
#[cfg(test)]
fn read_all(mut r: impl std::io::Read) -> String {
    let mut s = String::new();
    let _ = r.read_to_string(&mut s);
    s
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
