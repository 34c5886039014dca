//! Running the user's command on the head: its environment, passing signals on, watching the
//! nodes while it runs, and killing it once its grace after SIGTERM has passed.

use std::net::IpAddr;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::auth_check::Verdict;
use super::cluster::Head;
use super::drain::{self, Deadline};
use super::outcome::Outcome;
use super::srun_workers::WorkerStep;
use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::heartbeat;
use crate::bootstrap::marked::{self, RunMark};
use crate::bootstrap::node::{LIVENESS_EVERY, TICK, say};
use crate::bootstrap::ports;
use crate::bootstrap::signals;
use crate::bootstrap::signals::received;
use crate::bootstrap::user_code::command::{Output, UserCommand};
use crate::bootstrap::user_code::env::{Ranks, attempt_env, node_ips_left_out, rank_env};
use crate::handoff::job_env;
use crate::slurm::query;
use crate::sys::process::{describe_status, exit_code_of};

/// The environment the command gets on the head: the rank environment of the one process
/// that runs it (README, "The rank environment"), and Ray's address.
pub(super) fn command_env(
    ips: &[IpAddr],
    gpus_per_node: u32,
    ray_address: Option<&str>,
    master_port: u16,
) -> Vec<(String, String)> {
    let mut env = rank_env(
        Ranks::head_only(ips.len() as u32),
        ips,
        gpus_per_node,
        master_port,
    );
    if let Some(a) = ray_address {
        env.push((job_env::RAY_ADDRESS.to_owned(), a.to_owned()));
    }
    env
}

/// How long the command has to stop when Slurm is requeuing the job (preemption, `scontrol
/// requeue`): Slurm sends SIGKILL after its KillWait, 30 s by default, and the bootstrap must
/// have stopped Ray and written the attempt down before then.
pub(super) const PREEMPTED_GRACE: Duration = Duration::from_secs(20);

/// How long the head waits, after its command died of a signal, for a stop signal of its own
/// that Slurm sent to the whole step at the same moment.
const OWN_SIGNAL_SETTLE: Duration = Duration::from_millis(300);

/// Whether Slurm is stopping this job to put it back in its queue: its restart count has
/// already gone up while the job still runs (`scancel` leaves it as it was).
pub(super) fn requeue_under_way(alloc: &Allocation) -> bool {
    query::scontrol_job(&alloc.job_id)
        .ok()
        .flatten()
        .and_then(|j| j.restarts)
        .is_some_and(|r| r > alloc.restart_count)
}

/// The command was asked to stop: by which signal, and when.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stopping {
    pub(super) signal: Signal,
    since: Instant,
}

impl Stopping {
    pub(super) fn new(signal: Signal, since: Instant) -> Self {
        Self { signal, since }
    }

    /// Whether the command has had its grace and must be killed.
    pub(super) fn overdue(&self, grace: Duration, now: Instant) -> bool {
        now.duration_since(self.since) > grace
    }
}

/// A node failure while the command runs: the worker step ended, a worker node went silent,
/// or the head's raylet died (`ray_mark` is the run's mark when Ray runs).
pub(super) fn check_nodes(
    workers: &mut Option<WorkerStep>,
    ray_mark: Option<&RunMark>,
    node: &str,
    last_check: &mut Instant,
) -> Option<String> {
    if let Some(step) = workers
        && let Ok(Some(status)) = step.child.try_wait()
    {
        return Some(format!(
            "the worker step ended with {} while the command ran: a worker node failed (its own message is above)",
            describe_status(status)
        ));
    }
    if let Some((node, quiet)) = workers.as_ref().and_then(WorkerStep::silent_node) {
        return Some(heartbeat::silence_message(&node, quiet));
    }
    if let Some(mark) = ray_mark
        && last_check.elapsed() >= LIVENESS_EVERY
    {
        *last_check = Instant::now();
        if !marked::alive_named(mark, "raylet") {
            return Some(format!("Ray's raylet on the head node {node} is gone"));
        }
    }
    None
}

/// What the head has seen and done while the command runs.
struct Watch {
    /// The command's grace after SIGTERM (shorter when Slurm is requeuing the job).
    grace: Duration,
    stop: Option<Stopping>,
    node_failure: Option<String>,
    /// The run's mark, to look for the head's raylet (with Ray).
    ray_mark: Option<RunMark>,
    /// When the head's raylet was last looked at.
    last_check: Instant,
    killed: bool,
    /// Slurm is requeuing the job (preemption or `scontrol requeue`).
    preempted: bool,
    /// Why Ray was found not to enforce the token, if it was.
    not_enforced: Option<String>,
    /// Ray was told that its worker nodes go away (see [`drain`]).
    drained: bool,
}

