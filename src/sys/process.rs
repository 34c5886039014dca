//! The one wrapper for external commands (`sbatch`, `srun`, `squeue`, `scontrol`, `scancel`, `ray`).
//!
//! A [`Cmd`] displays as a shell-escaped command line a user can paste, and its failures carry
//! that command line, the exit status with any signal named, and the trimmed stderr. With
//! `-v/--verbose` ([`echo_commands`]), every command is written to stderr as that line just
//! before it runs.

use std::ffi::OsString;
use std::fmt;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::sys::quote::shell_quote;

/// An external command, built from argv (never from shell text).
#[derive(Debug, Clone)]
pub(crate) struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
}

/// Why an external command did not give us what we needed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CmdError {
    #[error("`{program}` was not found on PATH")]
    NotFound { program: String },
    #[error("could not start `{cmd}`")]
    Spawn {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{cmd}` failed with {status}{}", stderr_suffix(.stderr))]
    Failed {
        cmd: String,
        status: String,
        stderr: String,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

/// Whether commands are echoed to stderr before they run (`-v`): set once, in `main`.
static ECHO: AtomicBool = AtomicBool::new(false);

/// Echoes every command run from now on to stderr, one pasteable line each (`-v/--verbose`).
/// Never on stdout, which carries results.
pub(crate) fn echo_commands(on: bool) {
    ECHO.store(on, Ordering::Relaxed);
}

/// Whether commands (and the other calls out of this process: Ray's Jobs API) are echoed.
pub(crate) fn echoing() -> bool {
    ECHO.load(Ordering::Relaxed)
}

impl Cmd {
    pub(crate) fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
        }
    }

    pub(crate) fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets a variable for the child. Its value is part of the command line shown by `-v`
    /// and in errors, so never a secret: a token goes by its file's path, and the user's
    /// `--env` values reach commands through the job's own environment, never through here.
    pub(crate) fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    pub(crate) fn program(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }

    /// A `std::process::Command` for callers that manage the child themselves: the one way a
    /// `Cmd` becomes a process, so it is echoed here (with `-v`) as it is about to run.
    pub(crate) fn command(&self) -> Command {
        if ECHO.load(Ordering::Relaxed) {
            eprintln!("{self}");
        }
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        for (k, v) in &self.envs {
            command.env(k, v);
        }
        command
    }

    /// Runs to completion with captured output; a non-zero exit is an error.
    pub(crate) fn output(&self) -> Result<Output, CmdError> {
        let output = self
            .command()
            .stdin(Stdio::null())
            .output()
            .map_err(|e| self.spawn_error(e))?;
        if output.status.success() {
            Ok(output)
        } else {
            Err(self.failed(output.status, &output.stderr))
        }
    }

    /// Runs to completion and returns stdout as text.
    pub(crate) fn stdout(&self) -> Result<String, CmdError> {
        self.output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    }

    pub(crate) fn spawn_error(&self, error: std::io::Error) -> CmdError {
        if error.kind() == std::io::ErrorKind::NotFound {
            CmdError::NotFound {
                program: self.program(),
            }
        } else {
            CmdError::Spawn {
                cmd: self.to_string(),
                source: error,
            }
        }
    }

    pub(crate) fn failed(&self, status: ExitStatus, stderr: &[u8]) -> CmdError {
        CmdError::Failed {
            cmd: self.to_string(),
            status: describe_status(status),
            stderr: trim_stderr(stderr),
        }
    }
}

impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in &self.envs {
            write!(
                f,
                "{}={} ",
                k.to_string_lossy(),
                shell_quote(&v.to_string_lossy())
            )?;
        }
        f.write_str(&shell_quote(&self.program.to_string_lossy()))?;
        for arg in &self.args {
            write!(f, " {}", shell_quote(&arg.to_string_lossy()))?;
        }
        Ok(())
    }
}

/// "exit code 3" or "signal 9 (SIGKILL)".
/// A command that runs `program` with `args` in place of `cmd`, with `cmd`'s environment and
/// working directory: how a wrapper (an image's runtime, a private view) is put in front of a
/// program. `cmd`'s own program and arguments are [`argv`].
pub(crate) fn rewrapped(
    cmd: &Command,
    program: impl AsRef<std::ffi::OsStr>,
    args: impl IntoIterator<Item = OsString>,
) -> Command {
    let mut wrapped = Command::new(program);
    wrapped.args(args);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

/// `cmd`'s program and its arguments.
pub(crate) fn argv(cmd: &Command) -> Vec<OsString> {
    std::iter::once(cmd.get_program().to_owned())
        .chain(cmd.get_args().map(std::ffi::OsStr::to_owned))
        .collect()
}

pub(crate) fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        format!("exit code {code}")
    } else if let Some(signal) = status.signal() {
        match nix::sys::signal::Signal::try_from(signal) {
            Ok(sig) => format!("signal {signal} ({})", sig.as_str()),
            Err(_) => format!("signal {signal}"),
        }
    } else {
        "an unknown status".to_owned()
    }
}

/// The exit code a shell would report for this status: the code, or 128 + signal.
pub(crate) fn exit_code_of(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// The last few lines of stderr, trimmed, so an error message stays readable.
fn trim_stderr(stderr: &[u8]) -> String {
    const KEEP: usize = 10;
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.trim().lines().collect();
    let start = lines.len().saturating_sub(KEEP);
    lines[start..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_a_pasteable_command_line() {
        let cmd = Cmd::new("sbatch")
            .arg("--parsable")
            .arg("/srv/my dir/x.sh")
            .env("SBATCH_X", "a b");
        assert_eq!(
            cmd.to_string(),
            "SBATCH_X='a b' sbatch --parsable '/srv/my dir/x.sh'"
        );
    }

    #[test]
    fn failure_names_command_status_and_stderr() {
        let err = Cmd::new("bash")
            .args(["-c", "echo oops >&2; exit 3"])
            .output()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`bash -c 'echo oops >&2; exit 3'` failed with exit code 3: oops"
        );
    }

    #[test]
    fn signal_is_named() {
        let err = Cmd::new("bash")
            .args(["-c", "kill -9 $$"])
            .output()
            .unwrap_err();
        assert!(err.to_string().contains("signal 9 (SIGKILL)"), "{err}");
    }

    #[test]
    fn missing_program_is_not_found() {
        let err = Cmd::new("rayslurm-no-such-program").output().unwrap_err();
        assert!(matches!(err, CmdError::NotFound { .. }));
    }
}
