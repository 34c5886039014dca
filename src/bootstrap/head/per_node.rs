//! The head of a per-node run (`--per-node`): no Ray; one `srun` step runs the command on every
//! node (`--tasks-per-node` ranks each, the head's node included). The head gathers every
//! node's IP and hands the list to all, waits for every node's setup, says run, then watches
//! the ranks: the first to fail stops the others (SIGTERM, SIGKILL after a short grace) and
//! gives the run its exit code; a node that goes silent fails the run as in Ray runs.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::outcome::Outcome;
use super::setups::Setups;
use super::srun_workers::{StepEvent, WorkerStep};
use super::teardown::Started;
use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::node::{TICK, say};
use crate::bootstrap::ports;
use crate::bootstrap::protocol::{Order, Report};
use crate::bootstrap::signals::received;
use crate::bootstrap::user_code::setup::setup_failed;
use crate::bootstrap::{heartbeat, signals};
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::final_state::Ending;
use crate::slurm::env as slurm_env;
use crate::sys::process::describe_status;

/// How long the other ranks have after SIGTERM when one rank failed (or a node died).
const FAIL_FAST_GRACE: u32 = 5;
/// How long after its grace a stopped rank's report may take to arrive.
const REPORT_MARGIN: Duration = Duration::from_secs(5);

/// The first rank to fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Failure {
    rank: u32,
    node: String,
    code: i32,
}

/// What the ranks' exit codes make of the run: the first failing rank's own code, else 0.
pub(super) fn ranks_outcome(
    first_failure: Option<&Failure>,
    reported: usize,
    total: usize,
) -> Outcome {
    match first_failure {
        Some(f) => Outcome {
            code: f.code,
            ending: Ending::Failed,
            message: Some(format!(
                "rank {} on {} exited with code {} (the first to fail); the other ranks were stopped",
                f.rank, f.node, f.code
            )),
        },
        None if reported < total => Outcome {
            code: 1,
            ending: Ending::Failed,
            message: Some(format!(
                "only {reported} of {total} ranks reported an end: the step of ranks ended early (its own message is above)"
            )),
        },
        None => Outcome::of_command(0, None, None),
    }
}

/// Runs the command on every node and says how the run ended.
pub(super) fn run(
    args: &BootstrapArgs,
    alloc: &Allocation,
    started: &mut Started,
    ip: IpAddr,
    t0: Instant,
) -> Outcome {
    let tasks_per_node = std::env::var(slurm_env::SLURM_NTASKS_PER_NODE)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|t| *t > 0)
        .unwrap_or(1);
    // Held from its choice until the ranks start, so that nothing else takes it meanwhile;
    // then left to rank 0's framework to bind, and kept from every other run's choice until
    // the run ends.
    let master = match ports::choose_master(&alloc.node, args.cluster.nodes.port_base) {
        Ok(held) => held,
        Err(e) => return Outcome::startup_failed(e.to_string()),
    };
    let master_port = master.port;
    let step = match WorkerStep::spawn_tasks(args, alloc, &started.mark, tasks_per_node) {
        Ok(step) => started.workers.insert(step),
        Err(e) => {
            return Outcome::startup_failed(format!("cannot start the step of ranks: {e:#}"));
        }
    };
    let mut ranks = PerNode { args, alloc, step };
    say(
        &alloc.node,
        format!(
            "starting the command on {} node(s), {tasks_per_node} rank(s) each (--per-node); rendezvous at {ip} port {master_port}",
            alloc.nodes.len()
        ),
    );
    if let Err(outcome) = ranks.gather_and_set_up(master_port, t0) {
        ranks.step.tell(&Order::Stop {
            grace: FAIL_FAST_GRACE,
            signal: Signal::SIGTERM,
        });
        return outcome;
    }
    say(
        &alloc.node,
        format!(
            "every node ready in {:.1} s; running the command",
            t0.elapsed().as_secs_f64()
        ),
    );
    let _kept = master.leave_to_its_user();
    ranks.step.tell(&Order::Run);
    ranks.watch_ranks(alloc.nodes.len() * tasks_per_node as usize)
}

/// The head of a per-node run, once its step of ranks has started.
struct PerNode<'a> {
    args: &'a BootstrapArgs,
    alloc: &'a Allocation,
    /// The step of ranks (kept in what the attempt started, for the teardown).
    step: &'a mut WorkerStep,
}

