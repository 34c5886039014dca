//! The head's watchdog: a tiny process that outlives the head's bootstrap and, if the
//! bootstrap dies without finishing (SIGKILL, the OOM killer, a crash), stops what it left
//! running on the head node: the user's command, Ray's daemons (which `ray start` detaches, so
//! Slurm's `proctrack/linuxproc` does not find them), the run's temp root; then writes the final
//! state that the bootstrap could not.
//!
//! It leaves the job's process tree at once (fork, then a session of its own), so that Slurm's
//! cleanup of a killed batch step does not kill it too. It learns from the bootstrap through a
//! pipe on its stdin: the command's process group, and `done` when the bootstrap has ended
//! well. End-of-file without `done` means the bootstrap died. The workers need no watchdog:
//! their stdin is the head's `srun` step, which closes when the head dies, and they stop.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Stdio};
use std::time::{Duration, Instant};

use chrono::{Local, SecondsFormat};
use nix::sys::signal::{SigHandler, Signal, killpg, signal};
use nix::unistd::{ForkResult, Pid, fork, setsid};

use super::run_dir_lease::{self, Holder};
use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::in_image;
use crate::bootstrap::marked::{self, RunMark};
use crate::bootstrap::node::{RAY_STOP_GRACE, say};
use crate::bootstrap::ray_node::TempRoot;
use crate::bootstrap::{byte_lines, kept_logs};
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::elastic::WorkerJobs;
use crate::handoff::final_state::{Attempt, Ending, FinalState};
use crate::slurm::control;
use crate::sys::process::Cmd;

/// What the bootstrap tells its watchdog, one line each.
const PGID: &str = "pgid";
const TEMP: &str = "temp";
const DONE: &str = "done";

/// The head's end of the pipe to its watchdog.
pub(super) struct Watchdog {
    stdin: ChildStdin,
}

impl Watchdog {
    /// Starts the watchdog for the head whose arguments are `head` and whose processes carry
    /// `mark`; returns once it has left the job's process tree.
    pub(super) fn start(head: &BootstrapArgs, mark: &str) -> anyhow::Result<Self> {
        let args = BootstrapArgs {
            command: None,
            worker: false,
            watchdog: true,
            run_mark: Some(mark.to_owned()),
            ..head.clone()
        };
        let cmd = Cmd::new(std::env::current_exe()?)
            .arg("bootstrap")
            .args(args.to_words());
        let mut child = cmd
            .command()
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|e| cmd.spawn_error(e))?;
        let stdin = child.stdin.take().expect("piped stdin");
        // The first process forks the watchdog proper and exits at once.
        child.wait()?;
        Ok(Self { stdin })
    }

    /// Tells the watchdog the command's process group.
    pub(super) fn command_started(&mut self, pgid: Pid) {
        let _ = writeln!(self.stdin, "{PGID} {pgid}").and_then(|()| self.stdin.flush());
    }

    /// Tells the watchdog the temp root Ray was given on this node (its name is new for every
    /// attempt, so the watchdog is told, never guesses).
    pub(super) fn temp_root(&mut self, path: &Path) {
        let _ = writeln!(self.stdin, "{TEMP} {}", path.display()).and_then(|()| self.stdin.flush());
    }

    /// Tells the watchdog the bootstrap ended well (teardown done, final state written).
    pub(super) fn done(mut self) {
        let _ = writeln!(self.stdin, "{DONE}").and_then(|()| self.stdin.flush());
    }
}

/// What the watchdog heard before its stdin closed.
#[derive(Debug, Default, PartialEq, Eq)]
struct Heard {
    pgid: Option<i32>,
    temp: Option<PathBuf>,
    done: bool,
}

fn listen(from: impl BufRead) -> Heard {
    let mut heard = Heard::default();
    byte_lines::for_each(from, |line| {
        let line = byte_lines::text(line);
        match line.split_once(' ') {
            Some((PGID, n)) => heard.pgid = n.parse().ok(),
            Some((TEMP, path)) => heard.temp = Some(PathBuf::from(path)),
            None if line == DONE => heard.done = true,
            _ => {}
        }
        true
    });
    heard
}

