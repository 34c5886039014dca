//! The head node: starts Ray and the worker step at once, waits for the nodes to join
//! ([`ready`]), runs the user command ([`command`]), and tears everything down, whatever
//! happened, before writing the run's final state.

mod auth_check;
mod command;
mod lease;
mod outcome;
mod per_node;
mod ready;
mod requeue;
mod serve;
mod srun_workers;
mod watchdog;

use std::cell::{Cell, RefCell};
use std::net::IpAddr;
use std::path::Path;
use std::time::Instant;

use chrono::{Local, SecondsFormat};

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::kept_logs;
use crate::bootstrap::marked::{self, RunMark};
use crate::bootstrap::net::HostPort;
use crate::bootstrap::node::{RAY_STOP_GRACE, memory_note, node_ip, say};
use crate::bootstrap::ports::{self, RayPorts};
use crate::bootstrap::rank::env::{attempt_env, setup_env_before_ray};
use crate::bootstrap::rank::setup::{self, setup_failed};
use crate::bootstrap::rank::user_command::{Output, UserCommand};
use crate::bootstrap::ray_auth::RayAuth;
use crate::bootstrap::ray_node::{RayStart, TempRoot, start_node};
use crate::bootstrap::signals;
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::cluster::ClusterOptions;
use crate::handoff::final_state::{Attempt, FinalState};
use crate::handoff::run_files::create_private_dir;
use crate::slurm::control;
use crate::slurm::env as slurm_env;
use lease::{Holder, Lease};
use outcome::Outcome;
use requeue::Requeue;
use srun_workers::WorkerStep;
use watchdog::Watchdog;

pub(super) use watchdog::run as watchdog;

/// Runs the head's part and returns the job's exit code.
pub(super) fn run(args: &BootstrapArgs, alloc: &Allocation) -> i32 {
    let started_at = Local::now();
    if let Some(header) = attempt_header(alloc, args.state_file.as_deref()) {
        say(&alloc.node, header);
    }
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
    let mut head = Head {
        args,
        alloc,
        mark,
        temp: None,
        dashboard_port: None,
        workers: None,
        command: None,
        watchdog,
        auth: RayAuth::Disabled,
        auth_check: None,
        probe_host: String::new(),
        other_http: Vec::new(),
        master_port: 0,
        lease: None,
    };
    let outcome = head.run();
    // Everything stops first; then the final state is written, and only then are Ray's logs
    // copied: on a slow shared filesystem a large copy could otherwise outlast the time limit's
    // grace, and SIGKILL would end the chain with no state written.
    let keep_logs = outcome.code != 0;
    let stopping = head.stop_everything(keep_logs);
    let outcome = outcome.or_preempted(|| command::requeue_under_way(alloc));
    let restart = alloc.restart_count;
    let requeue = requeue::decide(outcome.ending, &args.cluster, restart);
    let note = requeue::note(requeue, &args.cluster, restart);
    let message = match (&outcome.message, &note) {
        (Some(m), Some(n)) => Some(format!("{m}; {n}")),
        (m, n) => m.clone().or_else(|| n.clone()),
    };
    let attempt = Attempt {
        restart,
        started_at: started_at.to_rfc3339_opts(SecondsFormat::Millis, false),
        ended_at: Local::now().to_rfc3339_opts(SecondsFormat::Millis, false),
        ending: outcome.ending,
        exit_code: outcome.code,
        requeued: requeue.follows(),
        message,
    };
    let state_file = args.state_file.as_deref();
    let state = FinalState::after_attempt(state_file, &alloc.job_id, &alloc.node, attempt.clone());
    if let Some(message) = &state.message {
        let error = if outcome.code == 0 { "" } else { "error: " };
        say(&alloc.node, format!("{error}{message}"));
    }
    write_state(state_file, &state, &alloc.node);
    if let Some(lease) = head.lease.take() {
        lease.release();
    }
    // Before the requeue, which ends the job at once (and every node's copy with it): the
    // copies are bounded in size (kept_logs::MAX_BYTES_PER_NODE), and the workers' by the
    // worker step's own patience too.
    head.keep_logs_and_finish(stopping, keep_logs);
    say(
        &alloc.node,
        format!(
            "done: {}, exit code {}{}",
            outcome.ending.as_str(),
            outcome.code,
            memory_note()
        ),
    );
    if let Some(w) = head.watchdog.take() {
        w.done();
    }
    if requeue == Requeue::ByRayslurm {
        // The last act: Slurm ends the job at once. Everything is stopped and written down.
        if let Err(e) = control::requeue(&alloc.job_id) {
            let why = format!(
                "Slurm refused to put the job back in its queue ({e}); the site may not allow requeues"
            );
            say(&alloc.node, format!("error: {why}"));
            let attempt = Attempt {
                requeued: false,
                message: Some(why),
                ..attempt
            };
            let state = FinalState::after_attempt(state_file, &alloc.job_id, &alloc.node, attempt);
            write_state(state_file, &state, &alloc.node);
        }
    }
    outcome.code
}