/// What the head has seen of the ranks while they run.
#[derive(Default)]
struct RanksWatch {
    exits: BTreeMap<u32, i32>,
    first_failure: Option<Failure>,
    stopped_by: Option<Signal>,
    node_failure: Option<String>,
    /// When the ranks still running are given up on: their grace and a margin for their
    /// reports, the earliest that any stop asked for (a dead node's ranks never report).
    give_up_at: Option<Instant>,
}

impl RanksWatch {
    fn give_up_after(&mut self, grace: Duration) {
        let at = Instant::now() + grace + REPORT_MARGIN;
        self.give_up_at = Some(self.give_up_at.map_or(at, |g| g.min(at)));
    }

    /// Whether nothing else is to be waited for: every rank has reported, or the step is
    /// gone, or the ranks were given up on.
    fn over(&self, total: usize, step_ended: bool) -> bool {
        let overdue = self.give_up_at.is_some_and(|g| Instant::now() > g);
        self.exits.len() >= total || step_ended || overdue
    }

    /// How the run ended, from what was seen.
    fn outcome(self, total: usize) -> Outcome {
        if let Some(why) = self.node_failure {
            let code = self.first_failure.map_or(1, |f| f.code);
            return Outcome::of_command(code, Some(why), None);
        }
        if let Some(signal) = self.stopped_by {
            let code = self.exits.values().copied().find(|c| *c != 0).unwrap_or(0);
            return Outcome::of_command(code, None, Some(signal));
        }
        ranks_outcome(self.first_failure.as_ref(), self.exits.len(), total)
    }
}

