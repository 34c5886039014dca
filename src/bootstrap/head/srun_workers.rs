//! The one `srun` step that runs the bootstrap on every worker node, and what the workers
//! report through it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::net::IpAddr;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::byte_lines;
use crate::bootstrap::heartbeat::{self, Liveness};
use crate::bootstrap::kept_logs::{self, KEEP_LINE};
use crate::bootstrap::node::{TICK, say};
use crate::bootstrap::protocol::{Order, READY_PREFIX, Report};
use crate::bootstrap::user_code::setup::setup_failed;
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::slurm::env as slurm_env;
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
    events: Receiver<StepEvent>,
    /// Events taken early (by [`WorkerStep::setup_trouble`]), handed out first.
    held: RefCell<VecDeque<StepEvent>>,
    /// Every worker node's last heartbeat.
    pub(super) liveness: Liveness,
    pub(super) cmd: Cmd,
}

/// What the reading thread hears from the nodes (heartbeats aside).
#[derive(Debug)]
pub(super) enum StepEvent {
    /// A Ray worker node joined, with its rank.
    Joined(u32, Joined),
    /// A node reported something else (its IP, its setup's end, a rank's end).
    Report(Report),
}

impl WorkerStep {
    /// The step of Ray workers (or `--no-ray` nodes): one task on every node but the head.
    pub(super) fn spawn(
        args: &BootstrapArgs,
        alloc: &Allocation,
        head_address: &str,
        master_port: u16,
        mark: &str,
    ) -> anyhow::Result<Self> {
        let others = alloc.others();
        let n = others.len().to_string();
        let mut srun = vec![
            format!("--nodes={n}"),
            format!("--ntasks={n}"),
            "--ntasks-per-node=1".to_owned(),
            format!("--nodelist={}", others.join(",")),
            "--job-name=rayslurm-workers".to_owned(),
        ];
        if args.cluster.nodes.min_nodes.is_none() {
            // A worker that fails ends the step at once, and so the job.
            srun.push("--kill-on-bad-exit=1".to_owned());
        }
        let worker = BootstrapArgs {
            head_address: Some(head_address.to_owned()),
            master_port: Some(master_port),
            cluster: args.cluster.for_workers(),
            ..Self::worker_args(args, mark)
        };
        Self::start(srun, &worker, &others)
    }

    /// The step of a per-node run: `tasks_per_node` tasks on every node, the head's included,
    /// each running the command with its own rank.
    pub(super) fn spawn_tasks(
        args: &BootstrapArgs,
        alloc: &Allocation,
        mark: &str,
        tasks_per_node: u32,
    ) -> anyhow::Result<Self> {
        let n = alloc.nodes.len();
        let srun = vec![
            format!("--nodes={n}"),
            format!("--ntasks={}", n as u32 * tasks_per_node),
            format!("--ntasks-per-node={tasks_per_node}"),
            format!("--nodelist={}", alloc.nodes.join(",")),
            "--job-name=rayslurm-ranks".to_owned(),
            // A task reports its rank's end and exits 0; one that fails itself is killed with
            // the rest, a backstop behind the head's own stop.
            "--kill-on-bad-exit=1".to_owned(),
        ];
        let task = BootstrapArgs {
            command: args.command.clone(),
            ..Self::worker_args(args, mark)
        };
        Self::start(srun, &task, &alloc.nodes)
    }

    /// What every node's bootstrap is told, beyond the step's own.
    fn worker_args(args: &BootstrapArgs, mark: &str) -> BootstrapArgs {
        BootstrapArgs {
            command: None,
            worker: true,
            watchdog: false,
            head_address: None,
            master_port: None,
            run_mark: Some(mark.to_owned()),
            requested_gpus: args.requested_gpus,
            state_file: None,
            run_dir: args.run_dir.clone(),
            snapshot: args.snapshot.clone(),
            file_mounts_only: args.file_mounts_only,
            // Named already: the head's are its task's own.
            array_task: false,
            ray_logs_dir: kept_logs::root(args.ray_logs_dir.as_deref(), args.state_file.as_deref()),
            trust_unverified_owner: args.trust_unverified_owner.clone(),
            pyxis_container: args.pyxis_container.clone(),
            cluster: args.cluster.clone(),
        }
    }

