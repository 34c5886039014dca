//! The head node: starts Ray and the worker step at once, waits for the nodes to join, runs
//! the user command, and tears everything down, whatever happened.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use chrono::{Local, SecondsFormat};
use nix::sys::signal::Signal;

use super::kept_logs;
use super::marked::{self, RunMark};
use super::net::HostPort;
use super::ports;
use super::ray_node::{RayStart, TempRoot, start_node};
use super::signals;
use super::user_command::UserCommand;
use super::worker_step::{Joined, WorkerStep};
use super::{Allocation, LIVENESS_EVERY, RAY_STOP_GRACE, TICK, say};
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::final_state::{Ending, FinalState};
use crate::handoff::job_env;
use crate::sys::process::{describe_status, exit_code_of};

/// How the run ended, before it is written down.
struct Outcome {
    code: i32,
    ending: Ending,
    message: Option<String>,
}

impl Outcome {
    fn startup_failed(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            ending: Ending::StartupFailed,
            message: Some(message.into()),
        }
    }
}

/// A node failure while the command runs: the worker step ended, or the head's raylet died
/// (`ray_mark` is the run's mark when Ray runs).
fn check_nodes(
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

/// Runs the head's part and returns the job's exit code.
pub(super) fn run(args: &BootstrapArgs, alloc: &Allocation) -> i32 {
    let started_at = Local::now();
    let mut head = Head {
        args,
        alloc,
        mark: format!("{}-{}", alloc.job_id, std::process::id()),
        temp: None,
        dashboard_port: None,
        workers: None,
        command: None,
    };
    let outcome = head.run();
    head.teardown(outcome.code != 0);
    let state = FinalState {
        job_id: alloc.job_id.clone(),
        exit_code: outcome.code,
        ending: outcome.ending,
        started_at: started_at.to_rfc3339_opts(SecondsFormat::Millis, false),
        ended_at: Local::now().to_rfc3339_opts(SecondsFormat::Millis, false),
        head_node: alloc.node.clone(),
        message: outcome.message.clone(),
    };
    if let Some(message) = &outcome.message {
        say(&alloc.node, format!("error: {message}"));
    }
    if let Some(path) = &args.state_file
        && let Err(e) = state.write(path)
    {
        say(&alloc.node, format!("warning: {e:#}"));
    }
    say(
        &alloc.node,
        format!(
            "done: {}, exit code {}{}",
            outcome.ending.as_str(),
            outcome.code,
            super::memory_note()
        ),
    );
    outcome.code
}

struct Head<'a> {
    args: &'a BootstrapArgs,
    alloc: &'a Allocation,
    mark: String,
    temp: Option<TempRoot>,
    /// The port Ray's dashboard was given (with Ray).
    dashboard_port: Option<u16>,
    workers: Option<WorkerStep>,
    command: Option<UserCommand>,
}

