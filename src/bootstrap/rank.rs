//! One task of a per-node run (`--per-node`): on every node, `--tasks-per-node` of them, each
//! with its own rank. It tells the head its node's IP (the node's first task), learns every
//! node's from the head, runs the node's setup (the first task), waits for the head's word that
//! every setup succeeded, runs the command with the rank environment, and reports the command's
//! exit code; what the command left running lives until the whole run ends, as in a Slurm
//! step. The head decides the run's end: the task exits 0 whatever its command did, so that
//! srun's `--kill-on-bad-exit` (which kills at once, with SIGKILL) fires only if the task
//! itself fails.

use std::collections::HashMap;
use std::io::Write;
use std::net::IpAddr;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::in_image;
use crate::bootstrap::node::{TICK, node_ip, say};
use crate::bootstrap::protocol::{Order, Report};
use crate::bootstrap::user_code::command::{Output, UserCommand};
use crate::bootstrap::user_code::env::{Ranks, attempt_env, node_ips_left_out, rank_env};
use crate::bootstrap::user_code::setup;
use crate::bootstrap::workdir::NodeWorkdir;
use crate::bootstrap::{byte_lines, heartbeat, signals};
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::sys::process::exit_code_of;

/// Runs the task's part; the exit code is 0 unless the task itself failed.
pub(super) fn run(args: &BootstrapArgs, alloc: &Allocation, env: &HashMap<String, String>) -> i32 {
    let node = alloc.node.clone();
    let ranks = Ranks::of_task(alloc, env);
    let first_on_node = ranks.local_rank == 0;
    if first_on_node {
        heartbeat::start_beating(node.clone());
    }
    // The node's first task copies the snapshot before it reports the node's IP, so the copy
    // is there for the node's other tasks by the head's `Go`.
    let workdir = match args.snapshot.as_deref().filter(|_| first_on_node) {
        Some(snapshot) => match NodeWorkdir::make(snapshot, alloc) {
            Ok(w) => Some(w),
            Err(why) => {
                say(&node, format!("error: {why}"));
                heartbeat::say_gone(&node);
                return 1;
            }
        },
        None => None,
    };
    let code = run_rank(args, alloc, ranks, first_on_node);
    // The node's last task out removes the run's container there.
    in_image::remove_container(&node);
    if let Some(workdir) = workdir {
        workdir.leave();
    }
    if first_on_node {
        heartbeat::say_gone(&node);
    }
    code
}

/// The rank's environment; the first rank says so when the node IPs are left out of it.
fn rank_env_said(
    node: &str,
    ranks: Ranks,
    ips: &[std::net::IpAddr],
    gpus_per_node: u32,
    master_port: u16,
) -> Vec<(String, String)> {
    if ranks.rank == 0
        && let Some(why) = node_ips_left_out(ips)
    {
        say(node, why);
    }
    rank_env(ranks, ips, gpus_per_node, master_port)
}

fn run_rank(args: &BootstrapArgs, alloc: &Allocation, ranks: Ranks, first_on_node: bool) -> i32 {
    let node = &alloc.node;
    let orders = listen();
    let ip = match node_ip(alloc, &args.cluster) {
        Ok(ip) => ip,
        Err(e) => {
            say(node, format!("error: {e}"));
            return 1;
        }
    };
    if first_on_node && !announce_node(node, &ranks, ip) {
        return 1;
    }
    let Some(Order::Go { master_port, ips }) = next_order(&orders) else {
        return 0;
    };
    // Left (and removed, by the last task out) when this function returns.
    let _workdir = match args.snapshot.as_ref().filter(|_| !first_on_node) {
        Some(snapshot) => match NodeWorkdir::join(snapshot, alloc) {
            Ok(w) => Some(w),
            Err(why) => {
                say(node, format!("error: {why}"));
                return 1;
            }
        },
        None => None,
    };
    let mut env = rank_env_said(node, ranks, &ips, alloc.gpus_on_node, master_port);
    env.extend(attempt_env(alloc, args.run_dir.as_deref()));
    // Always copied line by line, never inherited: the task's stdout also carries its reports
    // and heartbeats, which a last line without a newline would swallow.
    let output = |what: &str| {
        if args.cluster.program.no_prefix {
            Output::Prefixed(String::new())
        } else {
            Output::Prefixed(format!("[{what} {node}] "))
        }
    };
    if first_on_node && let Some(setup) = &args.cluster.program.setup {
        let stop = || {
            matches!(
                orders.try_recv(),
                Ok(Order::Stop { .. }) | Err(mpsc::TryRecvError::Disconnected)
            )
        };
        let code = setup::run(node, setup, &env, &output("setup"), &stop);
        report(&Report::Setup {
            node: node.clone(),
            code,
        });
        if code != 0 {
            return 0;
        }
    }
    if next_order(&orders) != Some(Order::Run) {
        return 0;
    }
    let Some(command) = &args.command else {
        say(node, "error: no --command was given to the task");
        return 1;
    };
    let exit = |code| {
        report(&Report::Exit {
            rank: ranks.rank,
            node: node.clone(),
            code,
        });
    };
    let mut cmd = match UserCommand::spawn(command, &env, &output(&ranks.rank.to_string())) {
        Ok(cmd) => cmd,
        Err(e) => {
            say(
                node,
                format!("error: cannot start bash for the command: {e}"),
            );
            exit(127);
            return 0;
        }
    };
    exit(watch(&mut cmd, &orders, args.cluster.nodes.command_grace()));
    // What the command started and left running lives on until the whole run ends, as in a
    // Slurm step (a rank that is done may have started a server the others use), then goes.
    until_the_run_ends(&cmd, &orders);
    cmd.stop_leftovers();
    0
}

