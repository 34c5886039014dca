//! The user's command (or setup), run through bash in its own process group, so that signals
//! reach everything it started; its output goes straight to the job's log, or line by line
//! with a prefix (`[RANK NODE] `) when many nodes write to one log.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::bootstrap::in_image;
use crate::handoff::job_env;

/// Where the command's output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Output {
    /// This process's stdout and stderr, as they are.
    Inherit,
    /// Every line, with this prefix in front, to this process's stdout or stderr.
    Prefixed(String),
}

pub(crate) struct UserCommand {
    child: Child,
    pgid: Pid,
    /// The threads that copy prefixed output; joined once the command has ended.
    copiers: Vec<JoinHandle<()>>,
}

impl UserCommand {
    pub(crate) fn spawn(
        command: &str,
        env: &[(String, String)],
        output: &Output,
    ) -> std::io::Result<Self> {
        let mut bash = Command::new("bash");
        bash.arg("-c")
            .arg(command)
            .envs(env.iter().map(|(k, v)| (k, v)))
            // Ray would prefer a token inherited from the login node to the run's own file.
            .env_remove(job_env::RAY_AUTH_TOKEN);
        let mut cmd = in_image::wrap(bash);
        cmd.stdin(Stdio::null()).process_group(0);
        if let Output::Prefixed(_) = output {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        let mut child = cmd.spawn()?;
        let mut copiers = Vec::new();
        if let Output::Prefixed(prefix) = output {
            if let Some(out) = child.stdout.take() {
                copiers.push(copy_lines(out, prefix.clone(), false));
            }
            if let Some(err) = child.stderr.take() {
                copiers.push(copy_lines(err, prefix.clone(), true));
            }
        }
        let pgid = Pid::from_raw(child.id() as i32);
        Ok(Self {
            child,
            pgid,
            copiers,
        })
    }

    /// The command's process group.
    pub(crate) fn pgid(&self) -> Pid {
        self.pgid
    }

    /// Signals the command's whole process group.
    pub(crate) fn signal(&self, signal: Signal) {
        let _ = killpg(self.pgid, signal);
    }

    /// The command's status once it has ended (and its prefixed output is copied: all of it,
    /// unless something it left running holds its output open, whose lines keep coming).
    pub(crate) fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        let status = self.child.try_wait()?;
        if status.is_some() {
            self.settle_copiers(LAST_OUTPUT);
        }
        Ok(status)
    }

    /// Whatever the command left running in its group is stopped too.
    pub(crate) fn stop_leftovers(&mut self) {
        self.signal(Signal::SIGTERM);
        std::thread::sleep(Duration::from_millis(100));
        self.signal(Signal::SIGKILL);
        self.settle_copiers(LAST_OUTPUT);
    }

    /// Joins the copiers that are done within `within`; one whose pipe a process the command
    /// left running (a server started with `&`) still holds is left to copy its lines.
    fn settle_copiers(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        while self.copiers.iter().any(|c| !c.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let (done, running): (Vec<_>, Vec<_>) =
            self.copiers.drain(..).partition(JoinHandle::is_finished);
        for copier in done {
            let _ = copier.join();
        }
        self.copiers = running;
    }
}

/// How long an ended command's output copiers get to copy its last lines.
const LAST_OUTPUT: Duration = Duration::from_millis(300);

/// Copies `from` line by line, each with `prefix` in front, to stdout (or stderr), flushing
/// every line so that the job's log grows as the command writes.
fn copy_lines(from: impl Read + Send + 'static, prefix: String, stderr: bool) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(from);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            let written = if stderr {
                let mut out = std::io::stderr().lock();
                out.write_all(prefix.as_bytes())
                    .and_then(|()| out.write_all(&line))
                    .and_then(|()| out.flush())
            } else {
                let mut out = std::io::stdout().lock();
                out.write_all(prefix.as_bytes())
                    .and_then(|()| out.write_all(&line))
                    .and_then(|()| out.flush())
            };
            if written.is_err() {
                return;
            }
        }
    })
}