fn write_state(path: Option<&Path>, state: &FinalState, node: &str) {
    if let Some(path) = path
        && let Err(e) = state.write(path)
    {
        say(node, format!("warning: {e:#}"));
    }
}

/// The first line of an attempt after a requeue, so that the log (appended to by every
/// attempt) shows where each begins and why the last one ended.
fn attempt_header(alloc: &Allocation, state_file: Option<&Path>) -> Option<String> {
    if alloc.restart_count == 0 {
        return None;
    }
    let last = state_file
        .and_then(|p| FinalState::read(p).ok().flatten())
        .filter(|s| s.job_id == alloc.job_id)
        .and_then(|s| s.attempts.last().cloned());
    let why = last.map_or_else(String::new, |a| {
        format!("; the last one ended: {}", a.ending.as_str())
    });
    Some(format!(
        "======== attempt {} of job {} (Slurm restart {}){why} ========",
        alloc.restart_count + 1,
        alloc.job_id,
        alloc.restart_count
    ))
}

/// Why the job is not running where it was submitted, if it is not: Slurm starts the batch
/// script in /tmp when the node cannot see the submit directory (a node-local directory such as
/// the login node's /tmp), and the command would run there, failing later and obscurely. A job
/// that moved on purpose (`--sbatch-arg=--chdir=DIR`, a `cd` in `--load-env`, a template of
/// its own) runs elsewhere while the submit directory is there to see: that is not an error.
fn wrong_directory(cwd: Option<&Path>, submit_dir: Option<&Path>, node: &str) -> Option<String> {
    let (cwd, submit_dir) = (cwd?, submit_dir?);
    let same = |a: &Path, b: &Path| {
        a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
    };
    (!same(cwd, submit_dir) && !submit_dir.is_dir()).then(|| {
        format!(
            "the job was submitted from `{}`, which node {node} cannot see, so Slurm started it in `{}`; launch from a directory on a filesystem the compute nodes share (not /tmp or another node-local directory)",
            submit_dir.display(),
            cwd.display()
        )
    })
}