/// The watchdog process (`rayslurm bootstrap --watchdog`): forks away from the job's process
/// tree, then waits for its stdin to close.
pub(in crate::bootstrap) fn run(args: &BootstrapArgs, alloc: &Allocation) -> i32 {
    // SAFETY: nothing has started a thread yet in this process.
    match unsafe { fork() } {
        Ok(ForkResult::Parent { .. }) => return 0,
        Ok(ForkResult::Child) => {}
        Err(e) => {
            say(
                &alloc.node,
                format!("warning: the watchdog cannot start: {e}"),
            );
            return 1;
        }
    }
    let _ = setsid();
    for s in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
    ] {
        // SAFETY: SIG_IGN installs no handler code.
        let _ = unsafe { signal(s, SigHandler::SigIgn) };
    }
    let started_at = Local::now();
    let heard = listen(std::io::stdin().lock());
    if heard.done {
        return 0;
    }
    stop_the_run(args, alloc, &heard);
    if let Some(dir) = &args.run_dir {
        let me = Holder {
            job_id: alloc.job_id.clone(),
            restart: alloc.restart_count,
        };
        run_dir_lease::release_if_held(&dir.join(run_dir_lease::LEASE), &me);
    }
    let Some(path) = &args.state_file else {
        return 1;
    };
    // The bootstrap wrote this attempt's end before it died: that stands. (An earlier
    // attempt's, after a requeue, is not this one's.)
    let written = FinalState::read(path)
        .ok()
        .flatten()
        .is_some_and(|s| s.job_id == alloc.job_id && s.last().restart == alloc.restart_count);
    if written {
        return 1;
    }
    let node = &alloc.node;
    let message = format!(
        "the bootstrap on {node} died before the run ended (killed by SIGKILL or the OOM killer, or it crashed); its watchdog stopped the command and Ray"
    );
    say(node, format!("error: {message}"));
    let state = FinalState::after_attempt(
        Some(path),
        &alloc.job_id,
        node,
        Attempt {
            restart: alloc.restart_count,
            started_at: started_at.to_rfc3339_opts(SecondsFormat::Millis, false),
            ended_at: Local::now().to_rfc3339_opts(SecondsFormat::Millis, false),
            ending: Ending::Killed,
            exit_code: 1,
            requeued: false,
            message: Some(message),
        },
    );
    if let Err(e) = state.write(path) {
        say(node, format!("warning: {e:#}"));
    }
    1
}

/// Stops the command's process group, the run's Ray processes on this node and its temp
/// root, keeping Ray's logs first (the run failed).
fn stop_the_run(args: &BootstrapArgs, alloc: &Allocation, heard: &Heard) {
    let node = &alloc.node;
    say(
        node,
        "the bootstrap is gone; its watchdog stops what it left on this node",
    );
    let t0 = Instant::now();
    if let Some(pgid) = heard.pgid.map(Pid::from_raw) {
        let _ = killpg(pgid, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(2);
        while killpg(pgid, None).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = killpg(pgid, Signal::SIGKILL);
    }
    let temp = heard.temp.clone().map(|path| TempRoot { path });
    let run = RunMark {
        mark: args.run_mark.clone().unwrap_or_default(),
        temp_root: temp.as_ref().map(|t| t.path.clone()),
    };
    cancel_worker_jobs(args, alloc);
    let stopped = marked::stop_all(&run, RAY_STOP_GRACE);
    in_image::remove_container(node);
    if let Some(temp) = temp.filter(|t| t.path.exists()) {
        let root = kept_logs::root(args.ray_logs_dir.as_deref(), args.state_file.as_deref());
        kept_logs::keep_saying(&temp, root.as_deref(), alloc.restart_count, node);
        temp.remove();
    }
    say(
        node,
        format!(
            "the watchdog stopped {stopped} Ray process(es) in {:.1} s",
            t0.elapsed().as_secs_f64()
        ),
    );
}

/// An elastic cluster's worker jobs (`workers.json`) end with the head that submitted them.
fn cancel_worker_jobs(args: &BootstrapArgs, alloc: &Allocation) {
    let Some(jobs) = args
        .run_dir
        .as_deref()
        .and_then(|dir| WorkerJobs::read(dir).ok().flatten())
        .filter(|w| w.head_job == alloc.job_id && w.attempt == alloc.restart_count)
    else {
        return;
    };
    let ids = jobs.live_ids();
    if ids.is_empty() {
        return;
    }
    say(
        &alloc.node,
        format!(
            "the watchdog cancels the cluster's worker jobs: {}",
            ids.join(" ")
        ),
    );
    if let Err(e) = control::cancel(&ids) {
        say(&alloc.node, format!("warning: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heard(lines: &[&str]) -> Heard {
        listen(lines.join("\n").as_bytes())
    }

    #[test]
    fn a_closed_pipe_without_done_means_the_bootstrap_died() {
        assert_eq!(heard(&[]), Heard::default());
        assert_eq!(
            heard(&["pgid 4242"]),
            Heard {
                pgid: Some(4242),
                temp: None,
                done: false
            }
        );
        assert!(heard(&["pgid 4242", "done"]).done);
        assert_eq!(
            heard(&["temp /tmp/rs0-7.1-a1b2c3", "pgid 1"]).temp,
            Some(PathBuf::from("/tmp/rs0-7.1-a1b2c3"))
        );
        assert_eq!(heard(&["pgid x", "noise"]).pgid, None);
        // A stray byte spoils its own line, never what comes after it.
        assert!(listen(&b"pgid 7\n\xff\xfe\ndone\n"[..]).done);
    }
}