    /// Starts `srun` with `srun_args` and the bootstrap with `worker`, watching the heartbeats
    /// of `nodes`.
    fn start(
        srun_args: Vec<String>,
        worker: &BootstrapArgs,
        nodes: &[String],
    ) -> anyhow::Result<Self> {
        let exe = std::env::current_exe()?;
        let cmd = Cmd::new("srun")
            .arg("--overlap")
            .args(srun_args)
            .args(["--cpu-bind=none", "--input=all"])
            .arg(exe)
            .arg("bootstrap")
            .args(worker.to_words());
        let mut command = cmd.command();
        // Each node's GPUs are its own: not the batch node's, which the step would inherit.
        for var in slurm_env::NODE_GPU_VARS {
            command.env_remove(var);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| cmd.spawn_error(e))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, events) = mpsc::channel();
        let liveness = Liveness::new(nodes, Instant::now());
        let seen = liveness.clone();
        std::thread::spawn(move || {
            byte_lines::for_each(BufReader::new(stdout), |bytes| {
                let Some(line) = byte_lines::protocol(bytes) else {
                    // Job output, any bytes at all: passed on as it came.
                    let _ = byte_lines::write(&mut std::io::stdout().lock(), b"", bytes);
                    return true;
                };
                // The head may have stopped listening; heartbeats still count.
                if let Some((node, gone)) = heartbeat::parse(line) {
                    if gone {
                        seen.gone(node);
                    } else {
                        seen.seen(node, Instant::now());
                    }
                } else if let Some((rank, joined)) = parse_ready(line) {
                    seen.seen(&joined.node, Instant::now());
                    let _ = tx.send(StepEvent::Joined(rank, joined));
                } else if let Some(report) = Report::parse(line) {
                    let _ = tx.send(StepEvent::Report(report));
                } else {
                    let _ = byte_lines::write(&mut std::io::stdout().lock(), b"", bytes);
                }
                true
            });
        });
        Ok(Self {
            child,
            stdin,
            events,
            held: RefCell::default(),
            liveness,
            cmd,
        })
    }

    /// The nodes' next event, if one has come.
    pub(super) fn next_event(&self) -> Option<StepEvent> {
        self.held
            .borrow_mut()
            .pop_front()
            .or_else(|| self.events.try_recv().ok())
    }

    /// Why the run cannot go on while the head runs its own setup: a node's setup failed, or a
    /// node went silent. Events seen here stay for [`WorkerStep::next_event`].
    pub(super) fn setup_trouble(&self) -> Option<String> {
        let mut held = self.held.borrow_mut();
        held.extend(self.events.try_iter());
        let failed = held.iter().find_map(|e| match e {
            StepEvent::Report(Report::Setup { node, code }) if *code != 0 => {
                Some(setup_failed(node, *code))
            }
            _ => None,
        });
        failed.or_else(|| {
            self.silent_node()
                .map(|(node, quiet)| heartbeat::silence_message(&node, quiet))
        })
    }

    /// The nodes whose setup has succeeded so far, while the head runs its own. Events seen
    /// here stay for [`WorkerStep::next_event`].
    pub(super) fn setups_ended(&self) -> Vec<String> {
        let mut held = self.held.borrow_mut();
        held.extend(self.events.try_iter());
        held.iter()
            .filter_map(|e| match e {
                StepEvent::Report(Report::Setup { node, code: 0 }) => Some(node.clone()),
                _ => None,
            })
            .collect()
    }

    /// Tells every node `order`; false if the nodes can no longer hear it.
    pub(super) fn tell(&mut self, order: &Order) -> bool {
        let Some(stdin) = &mut self.stdin else {
            return false;
        };
        writeln!(stdin, "{}", order.line())
            .and_then(|()| stdin.flush())
            .is_ok()
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