impl Head<'_> {
    fn node(&self) -> &str {
        &self.alloc.node
    }

    fn run_mark(&self) -> RunMark {
        RunMark {
            mark: self.mark.clone(),
            temp_root: self.temp.as_ref().map(|t| t.path.clone()),
        }
    }

    fn run(&mut self) -> Outcome {
        let Some(command) = self.args.command.clone() else {
            return Outcome::startup_failed("no --command was given to the bootstrap");
        };
        let c = &self.args.cluster;
        let ip = match super::node_ip(self.alloc, c) {
            Ok(ip) => ip,
            Err(e) => return Outcome::startup_failed(e.to_string()),
        };
        let t0 = Instant::now();
        let mut ray_start = None;
        let mut address = None;
        if !c.no_ray {
            match self.start_ray(ip) {
                Ok((start, gcs)) => {
                    ray_start = Some(start);
                    address = Some(gcs);
                }
                Err(o) => return o,
            }
        }
        let head_address = address
            .clone()
            .unwrap_or_else(|| HostPort(ip, 0).to_string());
        let others = self.alloc.others();
        if !others.is_empty() {
            match WorkerStep::spawn(self.args, self.alloc, &head_address, &self.mark) {
                Ok(step) => self.workers = Some(step),
                Err(e) => {
                    return Outcome::startup_failed(format!("cannot start the worker step: {e:#}"));
                }
            }
        }
        say(
            self.node(),
            match &address {
                Some(a) => format!(
                    "starting Ray head at {a} and {} worker node(s)",
                    others.len()
                ),
                None => format!(
                    "starting the command on {} node(s) without Ray (--no-ray)",
                    others.len() + 1
                ),
            },
        );
        let joined = match self.wait_ready(ray_start, t0) {
            Ok(joined) => joined,
            Err(o) => return o,
        };
        let mut ips = vec![ip];
        ips.extend(joined.values().map(|j| j.ip));
        say(
            self.node(),
            format!(
                "cluster ready: {} node(s) in {:.1} s; running the command",
                ips.len(),
                t0.elapsed().as_secs_f64()
            ),
        );
        self.run_command(&command, address.as_deref(), &ips)
    }

    /// Starts `ray start --head`; returns it and the GCS address.
    fn start_ray(&mut self, ip: IpAddr) -> Result<(RayStart, String), Outcome> {
        let (start, ports) = start_node(
            self.alloc,
            &self.args.cluster,
            None,
            ip,
            &self.mark,
            &mut self.temp,
        )
        .map_err(Outcome::startup_failed)?;
        self.dashboard_port = Some(ports.dashboard());
        Ok((start, HostPort(ip, ports.gcs()).to_string()))
    }

    /// Tells where the dashboard is, if Ray started one (`--include-dashboard=false` does not).
    fn say_dashboard(&self) {
        let Some(port) = self.dashboard_port else {
            return;
        };
        if ports::listening_locally(port) {
            let node = self.node();
            say(
                node,
                format!(
                    "Ray dashboard on {node} at 127.0.0.1:{port}; from the login node: ssh -N -L {port}:127.0.0.1:{port} {node}, then open http://localhost:{port}"
                ),
            );
        }
    }

    /// Waits for the head's `ray start` and the workers' ready lines.
    fn wait_ready(
        &mut self,
        mut ray_start: Option<RayStart>,
        t0: Instant,
    ) -> Result<BTreeMap<u32, Joined>, Outcome> {
        let c = &self.args.cluster;
        let total = self.alloc.nodes.len() as u32;
        let needed_workers = c.min_nodes.unwrap_or(total).saturating_sub(1) as usize;
        let timeout = Duration::from_secs(u64::from(c.ready_timeout));
        let node = self.alloc.node.clone();
        let node = node.as_str();
        let mut head_ready = ray_start.is_none();
        let mut joined = BTreeMap::new();
        loop {
            if let Some(signal) = signals::take().into_iter().find(|s| signals::stops(*s)) {
                return Err(Outcome {
                    code: 128 + signal as i32,
                    ending: Ending::Stopped,
                    message: Some(format!(
                        "{} received while the cluster was starting",
                        signal.as_str()
                    )),
                });
            }
            if let Some(start) = &mut ray_start {
                match start.child.try_wait() {
                    Ok(Some(status)) if status.success() => {
                        head_ready = true;
                        say(
                            node,
                            format!("Ray head ready after {:.1} s", t0.elapsed().as_secs_f64()),
                        );
                        self.say_dashboard();
                        ray_start = None;
                    }
                    Ok(Some(status)) => {
                        return Err(Outcome::startup_failed(format!(
                            "the Ray head on node {} failed to start ({}):\n{}",
                            node,
                            describe_status(status),
                            start.output_tail(15)
                        )));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        return Err(Outcome::startup_failed(format!(
                            "cannot wait for `{}`: {e}",
                            start.cmd
                        )));
                    }
                }
            }
            if let Some(step) = &mut self.workers {
                while let Ok((rank, j)) = step.events.try_recv() {
                    say(
                        node,
                        format!(
                            "node {} ({}) joined after {:.1} s",
                            j.node,
                            j.ip,
                            t0.elapsed().as_secs_f64()
                        ),
                    );
                    joined.insert(rank, j);
                }
                if joined.len() < needed_workers
                    && let Ok(Some(status)) = step.child.try_wait()
                {
                    return Err(Outcome::startup_failed(format!(
                        "the worker step (`{}`) ended with {} before every node joined; the worker's own error is above",
                        step.cmd,
                        describe_status(status)
                    )));
                }
            }
            if head_ready && joined.len() >= needed_workers {
                return Ok(joined);
            }
            if t0.elapsed() > timeout {
                let have: Vec<&str> = joined.values().map(|j| j.node.as_str()).collect();
                let missing: Vec<String> = self
                    .alloc
                    .others()
                    .into_iter()
                    .filter(|n| !have.contains(&n.as_str()))
                    .collect();
                return Err(Outcome::startup_failed(format!(
                    "the cluster was not ready after --ready-timeout {} s: head {}, nodes not joined: {}",
                    timeout.as_secs(),
                    if head_ready { "ready" } else { "not ready" },
                    if missing.is_empty() {
                        "none".to_owned()
                    } else {
                        missing.join(", ")
                    }
                )));
            }
            std::thread::sleep(super::TICK);
        }
    }

    fn run_command(&mut self, command: &str, address: Option<&str>, ips: &[IpAddr]) -> Outcome {
        let ip_lines: Vec<String> = ips.iter().map(ToString::to_string).collect();
        let mut env = vec![
            (job_env::NODE_RANK.to_owned(), "0".to_owned()),
            (job_env::NODE_IPS.to_owned(), ip_lines.join("\n")),
            (job_env::NUM_NODES.to_owned(), ips.len().to_string()),
            (
                job_env::NUM_GPUS_PER_NODE.to_owned(),
                self.alloc.gpus_on_node.to_string(),
            ),
            (job_env::HEAD_IP.to_owned(), ip_lines[0].clone()),
            (job_env::PYTHONUNBUFFERED.to_owned(), "1".to_owned()),
        ];
        if let Some(a) = address {
            env.push((job_env::RAY_ADDRESS.to_owned(), a.to_owned()));
        }
        let cmd = match UserCommand::spawn(command, &env) {
            Ok(cmd) => cmd,
            Err(e) => {
                return Outcome::startup_failed(format!("cannot start bash for the command: {e}"));
            }
        };
        let run_mark = self.run_mark();
        let command = self.command.insert(cmd);
        let mut stop: Option<(Signal, Instant)> = None;
        let mut node_failure: Option<String> = None;
        let mut last_check = Instant::now();
        let kill_after = self.args.cluster.command_grace();
        let status: ExitStatus = loop {
            match command.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(e) => {
                    return Outcome {
                        code: 1,
                        ending: Ending::Failed,
                        message: Some(format!("cannot wait for the command: {e}")),
                    };
                }
            }
            for signal in signals::take() {
                say(
                    &self.alloc.node,
                    format!("{} received; passing it to the command", signal.as_str()),
                );
                command.signal(signal);
                if signals::stops(signal) && stop.is_none() {
                    stop = Some((signal, Instant::now()));
                }
            }
            if node_failure.is_none() && stop.is_none() {
                node_failure = check_nodes(
                    &mut self.workers,
                    (!self.args.cluster.no_ray)
                        .then(|| run_mark.clone())
                        .as_ref(),
                    &self.alloc.node,
                    &mut last_check,
                );
                if let Some(why) = &node_failure {
                    say(
                        &self.alloc.node,
                        format!("error: {why}; stopping the command"),
                    );
                    command.signal(Signal::SIGTERM);
                    stop = Some((Signal::SIGTERM, Instant::now()));
                }
            }
            if let Some((_, since)) = stop
                && since.elapsed() > kill_after
            {
                say(
                    &self.alloc.node,
                    format!(
                        "the command is still running {} s after SIGTERM; killing it",
                        kill_after.as_secs()
                    ),
                );
                command.signal(Signal::SIGKILL);
            }
            std::thread::sleep(TICK);
        };
        let code = exit_code_of(status);
        say(
            &self.alloc.node,
            format!("the command ended with {}", describe_status(status)),
        );
        match (node_failure, stop) {
            (Some(why), _) => Outcome {
                code: if code == 0 { 1 } else { code },
                ending: Ending::NodeFailed,
                message: Some(why),
            },
            (None, Some((signal, _))) => Outcome {
                code: if code == 0 { 128 + signal as i32 } else { code },
                ending: Ending::Stopped,
                message: Some(format!("stopped by {}", signal.as_str())),
            },
            (None, None) => Outcome {
                code,
                ending: if code == 0 {
                    Ending::Completed
                } else {
                    Ending::Failed
                },
                message: None,
            },
        }
    }

    /// Stops everything this run started, on every node; `keep_logs` (the run failed) has
    /// every node copy Ray's logs to the shared log directory first.
    fn teardown(&mut self, keep_logs: bool) {
        let t0 = Instant::now();
        if let Some(command) = &self.command {
            command.stop_leftovers();
        }
        let node = self.alloc.node.clone();
        let workers = self.workers.take();
        let stopper = workers.map(|mut step| {
            let node = node.clone();
            std::thread::spawn(move || step.stop(&node, keep_logs))
        });
        let stopped = marked::stop_all(&self.run_mark(), RAY_STOP_GRACE);
        if let Some(temp) = &self.temp {
            if keep_logs {
                let root = kept_logs::root(
                    self.args.ray_logs_dir.as_deref(),
                    self.args.state_file.as_deref(),
                );
                kept_logs::keep_saying(temp, root.as_deref(), &node);
            }
            temp.remove();
        }
        if let Some(handle) = stopper {
            let _ = handle.join();
        }
        if stopped > 0 || self.temp.is_some() {
            say(
                &node,
                format!(
                    "stopped {stopped} Ray process(es) on the head in {:.1} s",
                    t0.elapsed().as_secs_f64()
                ),
            );
        }
    }
}