/// Tells where the dashboard is, if Ray started one (`--include-dashboard=false` does not).
fn say_dashboard(node: &str, port: Option<u16>) {
    let Some(port) = port else {
        return;
    };
    if ports::listening_locally(port) {
        say(
            node,
            format!(
                "Ray dashboard on {node} at 127.0.0.1:{port}; from the login node: ssh -N -L {port}:127.0.0.1:{port} {node}, then open http://localhost:{port}"
            ),
        );
    }
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
    /// Stops the run if this process dies before it ends (see [`Watchdog`]).
    watchdog: Option<Watchdog>,
    /// How this run's Ray authenticates (with Ray).
    auth: RayAuth,
    /// The check that Ray enforces the token, under way beside the command.
    auth_check: Option<auth_check::AuthCheck>,
    /// Where the check asks Ray's other HTTP ports: the head's address, and the ports by name.
    probe_host: String,
    other_http: Vec<(&'static str, u16)>,
    /// The port frameworks rendezvous on, from the run's block on the head.
    master_port: u16,
    /// This attempt's hold on the run directory, let go of once the final state is written.
    lease: Option<Lease>,
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
        let command = self.args.command.clone().unwrap_or_default();
        if command.is_empty() && !self.args.cluster.serve {
            return Outcome::startup_failed("no --command was given to the bootstrap");
        }
        if let Some(why) = wrong_directory(
            std::env::current_dir().ok().as_deref(),
            std::env::var_os(slurm_env::SLURM_SUBMIT_DIR)
                .as_deref()
                .map(Path::new),
            self.node(),
        ) {
            return Outcome::startup_failed(why);
        }
        // The run's private directory: checkpoints (RAYSLURM_RUN_DIR), Ray's token, a cluster's
        // jobs. Every run has one, with Ray or without, in the user's private tree: checked
        // again here (as StrictModes does), since the job may start days after the launch.
        if let Some(dir) = &self.args.run_dir {
            if let Some(parent) = dir.parent()
                && let Err(e) = crate::sys::private_tree::check(parent)
            {
                return Outcome::startup_failed(format!(
                    "the run's private directory is not safe, so the run does not start: {e}"
                ));
            }
            if let Err(e) = create_private_dir(dir) {
                return Outcome::startup_failed(format!("{e:#}"));
            }
        }
        // One attempt at a time in the directory (runs `--after` one run share it); then
        // whatever an earlier attempt or run left for its own signals is not this one's.
        if let Some(dir) = &self.args.run_dir {
            let me = Holder {
                job_id: self.alloc.job_id.clone(),
                restart: self.alloc.restart_count,
            };
            match Lease::take(dir, &me, &lease::slurm_liveness) {
                Ok(lease) => self.lease = Some(lease),
                Err(e) => return Outcome::startup_failed(e.to_string()),
            }
        }
        signals::clear_requests(self.args.run_dir.as_deref(), self.node());
        let c = &self.args.cluster;
        let ip = match node_ip(self.alloc, c) {
            Ok(ip) => ip,
            Err(e) => return Outcome::startup_failed(e.to_string()),
        };
        let t0 = Instant::now();
        if c.per_node {
            return self.run_per_node(ip, t0);
        }
        // The block of ports first: the workers learn the head's address from it, and the
        // command its rendezvous port.
        let ports = match ports::choose(
            &self.alloc.node,
            self.alloc.job_number(),
            c.port_base,
            ports::is_free,
        ) {
            Ok(p) => p,
            Err(e) => return Outcome::startup_failed(e.to_string()),
        };
        self.master_port = ports.master();
        let address = c.with_ray().then(|| HostPort(ip, ports.gcs()).to_string());
        if c.with_ray() {
            match RayAuth::prepare(self.args, self.alloc) {
                Ok(auth) => self.auth = auth,
                Err(e) => return Outcome::startup_failed(format!("{e:#}")),
            }
        }
        let head_address = address
            .clone()
            .unwrap_or_else(|| HostPort(ip, 0).to_string());
        let others = self.alloc.others();
        // With a setup the workers start at once and run theirs while the head runs its own;
        // without, Ray's head starts first, as the head's setup would otherwise.
        let spawn_first = c.setup.is_some();
        if spawn_first && let Err(o) = self.spawn_workers(&head_address) {
            return o;
        }
        if let Some(setup) = &c.setup {
            let mut env = setup_env_before_ray(self.alloc, ip, self.master_port);
            env.extend(attempt_env(self.alloc, self.args.run_dir.as_deref()));
            let output = Output::Prefixed(format!("[setup {}] ", self.alloc.node));
            // The head's setup ends early when a worker's setup fails or a node goes silent
            // (the run is lost), or when the job is told to stop (a stop, not a failure).
            let trouble = RefCell::new(None);
            let stopped_by = Cell::new(None);
            let stop = || {
                if let Some(s) = signals::take().into_iter().find(|s| signals::stops(*s)) {
                    stopped_by.set(Some(s));
                    return true;
                }
                let why = self.workers.as_ref().and_then(WorkerStep::setup_trouble);
                let stop = why.is_some();
                if stop {
                    trouble.replace(why);
                }
                stop
            };
            let code = setup::run(setup, &env, &output, &stop);
            if let Some(signal) = stopped_by.get() {
                return Outcome::stopped_while_starting(signal);
            }
            if let Some(why) = trouble.take() {
                return Outcome::startup_failed(why);
            }
            if code != 0 {
                return Outcome::startup_failed(setup_failed(&self.alloc.node, code));
            }
        }
        let mut ray_start = None;
        if c.with_ray() {
            match self.start_ray(ip, ports) {
                Ok(start) => ray_start = Some(start),
                Err(o) => return o,
            }
        }
        if !spawn_first && let Err(o) = self.spawn_workers(&head_address) {
            return o;
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
        if c.serve {
            let nodes = std::iter::once(self.alloc.node.clone())
                .chain(joined.values().map(|j| j.node.clone()))
                .collect();
            return self.serve(ip, nodes);
        }
        self.run_command(&command, address.as_deref(), &ips)
    }

    /// Starts the worker step, if there are other nodes.
    fn spawn_workers(&mut self, head_address: &str) -> Result<(), Outcome> {
        if self.alloc.others().is_empty() {
            return Ok(());
        }
        let step = WorkerStep::spawn(
            self.args,
            self.alloc,
            head_address,
            self.master_port,
            &self.mark,
        )
        .map_err(|e| Outcome::startup_failed(format!("cannot start the worker step: {e:#}")))?;
        self.workers = Some(step);
        Ok(())
    }

    /// Starts `ray start --head` on the block of ports chosen for the run.
    fn start_ray(&mut self, ip: IpAddr, ports: RayPorts) -> Result<RayStart, Outcome> {
        let cluster = ClusterOptions {
            port_base: Some(ports.base),
            ..self.args.cluster.clone()
        };
        let started = start_node(
            self.alloc,
            &cluster,
            None,
            ip,
            &self.mark,
            &self.auth,
            &mut self.temp,
        );
        if let (Some(w), Some(temp)) = (&mut self.watchdog, &self.temp) {
            w.temp_root(&temp.path);
        }
        let (start, ports) = started.map_err(Outcome::startup_failed)?;
        self.dashboard_port = Some(ports.dashboard());
        self.probe_host = match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        self.other_http = ports.other_http().to_vec();
        Ok(start)
    }

    /// Stops everything this run started, on every node: the command, the workers (told to
    /// keep Ray's logs first when `keep_logs`; they stop on a thread of their own, returned),
    /// and the head's Ray. The head's logs are still in its temp root (see
    /// [`Head::keep_logs_and_finish`]).
    fn stop_everything(&mut self, keep_logs: bool) -> Stopping {
        let t0 = Instant::now();
        if let Some(command) = &self.command {
            command.stop_leftovers();
        }
        let node = self.alloc.node.clone();
        let workers = self.workers.take().map(|mut step| {
            let node = node.clone();
            std::thread::spawn(move || step.stop(&node, keep_logs))
        });
        let stopped = marked::stop_all(&self.run_mark(), RAY_STOP_GRACE);
        if stopped > 0 || self.temp.is_some() {
            say(
                &node,
                format!(
                    "stopped {stopped} Ray process(es) on the head in {:.1} s",
                    t0.elapsed().as_secs_f64()
                ),
            );
        }
        Stopping { workers }
    }

    /// Copies the head's Ray logs (when `keep_logs`, bounded), removes its temp root, and
    /// waits for the workers to have stopped (and copied theirs).
    fn keep_logs_and_finish(&mut self, stopping: Stopping, keep_logs: bool) {
        let node = self.alloc.node.clone();
        if let Some(temp) = &self.temp {
            if keep_logs {
                let root = kept_logs::root(
                    self.args.ray_logs_dir.as_deref(),
                    self.args.state_file.as_deref(),
                );
                kept_logs::keep_saying(temp, root.as_deref(), self.alloc.restart_count, &node);
            }
            temp.remove();
        }
        if let Some(handle) = stopping.workers {
            let _ = handle.join();
        }
    }
}

/// The part of the teardown still under way once everything is told to stop.
struct Stopping {
    /// The thread that stops the worker step (and waits for the workers' logs).
    workers: Option<std::thread::JoinHandle<()>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_running_outside_its_submit_directory_is_named() {
        let p = Path::new;
        assert_eq!(
            wrong_directory(Some(p("/srv/a")), Some(p("/srv/a")), "n1"),
            None
        );
        assert_eq!(wrong_directory(Some(p("/tmp")), None, "n1"), None);
        let why = wrong_directory(Some(p("/tmp")), Some(p("/nonexistent/proj")), "n1").unwrap();
        assert!(why.starts_with("the job was submitted from `/nonexistent/proj`, which node n1 cannot see, so Slurm started it in `/tmp`"), "{why}");
    }

    #[test]
    fn a_job_that_changed_directory_on_purpose_is_not_stopped() {
        // --sbatch-arg=--chdir=DIR or a `cd` in --load-env: the submit directory is visible.
        let submit = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(
            wrong_directory(Some(elsewhere.path()), Some(submit.path()), "n1"),
            None
        );
    }
}
