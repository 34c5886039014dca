//! The one `srun` step that runs the bootstrap on every worker node, and what the workers
//! report through it.

use std::io::{BufRead, BufReader, Write};
use std::net::IpAddr;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use super::heartbeat::{self, Liveness};
use super::kept_logs::{self, KEEP_LINE};
use super::{Allocation, READY_PREFIX, TICK, say};
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::cluster::joined_words;
use crate::sys::process::Cmd;

/// A node that has joined.
#[derive(Debug, Clone)]
pub(super) struct Joined {
    pub(super) node: String,
    pub(super) ip: IpAddr,
}

/// The `srun` step that runs the bootstrap on every other node.
///
/// Workers are stopped by closing the step's stdin, which srun (`--input=all`) passes to every
/// worker as end-of-file: a signal to srun would make it kill the tasks outright, before they
/// stop their Ray. It also stops the workers if this process dies.
pub(super) struct WorkerStep {
    pub(super) child: Child,
    stdin: Option<ChildStdin>,
    pub(super) events: Receiver<(u32, Joined)>,
    /// Every worker node's last heartbeat.
    pub(super) liveness: Liveness,
    pub(super) cmd: Cmd,
}

impl WorkerStep {
    pub(super) fn spawn(
        args: &BootstrapArgs,
        alloc: &Allocation,
        head_address: &str,
        mark: &str,
    ) -> anyhow::Result<Self> {
        let exe = std::env::current_exe()?;
        let others = alloc.others();
        let n = others.len().to_string();
        let mut cmd = Cmd::new("srun").args([
            "--overlap".to_owned(),
            format!("--nodes={n}"),
            format!("--ntasks={n}"),
            "--ntasks-per-node=1".to_owned(),
            format!("--nodelist={}", others.join(",")),
            "--cpu-bind=none".to_owned(),
            "--input=all".to_owned(),
            "--job-name=rayslurm-workers".to_owned(),
        ]);
        if args.cluster.min_nodes.is_none() {
            // A worker that fails ends the step at once, and so the job.
            cmd = cmd.arg("--kill-on-bad-exit=1");
        }
        let worker = BootstrapArgs {
            command: None,
            worker: true,
            watchdog: false,
            head_address: Some(head_address.to_owned()),
            run_mark: Some(mark.to_owned()),
            requested_gpus: args.requested_gpus,
            state_file: None,
            run_dir: args.run_dir.clone(),
            ray_logs_dir: kept_logs::root(args.ray_logs_dir.as_deref(), args.state_file.as_deref()),
            cluster: args.cluster.for_workers(),
        };
        cmd = cmd
            .arg(exe)
            .arg("bootstrap")
            .args(joined_words(worker.to_flags()));
        let mut child = cmd
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| cmd.spawn_error(e))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, events) = mpsc::channel();
        let liveness = Liveness::new(&others, Instant::now());
        let seen = liveness.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some((node, gone)) = heartbeat::parse(&line) {
                    if gone {
                        seen.gone(node);
                    } else {
                        seen.seen(node, Instant::now());
                    }
                } else if let Some(event) = parse_ready(&line) {
                    seen.seen(&event.1.node, Instant::now());
                    // The head may have stopped listening; heartbeats still count.
                    let _ = tx.send(event);
                } else {
                    println!("{line}");
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            events,
            liveness,
            cmd,
        })
    }

    /// The worker node silent for longer than the heartbeat allows, with its silence.
    pub(super) fn silent_node(&self) -> Option<(String, Duration)> {
        self.liveness
            .silent(Instant::now(), heartbeat::SILENCE_LIMIT)
    }

    /// Tells every worker to stop (and, with `keep_logs`, to keep Ray's logs first) and waits
    /// for the step to end: 10 s, or 3 s when a node is known dead (srun then waits on it
    /// until Slurm declares it down, minutes later).
    pub(super) fn stop(&mut self, node: &str, keep_logs: bool) {
        if keep_logs && let Some(stdin) = &mut self.stdin {
            let _ = writeln!(stdin, "{KEEP_LINE}").and_then(|()| stdin.flush());
        }
        // End-of-file on every worker's stdin: each stops its own Ray and exits.
        drop(self.stdin.take());
        let patience = if self.silent_node().is_some() { 3 } else { 10 };
        let deadline = Instant::now() + Duration::from_secs(patience);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(TICK);
        }
        say(
            node,
            format!(
                "the worker step did not end within {patience} s of being told to stop; killing it"
            ),
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `RAYSLURM-READY <rank> <node> <ip>`.
fn parse_ready(line: &str) -> Option<(u32, Joined)> {
    let mut parts = line.split_whitespace();
    if parts.next()? != READY_PREFIX {
        return None;
    }
    let rank = parts.next()?.parse().ok()?;
    let node = parts.next()?.to_owned();
    let ip = parts.next()?.parse().ok()?;
    Some((rank, Joined { node, ip }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_lines() {
        let (rank, j) = parse_ready("RAYSLURM-READY 2 node3 fd00::13").unwrap();
        assert_eq!(
            (rank, j.node.as_str(), j.ip.to_string().as_str()),
            (2, "node3", "fd00::13")
        );
        assert!(parse_ready("RAYSLURM-READY x node3 1.2.3.4").is_none());
        assert!(parse_ready("hello").is_none());
    }
}
