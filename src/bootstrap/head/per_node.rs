//! The head of a per-node run (`--per-node`): no Ray; one `srun` step runs the command on every
//! node (`--tasks-per-node` ranks each, the head's node included). The head gathers every
//! node's IP and hands the list to all, waits for every node's setup, says run, then watches
//! the ranks: the first to fail stops the others (SIGTERM, SIGKILL after a short grace) and
//! gives the run its exit code; a node that goes silent fails the run as in Ray runs.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::Head;
use super::outcome::Outcome;
use super::srun_workers::{StepEvent, WorkerStep};
use crate::bootstrap::node::{TICK, say};
use crate::bootstrap::ports;
use crate::bootstrap::protocol::{Order, Report};
use crate::bootstrap::rank::setup::setup_failed;
use crate::bootstrap::signals::received;
use crate::bootstrap::{heartbeat, signals};
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

impl Head<'_> {
    /// Runs the command on every node and says how the run ended.
    pub(super) fn run_per_node(&mut self, ip: IpAddr, t0: Instant) -> Outcome {
        let alloc = self.alloc;
        let tasks_per_node = std::env::var(slurm_env::SLURM_NTASKS_PER_NODE)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|t| *t > 0)
            .unwrap_or(1);
        let c = &self.args.cluster;
        // Held until the run ends, so that another run on this node cannot pick the block.
        let (master_port, _held) =
            match ports::choose_held(&alloc.node, alloc.job_number(), c.port_base) {
                Ok((p, held)) => (p.master(), held),
                Err(e) => return Outcome::startup_failed(e.to_string()),
            };
        match WorkerStep::spawn_tasks(self.args, alloc, &self.mark, tasks_per_node) {
            Ok(step) => self.workers = Some(step),
            Err(e) => {
                return Outcome::startup_failed(format!("cannot start the step of ranks: {e:#}"));
            }
        }
        say(
            self.node(),
            format!(
                "starting the command on {} node(s), {tasks_per_node} rank(s) each (--per-node); rendezvous at {ip} port {master_port}",
                alloc.nodes.len()
            ),
        );
        if let Err(outcome) = self.gather_and_set_up(master_port, t0) {
            self.tell(&Order::Stop {
                grace: FAIL_FAST_GRACE,
                signal: Signal::SIGTERM,
            });
            return outcome;
        }
        say(
            self.node(),
            format!(
                "every node ready in {:.1} s; running the command",
                t0.elapsed().as_secs_f64()
            ),
        );
        self.tell(&Order::Run);
        self.watch_ranks(alloc.nodes.len() * tasks_per_node as usize)
    }

    fn tell(&mut self, order: &Order) {
        if let Some(step) = &mut self.workers {
            step.tell(order);
        }
    }

    /// Gathers every node's IP, hands the list to all, and waits for every node's setup.
    fn gather_and_set_up(&mut self, master_port: u16, t0: Instant) -> Result<(), Outcome> {
        let nodes = self.alloc.nodes.clone();
        let timeout = Duration::from_secs(u64::from(self.args.cluster.ready_timeout));
        let setup = self.args.cluster.setup.is_some();
        let mut ips: HashMap<String, IpAddr> = HashMap::new();
        let mut set_up = 0;
        let mut told = false;
        loop {
            if let Some(signal) = signals::take().into_iter().find(|s| signals::stops(*s)) {
                return Err(Outcome::stopped_while_starting(signal));
            }
            let step = self.workers.as_mut().expect("the step of ranks");
            while let Some(event) = step.next_event() {
                match event {
                    StepEvent::Report(Report::Ip { node, ip }) => {
                        ips.insert(node, ip);
                    }
                    StepEvent::Report(Report::Setup { node, code }) if code != 0 => {
                        return Err(Outcome::startup_failed(setup_failed(&node, code)));
                    }
                    StepEvent::Report(Report::Setup { .. }) => set_up += 1,
                    _ => {}
                }
            }
            if let Some((node, quiet)) = step.silent_node() {
                return Err(Outcome::startup_failed(heartbeat::silence_message(
                    &node, quiet,
                )));
            }
            if let Ok(Some(status)) = step.child.try_wait() {
                return Err(Outcome::startup_failed(format!(
                    "the step of ranks (`{}`) ended with {} before the command started; a node's own error is above",
                    step.cmd,
                    describe_status(status)
                )));
            }
            if !told && ips.len() == nodes.len() {
                let ips = nodes.iter().map(|n| ips[n]).collect();
                step.tell(&Order::Go { master_port, ips });
                told = true;
            }
            if told && (!setup || set_up == nodes.len()) {
                return Ok(());
            }
            if t0.elapsed() > timeout {
                let missing: Vec<&str> = nodes
                    .iter()
                    .map(String::as_str)
                    .filter(|n| !ips.contains_key(*n))
                    .collect();
                return Err(Outcome::startup_failed(format!(
                    "the nodes were not ready after --ready-timeout {} s (not heard from: {}; setups done: {set_up} of {})",
                    timeout.as_secs(),
                    if missing.is_empty() {
                        "none".to_owned()
                    } else {
                        missing.join(", ")
                    },
                    nodes.len()
                )));
            }
            std::thread::sleep(TICK);
        }
    }

    /// Watches the `total` ranks until each has reported its end (or the step is gone).
    fn watch_ranks(&mut self, total: usize) -> Outcome {
        let node = self.alloc.node.clone();
        let grace = self.args.cluster.command_grace();
        let mut exits: BTreeMap<u32, i32> = BTreeMap::new();
        let mut first_failure: Option<Failure> = None;
        let mut stopped_by = None;
        let mut node_failure = None;
        // When the ranks still running are given up on: their grace and a margin for their
        // reports, the earliest that any stop asked for (a dead node's ranks never report).
        let mut give_up_at: Option<Instant> = None;
        let give_up_after = |give_up_at: &mut Option<Instant>, grace: Duration| {
            let at = Instant::now() + grace + REPORT_MARGIN;
            *give_up_at = Some(give_up_at.map_or(at, |g| g.min(at)));
        };
        loop {
            for signal in signals::take() {
                if signals::stops_run(self.args.run_dir.as_deref(), signal) {
                    if stopped_by.is_some() {
                        continue;
                    }
                    // The time warning: the ranks get the user's --signal and the grace.
                    let to_ranks = signals::for_command(signal, self.args.cluster.signal);
                    say(
                        &node,
                        format!(
                            "{}; sending {} to every rank",
                            received(signal),
                            to_ranks.as_str()
                        ),
                    );
                    stopped_by = Some(signal);
                    let secs = u32::try_from(grace.as_secs()).unwrap_or(u32::MAX);
                    self.tell(&Order::Stop {
                        grace: secs,
                        signal: to_ranks,
                    });
                    give_up_after(&mut give_up_at, grace);
                } else {
                    say(
                        &node,
                        format!("{} received; passing it to every rank", signal.as_str()),
                    );
                    self.tell(&Order::Signal { signal });
                }
            }
            let step = self.workers.as_mut().expect("the step of ranks");
            let mut fail_fast = false;
            while let Some(event) = step.next_event() {
                if let StepEvent::Report(Report::Exit {
                    rank,
                    node: n,
                    code,
                }) = event
                {
                    exits.insert(rank, code);
                    if code != 0
                        && first_failure.is_none()
                        && stopped_by.is_none()
                        && node_failure.is_none()
                    {
                        say(
                            &node,
                            format!(
                                "rank {rank} on {n} exited with code {code}, the first to fail; stopping the other ranks"
                            ),
                        );
                        first_failure = Some(Failure {
                            rank,
                            node: n,
                            code,
                        });
                        fail_fast = true;
                    }
                }
            }
            if node_failure.is_none()
                && let Some((silent, quiet)) = step.silent_node()
            {
                let why = heartbeat::silence_message(&silent, quiet);
                say(&node, format!("error: {why}; stopping every rank"));
                node_failure = Some(why);
                fail_fast = true;
            }
            if fail_fast {
                self.tell(&Order::Stop {
                    grace: FAIL_FAST_GRACE,
                    signal: Signal::SIGTERM,
                });
                give_up_after(
                    &mut give_up_at,
                    Duration::from_secs(u64::from(FAIL_FAST_GRACE)),
                );
            }
            let step = self.workers.as_mut().expect("the step of ranks");
            let step_ended = matches!(step.child.try_wait(), Ok(Some(_)));
            let overdue = give_up_at.is_some_and(|g| Instant::now() > g);
            if exits.len() >= total || step_ended || overdue {
                break;
            }
            std::thread::sleep(TICK);
        }
        if let Some(why) = node_failure {
            let code = first_failure.map_or(1, |f| f.code);
            return Outcome::of_command(code, Some(why), None);
        }
        if let Some(signal) = stopped_by {
            let code = exits.values().copied().find(|c| *c != 0).unwrap_or(0);
            return Outcome::of_command(code, None, Some(signal));
        }
        ranks_outcome(first_failure.as_ref(), exits.len(), total)
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