impl PerNode<'_> {
    /// Gathers every node's IP, hands the list to all, and waits for every node's setup.
    fn gather_and_set_up(&mut self, master_port: u16, t0: Instant) -> Result<(), Outcome> {
        let nodes = self.alloc.nodes.clone();
        let c = &self.args.cluster;
        let timeout = Duration::from_secs(u64::from(c.nodes.ready_timeout));
        let mut setups = Setups::new(&nodes, c.program.setup.is_some(), c.program.setup_timeout);
        let mut ips: HashMap<String, IpAddr> = HashMap::new();
        let mut told = false;
        loop {
            if let Some(signal) = signals::take().into_iter().find(|s| signals::stops(*s)) {
                return Err(Outcome::stopped_while_starting(signal));
            }
            self.take_ips_and_setups(&mut ips, &mut setups)?;
            if let Ok(Some(status)) = self.step.child.try_wait() {
                return Err(Outcome::startup_failed(format!(
                    "the step of ranks (`{}`) ended with {} before the command started; a node's own error is above",
                    self.step.cmd,
                    describe_status(status)
                )));
            }
            if !told && ips.len() == nodes.len() {
                let ips = nodes.iter().map(|n| ips[n]).collect();
                self.step.tell(&Order::Go { master_port, ips });
                told = true;
                // The setups start now; `--ready-timeout` counted the nodes' start alone.
                setups.restart_clock();
            }
            if told && setups.all_done() {
                return Ok(());
            }
            if told {
                if let Some(why) = setups.overdue(Instant::now()) {
                    return Err(Outcome::startup_failed(why));
                }
            } else if t0.elapsed() > timeout {
                let missing: Vec<&str> = nodes
                    .iter()
                    .map(String::as_str)
                    .filter(|n| !ips.contains_key(*n))
                    .collect();
                return Err(Outcome::startup_failed(format!(
                    "the nodes were not ready after --ready-timeout {} s (not heard from: {})",
                    timeout.as_secs(),
                    if missing.is_empty() {
                        "none".to_owned()
                    } else {
                        missing.join(", ")
                    },
                )));
            }
            std::thread::sleep(TICK);
        }
    }

    /// Takes the nodes' IPs and setup reports so far. A failed setup or a silent node ends
    /// the start.
    fn take_ips_and_setups(
        &mut self,
        ips: &mut HashMap<String, IpAddr>,
        setups: &mut Setups,
    ) -> Result<(), Outcome> {
        while let Some(event) = self.step.next_event() {
            match event {
                StepEvent::Report(Report::Ip { node, ip }) => {
                    ips.insert(node, ip);
                }
                StepEvent::Report(Report::Setup { node, code }) if code != 0 => {
                    return Err(Outcome::startup_failed(setup_failed(&node, code)));
                }
                StepEvent::Report(Report::Setup { node, .. }) => setups.done(&node),
                _ => {}
            }
        }
        if let Some((node, quiet)) = self.step.silent_node() {
            return Err(Outcome::startup_failed(heartbeat::silence_message(
                &node, quiet,
            )));
        }
        Ok(())
    }

    /// Watches the `total` ranks until each has reported its end (or the step is gone).
    fn watch_ranks(&mut self, total: usize) -> Outcome {
        let mut watch = RanksWatch::default();
        loop {
            self.pass_signals(&mut watch);
            let mut fail_fast = self.take_exits(&mut watch);
            if watch.node_failure.is_none()
                && let Some((silent, quiet)) = self.step.silent_node()
            {
                let why = heartbeat::silence_message(&silent, quiet);
                say(
                    &self.alloc.node,
                    format!("error: {why}; stopping every rank"),
                );
                watch.node_failure = Some(why);
                fail_fast = true;
            }
            if fail_fast {
                self.step.tell(&Order::Stop {
                    grace: FAIL_FAST_GRACE,
                    signal: Signal::SIGTERM,
                });
                watch.give_up_after(Duration::from_secs(u64::from(FAIL_FAST_GRACE)));
            }
            let step_ended = matches!(self.step.child.try_wait(), Ok(Some(_)));
            if watch.over(total, step_ended) {
                return watch.outcome(total);
            }
            std::thread::sleep(TICK);
        }
    }

    /// Passes the signals the job got on to every rank; a stop gives them their grace.
    fn pass_signals(&mut self, watch: &mut RanksWatch) {
        let node = &self.alloc.node;
        let grace = self.args.cluster.nodes.command_grace();
        for signal in signals::take() {
            if !signals::stops_run(self.args.run_dir.as_deref(), signal) {
                say(
                    node,
                    format!("{} received; passing it to every rank", signal.as_str()),
                );
                self.step.tell(&Order::Signal { signal });
                continue;
            }
            if watch.stopped_by.is_some() {
                continue;
            }
            // The time warning: the ranks get the user's --signal and the grace.
            let to_ranks = signals::for_command(signal, self.args.cluster.long_run.signal);
            say(
                node,
                format!(
                    "{}; sending {} to every rank",
                    received(signal),
                    to_ranks.as_str()
                ),
            );
            watch.stopped_by = Some(signal);
            let secs = u32::try_from(grace.as_secs()).unwrap_or(u32::MAX);
            self.step.tell(&Order::Stop {
                grace: secs,
                signal: to_ranks,
            });
            watch.give_up_after(grace);
        }
    }

    /// Takes the ranks' exit reports; whether a rank is the first to fail (the others are
    /// then to be stopped).
    fn take_exits(&mut self, watch: &mut RanksWatch) -> bool {
        let mut fail_fast = false;
        while let Some(event) = self.step.next_event() {
            let StepEvent::Report(Report::Exit { rank, node, code }) = event else {
                continue;
            };
            watch.exits.insert(rank, code);
            if code != 0
                && watch.first_failure.is_none()
                && watch.stopped_by.is_none()
                && watch.node_failure.is_none()
            {
                say(
                    &self.alloc.node,
                    format!(
                        "rank {rank} on {node} exited with code {code}, the first to fail; stopping the other ranks"
                    ),
                );
                watch.first_failure = Some(Failure { rank, node, code });
                fail_fast = true;
            }
        }
        fail_fast
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failing_ranks_own_code_is_the_runs() {
        let f = Failure {
            rank: 2,
            node: "n3".into(),
            code: 7,
        };
        let o = ranks_outcome(Some(&f), 3, 3);
        assert_eq!((o.code, o.ending), (7, Ending::Failed));
        assert!(
            o.message
                .unwrap()
                .starts_with("rank 2 on n3 exited with code 7")
        );
        let o = ranks_outcome(None, 3, 3);
        assert_eq!((o.code, o.ending), (0, Ending::Completed));
        let o = ranks_outcome(None, 2, 3);
        assert_eq!((o.code, o.ending), (1, Ending::Failed));
    }
}
