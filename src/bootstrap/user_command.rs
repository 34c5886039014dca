//! The user's command, run through bash on the head node in its own process group, so that
//! signals reach everything it started.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::handoff::job_env;

pub(crate) struct UserCommand {
    child: Child,
    pgid: Pid,
}

impl UserCommand {
    pub(crate) fn spawn(command: &str, env: &[(String, String)]) -> std::io::Result<Self> {
        let child = Command::new("bash")
            .arg("-c")
            .arg(command)
            .envs(env.iter().map(|(k, v)| (k, v)))
            // Ray would prefer a token inherited from the login node to the run's own file.
            .env_remove(job_env::RAY_AUTH_TOKEN)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()?;
        let pgid = Pid::from_raw(child.id() as i32);
        Ok(Self { child, pgid })
    }

    /// The command's process group.
    pub(crate) fn pgid(&self) -> Pid {
        self.pgid
    }

    /// Signals the command's whole process group.
    pub(crate) fn signal(&self, signal: Signal) {
        let _ = killpg(self.pgid, signal);
    }

    pub(crate) fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Whatever the command left running in its group is stopped too.
    pub(crate) fn stop_leftovers(&self) {
        self.signal(Signal::SIGTERM);
        std::thread::sleep(std::time::Duration::from_millis(100));
        self.signal(Signal::SIGKILL);
    }
}