impl Watch {
    /// Stops the command with SIGTERM, unless it is stopping already.
    fn stop_command(&mut self, command: &UserCommand) {
        if self.stop.is_none() {
            command.signal(Signal::SIGTERM);
            self.stop = Some(Stopping::new(Signal::SIGTERM, Instant::now()));
        }
    }

    /// Kills the command once its grace after the stop has passed.
    fn kill_if_overdue(&mut self, command: &UserCommand, node: &str) {
        if let Some(s) = self.stop
            && !self.killed
            && s.overdue(self.grace, Instant::now())
        {
            say(
                node,
                format!(
                    "the command is still running {} s after {}; killing it",
                    self.grace.as_secs(),
                    s.signal.as_str()
                ),
            );
            command.signal(Signal::SIGKILL);
            self.killed = true;
        }
    }
}

impl Head<'_> {
    /// Runs the command to its end and says how the run ended.
    pub(super) fn run_command(&mut self) -> Outcome {
        let command = self.args.command.clone().unwrap_or_default();
        if let Some(why) = node_ips_left_out(&self.ips) {
            say(&self.alloc.node, why);
        }
        let mut env = command_env(
            &self.ips,
            self.alloc.gpus_on_node,
            self.ray.as_ref().map(|r| r.address.as_str()),
            self.master_port,
        );
        env.extend(attempt_env(self.alloc, self.args.run_dir.as_deref()));
        if let Some(ray) = &self.ray {
            env.extend(ray.auth.env().into_iter().map(|(k, v)| (k.to_owned(), v)));
        }
        // The rendezvous port, held since its choice, is the command's to bind from now on.
        self.master_held = self
            .master_held
            .take()
            .and_then(ports::Held::leave_to_its_user);
        let mut command = match UserCommand::spawn(&command, &env, &Output::Inherit) {
            Ok(cmd) => cmd,
            Err(e) => {
                return Outcome::startup_failed(format!("cannot start bash for the command: {e}"));
            }
        };
        if let Some(w) = &mut self.started.watchdog {
            w.command_started(command.pgid());
        }
        let mut watch = Watch {
            grace: self.args.cluster.nodes.command_grace(),
            stop: None,
            node_failure: None,
            ray_mark: self.ray.is_some().then(|| self.started.run_mark()),
            last_check: Instant::now(),
            killed: false,
            preempted: false,
            not_enforced: None,
            drained: false,
        };
        let status = loop {
            match command.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) => {}
                Err(e) => break Err(e),
            }
            self.pass_signals(&command, &mut watch);
            self.poll_auth_check(&command, &mut watch);
            self.watch_nodes(&command, &mut watch);
            watch.kill_if_overdue(&command, self.node());
            std::thread::sleep(TICK);
        };
        // Slurm signals every process of the batch step (a cancel's SIGTERM): the command may
        // die of it before this process has taken its own (seen on 23.11). A stop it was told
        // is then the run's end, not a failure of the command.
        if let Ok(status) = &status
            && watch.stop.is_none()
            && std::os::unix::process::ExitStatusExt::signal(status).is_some()
        {
            std::thread::sleep(OWN_SIGNAL_SETTLE);
            self.pass_signals(&command, &mut watch);
        }
        // Kept for the teardown, which stops what the command left behind.
        self.started.command = Some(command);
        match status {
            Ok(status) => self.command_ended(status, watch),
            Err(e) => Outcome::lost_command(format!("cannot wait for the command: {e}")),
        }
    }

    /// Passes the signals the job got on to the command; a stop starts its grace.
    fn pass_signals(&self, command: &UserCommand, watch: &mut Watch) {
        let node = self.node();
        for signal in signals::take() {
            // The time warning: the command gets the user's --signal, and Ray stays up
            // for the grace so that the program can still use it to checkpoint.
            let to_command = signals::for_command(signal, self.args.cluster.long_run.signal);
            say(
                node,
                format!(
                    "{}; passing {} to the command",
                    received(signal),
                    to_command.as_str()
                ),
            );
            command.signal(to_command);
            if signals::stops_run(self.args.run_dir.as_deref(), signal) && watch.stop.is_none() {
                watch.stop = Some(Stopping::new(signal, Instant::now()));
                if signal == Signal::SIGTERM && requeue_under_way(self.alloc) {
                    watch.preempted = true;
                    // Preemption or `scontrol requeue`: Slurm kills the job after its
                    // KillWait, whatever our grace.
                    say(
                        node,
                        "Slurm is putting the job back in its queue (preemption or scontrol requeue)",
                    );
                    watch.grace = watch.grace.min(PREEMPTED_GRACE);
                }
                let why = if watch.preempted {
                    Some(Deadline::Preemption)
                } else {
                    (signal == signals::TIME_WARNING).then_some(Deadline::TimeLimit)
                };
                if let Some(why) = why {
                    self.drain(why, watch.grace, &mut watch.drained);
                }
            }
        }
    }

    /// Tells Ray that its worker nodes go away after `within` (once an attempt; without Ray,
    /// nothing to tell).
    pub(super) fn drain(&self, why: Deadline, within: Duration, drained: &mut bool) {
        if let Some(ray) = &self.ray
            && !*drained
        {
            *drained = true;
            drain::start(
                ray,
                &self.started.mark,
                self.node(),
                why,
                &self.alloc.job_id,
                within,
            );
        }
    }

    /// Takes the verdict of the token check under way, if it has one: the dashboard is
    /// named once the token is found enforced; a Ray that does not enforce it stops the run.
    fn poll_auth_check(&mut self, command: &UserCommand, watch: &mut Watch) {
        let node = self.alloc.node.clone();
        let Some(ray) = &mut self.ray else {
            return;
        };
        let Some(check) = &mut ray.auth_check else {
            return;
        };
        let verdict = check.poll(&node);
        if verdict != Verdict::Pending {
            ray.auth_check = None;
        }
        match verdict {
            Verdict::Pending => {}
            Verdict::Done => self.announce_dashboard(),
            Verdict::Stop(why) => {
                say(&node, format!("error: {why}; stopping the run"));
                watch.stop_command(command);
                watch.not_enforced = Some(why);
            }
        }
    }

    /// Stops the command when a node fails.
    fn watch_nodes(&mut self, command: &UserCommand, watch: &mut Watch) {
        if watch.node_failure.is_some() || watch.stop.is_some() {
            return;
        }
        let node = self.alloc.node.clone();
        watch.node_failure = check_nodes(
            &mut self.started.workers,
            watch.ray_mark.as_ref(),
            &node,
            &mut watch.last_check,
        );
        if let Some(why) = &watch.node_failure {
            say(&node, format!("error: {why}; stopping the command"));
            watch.stop_command(command);
        }
    }

    /// How the run ended, now that the command has.
    fn command_ended(&mut self, status: ExitStatus, watch: Watch) -> Outcome {
        let node = self.node();
        say(
            node,
            format!("the command ended with {}", describe_status(status)),
        );
        if let Some(why) = watch.not_enforced {
            return Outcome::auth_not_enforced(why);
        }
        if self
            .ray
            .as_mut()
            .and_then(|r| r.auth_check.take())
            .is_some()
        {
            say(
                &self.alloc.node,
                "Ray was started to require the run's token (not checked: the command ended before its dashboard answered)",
            );
        }
        let stopped_by = watch
            .stop
            .map(|s| s.signal)
            .filter(|_| watch.node_failure.is_none());
        // Slurm was asked once already; the head's end need not ask again.
        let preempted = watch.preempted;
        Outcome::of_command(exit_code_of(status), watch.node_failure, stopped_by)
            .or_preempted(|| preempted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_sees_every_node_in_rank_order() {
        let ips: Vec<IpAddr> = vec!["10.0.0.1".parse().unwrap(), "fd00::2".parse().unwrap()];
        let env = command_env(&ips, 4, Some("10.0.0.1:6379"), 12009);
        let get = |k: &str| {
            env.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("RAYSLURM_NODE_RANK"), Some("0"));
        assert_eq!(get("RAYSLURM_NODE_IPS"), Some("10.0.0.1\nfd00::2"));
        assert_eq!(get("RAYSLURM_NUM_NODES"), Some("2"));
        assert_eq!(get("RAYSLURM_NUM_GPUS_PER_NODE"), Some("4"));
        assert_eq!(get("RAYSLURM_HEAD_IP"), Some("10.0.0.1"));
        assert_eq!(get("RAY_ADDRESS"), Some("10.0.0.1:6379"));
        assert_eq!(get("RANK"), Some("0"));
        assert_eq!(get("WORLD_SIZE"), Some("1"));
        assert_eq!(get("MASTER_PORT"), Some("12009"));
        assert!(
            command_env(&ips, 0, None, 12009)
                .iter()
                .all(|(k, _)| k != "RAY_ADDRESS")
        );
    }

    #[test]
    fn the_command_is_killed_only_after_its_grace() {
        let t0 = Instant::now();
        let s = Stopping::new(Signal::SIGTERM, t0);
        let grace = Duration::from_secs(55);
        assert!(!s.overdue(grace, t0 + Duration::from_secs(20)));
        assert!(s.overdue(grace, t0 + Duration::from_secs(56)));
    }
}
