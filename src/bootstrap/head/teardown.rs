//! What an attempt has started on the head, and its teardown: whatever happened, everything
//! this run started is stopped, on every node, before the final state is written; Ray's logs
//! are copied last.

use std::time::Instant;

use super::run_dir_lease::Lease;
use super::srun_workers::WorkerStep;
use super::watchdog::Watchdog;
use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::kept_logs;
use crate::bootstrap::marked::{self, RunMark};
use crate::bootstrap::node::{RAY_STOP_GRACE, say};
use crate::bootstrap::ray_node::TempRoot;
use crate::bootstrap::user_code::command::UserCommand;
use crate::bootstrap::workdir::NodeWorkdir;
use crate::handoff::bootstrap_args::BootstrapArgs;

/// What this attempt has started on the head, recorded as it starts, so that the teardown
/// stops exactly that (a start-up that failed half-way leaves some of it unset).
pub(super) struct Started {
    /// The mark in the environment of every process the run starts.
    pub(super) mark: String,
    /// Stops the run if this process dies before it ends (see [`Watchdog`]).
    pub(super) watchdog: Option<Watchdog>,
    /// This attempt's hold on the run directory, let go of once the final state is written.
    pub(super) lease: Option<Lease>,
    /// The head's Ray temp root (with Ray, once `ray start` was run).
    pub(super) temp: Option<TempRoot>,
    /// The `srun` step of the other nodes (of Ray's workers, or of a per-node run's ranks).
    pub(super) workers: Option<WorkerStep>,
    /// The user's command on the head.
    pub(super) command: Option<UserCommand>,
    /// The head's copy of the run's snapshot (`--snapshot`, in a Ray or `--no-ray` run).
    pub(super) workdir: Option<NodeWorkdir>,
}

/// The part of the teardown still under way once everything is told to stop.
pub(super) struct Stopping {
    /// The thread that stops the worker step (and waits for the workers' logs).
    workers: Option<std::thread::JoinHandle<()>>,
}

impl Started {
    /// An attempt that has started only its watchdog (if it could: without one the run goes
    /// on, with a warning).
    pub(super) fn new(args: &BootstrapArgs, alloc: &Allocation) -> Self {
        let mark = format!("{}-{}", alloc.job_id, std::process::id());
        let watchdog = match Watchdog::start(args, &mark) {
            Ok(w) => Some(w),
            Err(e) => {
                say(
                    &alloc.node,
                    format!(
                        "warning: no watchdog (if this bootstrap is killed, Ray may be left running): {e:#}"
                    ),
                );
                None
            }
        };
        Self {
            mark,
            watchdog,
            lease: None,
            temp: None,
            workers: None,
            command: None,
            workdir: None,
        }
    }

    /// The mark and temp root that find this run's Ray processes on the head.
    pub(super) fn run_mark(&self) -> RunMark {
        RunMark {
            mark: self.mark.clone(),
            temp_root: self.temp.as_ref().map(|t| t.path.clone()),
        }
    }

    /// Tells the watchdog the head's Ray temp root, once `ray start` has made one.
    pub(super) fn tell_watchdog_temp(&mut self) {
        if let (Some(w), Some(temp)) = (&mut self.watchdog, &self.temp) {
            w.temp_root(&temp.path);
        }
    }

    /// Stops everything this run started, on every node: the command, the workers (told to
    /// keep Ray's logs first when `keep_logs`; they stop on a thread of their own, returned),
    /// and the head's Ray. The head's logs are still in its temp root (see
    /// [`Started::keep_logs_and_finish`]).
    pub(super) fn stop_everything(&mut self, node: &str, keep_logs: bool) -> Stopping {
        let t0 = Instant::now();
        super::kept_ports::teardown_begins();
        if let Some(command) = &mut self.command {
            command.stop_leftovers();
        }
        let workers = self.workers.take().map(|mut step| {
            let node = node.to_owned();
            std::thread::spawn(move || step.stop(&node, keep_logs))
        });
        let stopped = marked::stop_all(&self.run_mark(), RAY_STOP_GRACE);
        if stopped > 0 || self.temp.is_some() {
            say(
                node,
                format!(
                    "stopped {stopped} Ray process(es) on the head in {:.1} s",
                    t0.elapsed().as_secs_f64()
                ),
            );
        }
        Stopping { workers }
    }

    /// Copies the head's Ray logs (when `keep_logs`, bounded, under the root `args` name),
    /// removes its temp root, and waits for the workers to have stopped (and copied theirs).
    pub(super) fn keep_logs_and_finish(
        &mut self,
        stopping: Stopping,
        keep_logs: bool,
        args: &BootstrapArgs,
        alloc: &Allocation,
    ) {
        if let Some(temp) = &self.temp {
            if keep_logs {
                let root =
                    kept_logs::root(args.ray_logs_dir.as_deref(), args.state_file.as_deref());
                kept_logs::keep_saying(temp, root.as_deref(), alloc.restart_count, &alloc.node);
            }
            temp.remove();
        }
        if let Some(handle) = stopping.workers {
            let _ = handle.join();
        }
        if let Some(workdir) = self.workdir.take() {
            workdir.leave();
        }
    }
}
