//! The head node: everything only the head runs. It starts Ray and the worker step at once
//! ([`start`]), waits for the nodes to join ([`ready`]), then, as the [`cluster::Head`] of a
//! ready cluster, runs the user command ([`command`]) or serves jobs ([`serve`]); a per-node
//! run has a head of its own ([`per_node`]). Whatever happened, it tears everything down
//! ([`teardown`]) before writing the run's final state, and asks Slurm to requeue the job
//! when the run says so ([`requeue`]). Its [`watchdog`] outlives it, to clean up if it dies.

mod auth_check;
mod cluster;
mod command;
mod drain;
mod elastic;
mod kept_ports;
mod outcome;
mod per_node;
mod python;
mod ready;
mod requeue;
mod run_dir_lease;
mod serve;
mod setups;
mod srun_workers;
mod start;
mod startup;
mod teardown;
mod watchdog;

use std::path::Path;
use std::time::Instant;

use chrono::{DateTime, Local, SecondsFormat};

use outcome::Outcome;
use requeue::Requeue;
use startup::StartUp;
use teardown::Started;

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::in_image;
use crate::bootstrap::node::{memory_note, say};
use crate::bootstrap::workdir::NodeWorkdir;
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::final_state::{Attempt, Ending, FinalState};
use crate::slurm::control;

pub(super) use watchdog::run as watchdog;

/// Runs the head's part and returns the job's exit code.
pub(super) fn run(args: &BootstrapArgs, alloc: &Allocation) -> i32 {
    let started_at = Local::now();
    if let Some(header) = attempt_header(alloc, args.state_file.as_deref()) {
        say(&alloc.node, header);
    }
    let mut started = Started::new(args, alloc);
    let outcome = run_attempt(args, alloc, &mut started);
    finish(args, alloc, started, outcome, started_at)
}

/// Starts the run and runs it to its end: how it ended.
fn run_attempt(args: &BootstrapArgs, alloc: &Allocation, started: &mut Started) -> Outcome {
    let ip = match start::prepare(args, alloc, started) {
        Ok(ip) => ip,
        Err(outcome) => return outcome,
    };
    let t0 = Instant::now();
    // A per-node run's ranks make the head node's copy themselves, as on every node.
    if !args.cluster.program.per_node {
        match NodeWorkdir::prepare(args, alloc) {
            Ok(w) => started.workdir = w,
            Err(why) => return Outcome::startup_failed(why),
        }
    }
    if args.cluster.program.per_node {
        return per_node::run(args, alloc, started, ip, t0);
    }
    let start_up = StartUp {
        args,
        alloc,
        started,
        ip,
        t0,
        setups: setups::Setups::new(
            &alloc.nodes,
            args.cluster.program.setup.is_some(),
            args.cluster.program.setup_timeout,
        ),
    };
    match start_up.start() {
        Ok(head) => head.run(),
        Err(outcome) => outcome,
    }
}

/// Stops everything, writes the attempt down, keeps Ray's logs if it failed, and requeues
/// the job if the run says so; the job's exit code.
fn finish(
    args: &BootstrapArgs,
    alloc: &Allocation,
    mut started: Started,
    outcome: Outcome,
    started_at: DateTime<Local>,
) -> i32 {
    // Everything stops first; then the final state is written, and only then are Ray's logs
    // copied: on a slow shared filesystem a large copy could otherwise outlast the time limit's
    // grace, and SIGKILL would end the chain with no state written.
    let keep_logs = outcome.code != 0;
    let stopping = started.stop_everything(&alloc.node, keep_logs);
    let outcome = outcome.or_preempted(|| command::requeue_under_way(alloc));
    let (attempt, requeue) = write_attempt(args, alloc, &outcome, started_at);
    if let Some(lease) = started.lease.take() {
        lease.release();
    }
    // Before the requeue, which ends the job at once (and every node's copy with it): the
    // copies are bounded in size (kept_logs::MAX_BYTES_PER_NODE), and the workers' by the
    // worker step's own patience too.
    started.keep_logs_and_finish(stopping, keep_logs, args, alloc);
    in_image::remove_container(&alloc.node);
    say(
        &alloc.node,
        format!(
            "done: {}, exit code {}{}",
            outcome.ending.as_str(),
            outcome.code,
            memory_note()
        ),
    );
    if let Some(w) = started.watchdog.take() {
        w.done();
    }
    if requeue.by_rayslurm() {
        requeue_job(args, alloc, attempt);
    }
    outcome.code
}

/// Writes the attempt into the run's final state (and says its message); the attempt, and
/// whether the job goes back in Slurm's queue.
fn write_attempt(
    args: &BootstrapArgs,
    alloc: &Allocation,
    outcome: &Outcome,
    started_at: DateTime<Local>,
) -> (Attempt, Requeue) {
    let restart = alloc.restart_count;
    let state_file = args.state_file.as_deref();
    let errors = failures_requeued(state_file, &alloc.job_id);
    let requeue = requeue::decide(outcome.ending, &args.cluster, restart, errors);
    let note = requeue::note(requeue, &args.cluster, restart, errors);
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
    let state = FinalState::after_attempt(state_file, &alloc.job_id, &alloc.node, attempt.clone());
    if let Some(message) = &state.last().message {
        let error = if outcome.code == 0 { "" } else { "error: " };
        say(&alloc.node, format!("{error}{message}"));
    }
    write_state(state_file, &state, &alloc.node);
    (attempt, requeue)
}

/// How many of the job's earlier attempts failed and went back in the queue
/// (`--restarts-on-error`'s count), from the run's final state.
fn failures_requeued(state_file: Option<&Path>, job_id: &str) -> u32 {
    state_file
        .and_then(|p| FinalState::read(p).ok().flatten())
        .filter(|s| s.job_id == job_id)
        .map_or(0, |s| {
            let n = s
                .attempts()
                .filter(|a| a.ending == Ending::Failed && a.requeued)
                .count();
            u32::try_from(n).unwrap_or(u32::MAX)
        })
}

/// The last act: Slurm ends the job at once. Everything is stopped and written down; if
/// Slurm refuses, the attempt is written again as not requeued, saying why. `scontrol` runs in
/// the job's step, which Slurm stops as it requeues the job: killed by that signal before it
/// could say so (seen on Slurm 26.05), it failed only if the job's restart count has not gone
/// up.
fn requeue_job(args: &BootstrapArgs, alloc: &Allocation, attempt: Attempt) {
    let Err(e) = control::requeue(&alloc.job_id) else {
        return;
    };
    if command::requeue_under_way(alloc) {
        return;
    }
    let why = format!(
        "Slurm refused to put the job back in its queue ({e}); the site may not allow requeues"
    );
    say(&alloc.node, format!("error: {why}"));
    let attempt = Attempt {
        requeued: false,
        message: Some(why),
        ..attempt
    };
    let state_file = args.state_file.as_deref();
    let state = FinalState::after_attempt(state_file, &alloc.job_id, &alloc.node, attempt);
    write_state(state_file, &state, &alloc.node);
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
        .map(|s| s.last().clone());
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