/// Waits for the run's end (the head's stop, the head gone, or a stop signal), passing the
/// head's signals on to what a finished command left running.
fn until_the_run_ends(cmd: &UserCommand, orders: &Receiver<Order>) {
    loop {
        match orders.recv_timeout(TICK) {
            Ok(Order::Stop { .. }) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Ok(Order::Signal { signal }) => cmd.signal(signal),
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if signals::take().into_iter().any(signals::stops) {
            return;
        }
    }
}

/// The node's first task: checks that the run's image starts here (the head's bootstrap has
/// checked its own node's) and reports the node's IP to the head. False when the image cannot
/// start, said on the node.
fn announce_node(node: &str, ranks: &Ranks, ip: IpAddr) -> bool {
    if ranks.node_rank != 0
        && let Err(why) = in_image::check(node, false)
    {
        say(node, format!("error: {why}"));
        return false;
    }
    report(&Report::Ip {
        node: node.to_owned(),
        ip,
    });
    true
}

/// How long a rank's command has to stop once the head is gone (its bootstrap killed, or its
/// node dead): no one will report the rank's end, and Slurm's own cleanup of the job may come
/// much later or not reach it, so it does not get its whole stop grace.
const HEAD_GONE_GRACE: Duration = Duration::from_secs(3);

/// Waits for the command, passing signals on; the head's stop order (or the head gone) stops
/// it: SIGTERM, then SIGKILL once its grace has passed.
fn watch(cmd: &mut UserCommand, orders: &Receiver<Order>, signal_grace: Duration) -> i32 {
    let mut kill_at: Option<Instant> = None;
    let mut head_gone = false;
    loop {
        match cmd.try_wait() {
            Ok(Some(status)) => return exit_code_of(status),
            Ok(None) => {}
            Err(_) => return 1,
        }
        // The earliest deadline wins: a head gone after a SIGTERM shortens the grace.
        let mut deadline = |grace: Duration| {
            let at = Instant::now() + grace;
            kill_at = Some(kill_at.map_or(at, |k| k.min(at)));
        };
        match orders.try_recv() {
            Ok(Order::Stop { grace, signal }) => {
                cmd.signal(signal);
                deadline(Duration::from_secs(u64::from(grace)));
            }
            Ok(Order::Signal { signal }) => cmd.signal(signal),
            Err(mpsc::TryRecvError::Disconnected) if !head_gone => {
                head_gone = true;
                cmd.signal(Signal::SIGTERM);
                deadline(HEAD_GONE_GRACE);
            }
            _ => {}
        }
        for signal in signals::take() {
            cmd.signal(signal);
            if signals::stops(signal) {
                deadline(signal_grace);
            }
        }
        if kill_at.is_some_and(|at| Instant::now() > at) {
            cmd.signal(Signal::SIGKILL);
        }
        std::thread::sleep(TICK);
    }
}

/// The head's orders, read from stdin on a thread of its own; the channel closes when the
/// head closes the step's stdin (or dies).
fn listen() -> Receiver<Order> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        byte_lines::for_each(std::io::stdin().lock(), |line| {
            byte_lines::protocol(line)
                .and_then(Order::parse)
                .is_none_or(|order| tx.send(order).is_ok())
        });
    });
    rx
}

/// The head's next order; `None` when it says stop, is gone, or a stop signal comes first.
fn next_order(orders: &Receiver<Order>) -> Option<Order> {
    loop {
        match orders.recv_timeout(TICK) {
            Ok(Order::Stop { .. }) | Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            // Meant for a running command; there is none yet.
            Ok(Order::Signal { .. }) => {}
            Ok(order) => return Some(order),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if signals::take().into_iter().any(signals::stops) {
            return None;
        }
    }
}

fn report(report: &Report) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", report.line()).and_then(|()| out.flush());
}
