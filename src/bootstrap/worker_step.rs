//! The one `srun` step that runs the bootstrap on every worker node, and what the workers
//! report through it.

use std::io::{BufRead, BufReader, Write};
use std::net::IpAddr;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use super::kept_logs::{self, KEEP_LINE};
use super::{Allocation, READY_PREFIX, TICK, say};
use crate::cli::BootstrapArgs;
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
        cmd = cmd
            .arg(exe)
            .arg("bootstrap")
            .arg("--worker")
            .arg(format!("--head-address={head_address}"))
            .arg(format!("--run-mark={mark}"))
            .arg(format!("--requested-gpus={}", args.requested_gpus))
            .args(cluster_flags(args));
        if let Some(root) =
            kept_logs::root(args.ray_logs_dir.as_deref(), args.state_file.as_deref())
        {
            cmd = cmd.arg(format!("--ray-logs-dir={}", root.display()));
        }
        let mut child = cmd
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| cmd.spawn_error(e))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                match parse_ready(&line) {
                    Some(event) => {
                        if tx.send(event).is_err() {
                            break;
                        }
                    }
                    None => println!("{line}"),
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            events,
            cmd,
        })
    }

    /// Tells every worker to stop (and, with `keep_logs`, to keep Ray's logs first) and waits
    /// for the step to end.
    pub(super) fn stop(&mut self, node: &str, keep_logs: bool) {
        if keep_logs && let Some(stdin) = &mut self.stdin {
            let _ = writeln!(stdin, "{KEEP_LINE}").and_then(|()| stdin.flush());
        }
        // End-of-file on every worker's stdin: each stops its own Ray and exits.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(TICK);
        }
        say(
            node,
            "the worker step did not end within 10 s of being told to stop; killing it",
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The flags a worker needs from the head's own arguments.
fn cluster_flags(args: &BootstrapArgs) -> Vec<String> {
    let c = &args.cluster;
    let mut flags = Vec::new();
    if c.no_ray {
        flags.push("--no-ray".to_owned());
    }
    if let Some(i) = &c.interface {
        flags.push(format!("--interface={i}"));
    }
    if let Some(f) = c.ip_family {
        flags.push(format!("--ip-family={}", f.as_arg()));
    }
    if let Some(b) = c.object_store_memory {
        flags.push(format!("--object-store-memory={b}"));
    }
    if let Some(r) = &c.ray_args {
        flags.push(format!("--ray-args={r}"));
    }
    if let Some(p) = c.port_base {
        flags.push(format!("--port-base={p}"));
    }
    flags
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

    /// Regression: `--ray-args --include-dashboard=false` reached the workers, whose
    /// `ray start` refuses head-only flags, and failed every job.
    #[test]
    fn head_only_ray_args_never_reach_the_workers() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "rayslurm",
            "bootstrap",
            "--ray-args",
            "--object-manager-port=0",
            "--ray-head-args",
            "--include-dashboard=false",
            "--command",
            "true",
        ])
        .unwrap();
        let crate::cli::Command::Bootstrap(args) = cli.command else {
            unreachable!()
        };
        let flags = cluster_flags(&args).join(" ");
        assert!(
            flags.contains("--ray-args=--object-manager-port=0"),
            "{flags}"
        );
        assert!(!flags.contains("dashboard"), "{flags}");
    }
}
