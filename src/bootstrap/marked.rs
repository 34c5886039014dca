//! Finding and stopping exactly the processes this run started.
//!
//! `ray start` detaches its daemons (they are re-parented to PID 1 and escape Slurm's process
//! tracking), and `ray stop` would kill every Ray on the node, other jobs' included. So a
//! process belongs to this run when it carries the run's mark in its environment (every
//! `ray start` gets it, and Ray's processes inherit it), or when it holds a file open below the
//! run's private temp root: Ray's agents rewrite their environment block with `setproctitle`,
//! but all of Ray's processes keep their log files open there.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::handoff::job_env::RUN_MARK;

/// What identifies this run's processes on this node.
#[derive(Debug, Clone)]
pub(crate) struct RunMark {
    /// The value of `RAYSLURM_RUN_MARK` given to every `ray start`.
    pub(crate) mark: String,
    /// Ray's temp root for this run on this node, if Ray was started.
    pub(crate) temp_root: Option<PathBuf>,
}

impl RunMark {
    /// Whether process `pid` belongs to this run.
    fn owns(&self, pid: u32) -> bool {
        has_env(pid, &format!("{RUN_MARK}={}", self.mark))
            || self
                .temp_root
                .as_deref()
                .is_some_and(|root| holds_file_below(pid, root))
    }
}

/// Whether the process has a file (or its working directory) below `root`.
fn holds_file_below(pid: u32, root: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
    fds.filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .chain(cwd)
        .any(|target| target.starts_with(root))
}

/// PIDs of the processes that belong to the run (this process excluded).
pub(crate) fn find(run: &RunMark) -> Vec<Pid> {
    processes(|pid| run.owns(pid))
}

/// PIDs of the processes (this one excluded) whose environment has `var=value`.
pub(crate) fn with_env(var: &str, value: &str) -> Vec<Pid> {
    let needle = format!("{var}={value}");
    processes(|pid| has_env(pid, &needle))
}

fn has_env(pid: u32, needle: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
}

/// PIDs of the node's processes (this one excluded) that `keep` keeps.
fn processes(keep: impl Fn(u32) -> bool) -> Vec<Pid> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me && keep(*pid))
        .map(|pid| Pid::from_raw(pid as i32))
        .collect()
}

/// Whether a marked process with this command name (`/proc/PID/comm`) is alive.
pub(crate) fn alive_named(run: &RunMark, name: &str) -> bool {
    find(run).iter().any(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
            && !is_zombie(*pid)
    })
}

fn is_zombie(pid: Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// Stops the marked processes: SIGTERM, then SIGKILL whatever is left after `grace`.
/// Returns how many were found.
pub(crate) fn stop_all(run: &RunMark, grace: Duration) -> usize {
    let first = find(run);
    for pid in &first {
        let _ = kill(*pid, Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    loop {
        let left: Vec<Pid> = find(run).into_iter().filter(|p| !is_zombie(*p)).collect();
        if left.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            for pid in &left {
                let _ = kill(*pid, Signal::SIGKILL);
            }
            // Processes started since the first sweep get the same treatment.
            let settle = Instant::now() + Duration::from_secs(2);
            while Instant::now() < settle && find(run).iter().any(|p| !is_zombie(*p)) {
                for pid in find(run) {
                    let _ = kill(pid, Signal::SIGKILL);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    first.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn stops_marked_processes_and_spares_others() {
        let mark = format!("test-{}", std::process::id());
        let run = RunMark {
            mark: mark.clone(),
            temp_root: None,
        };
        let mut marked = Command::new("sleep")
            .arg("30")
            .env(RUN_MARK, &mark)
            .spawn()
            .unwrap();
        // A child that ignores SIGTERM must still be stopped, by SIGKILL.
        let mut stubborn = Command::new("bash")
            .args(["-c", "trap '' TERM; sleep 30 & wait"])
            .env(RUN_MARK, &mark)
            .spawn()
            .unwrap();
        let mut other = Command::new("sleep")
            .arg("30")
            .env(RUN_MARK, "someone-else")
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(find(&run).len() >= 3, "bash, its sleep and the plain sleep");
        assert!(alive_named(&run, "sleep"));
        stop_all(&run, Duration::from_millis(300));
        assert!(marked.wait().is_ok());
        assert!(stubborn.wait().is_ok());
        assert!(find(&run).iter().all(|p| is_zombie(*p)));
        assert_eq!(
            other.try_wait().unwrap(),
            None,
            "another run's process survives"
        );
        other.kill().unwrap();
        other.wait().unwrap();
    }

    /// Ray's agents overwrite their environment (setproctitle); their open log files give
    /// them away.
    #[test]
    fn a_process_with_a_file_below_the_temp_root_belongs_to_the_run() {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join("agent.out");
        let mut agent = Command::new("bash")
            .args(["-c", "exec sleep 30"])
            .stdout(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let run = RunMark {
            mark: "no-process-has-this".into(),
            temp_root: Some(root.path().to_owned()),
        };
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(find(&run), vec![Pid::from_raw(agent.id() as i32)]);
        stop_all(&run, Duration::from_millis(300));
        assert!(agent.wait().is_ok());
        let elsewhere = RunMark {
            mark: "x".into(),
            temp_root: Some(PathBuf::from("/nonexistent/root")),
        };
        assert!(find(&elsewhere).is_empty());
    }
}
