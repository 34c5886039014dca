//! A worker node: starts Ray pointing at the head, says when the node has joined, then keeps
//! watch until the head's step is stopped (SIGTERM from srun) or Ray dies under it. A raylet
//! that Ray ended because the node was drained ([`drained`]) is no failure: the node waits for
//! the run's end.

mod drained;
mod elastic;
mod ray_start;

pub(super) use elastic::run as run_elastic;

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::in_image;
use crate::bootstrap::kept_logs::{self, KEEP_LINE};
use crate::bootstrap::marked::{self, RunMark};
use crate::bootstrap::node::{LIVENESS_EVERY, RAY_STOP_GRACE, TICK, memory_note, node_ip, say};
use crate::bootstrap::protocol::{READY_PREFIX, Report};
use crate::bootstrap::ray_auth::RayAuth;
use crate::bootstrap::ray_node::TempRoot;
use crate::bootstrap::user_code::command::Output;
use crate::bootstrap::user_code::env::{attempt_env, setup_env_before_ray};
use crate::bootstrap::user_code::setup::{self, setup_failed};
use crate::bootstrap::workdir::NodeWorkdir;
use crate::bootstrap::{byte_lines, heartbeat, signals};
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::slurm::env as slurm_env;

/// Runs the worker's part; the exit code tells the head's srun whether this node failed.
pub(super) fn run(args: &BootstrapArgs, alloc: &Allocation, env: &HashMap<String, String>) -> i32 {
    let node = alloc.node.clone();
    let rank = env
        .get(slurm_env::SLURM_PROCID)
        .and_then(|p| p.parse::<u32>().ok())
        .map_or(1, |p| p + 1);
    let mark = args
        .run_mark
        .clone()
        .unwrap_or_else(|| format!("{}-worker-{}", alloc.job_id, std::process::id()));
    heartbeat::start_beating(node.clone());
    let head = watch_stdin();
    let told_to_stop = &head.stop;
    let mut temp = None;
    let workdir = match NodeWorkdir::prepare(args, alloc) {
        Err(why) => {
            say(&node, format!("error: {why}"));
            heartbeat::say_gone(&node);
            return 1;
        }
        Ok(made) => made,
    };
    let auth = RayAuth::of_worker(args, alloc);
    let started = start(args, alloc, rank, &mark, &auth, told_to_stop, &mut temp);
    let run = RunMark {
        mark,
        temp_root: temp.as_ref().map(|t: &TempRoot| t.path.clone()),
    };
    let code = match started {
        Ok(()) => watch(args, &node, &run, told_to_stop, true),
        Err(message) => {
            say(&node, format!("error: {message}"));
            1
        }
    };
    marked::stop_all(&run, RAY_STOP_GRACE);
    in_image::remove_container(&node);
    if let Some(temp) = temp {
        // This node failed, or the head says the run did.
        if code != 0 || head.keep_logs.load(Ordering::SeqCst) {
            kept_logs::keep_saying(
                &temp,
                args.ray_logs_dir.as_deref(),
                alloc.restart_count,
                &node,
            );
        }
        temp.remove();
    }
    if let Some(workdir) = workdir {
        workdir.leave();
    }
    heartbeat::say_gone(&node);
    say(
        &node,
        format!("worker done, exit code {code}{}", memory_note()),
    );
    code
}

/// Starts Ray (unless `--no-ray`) and prints the ready line.
fn start(
    args: &BootstrapArgs,
    alloc: &Allocation,
    rank: u32,
    mark: &str,
    auth: &RayAuth,
    told_to_stop: &AtomicBool,
    temp_slot: &mut Option<TempRoot>,
) -> Result<(), String> {
    let node = &alloc.node;
    let c = &args.cluster;
    in_image::check(node, !c.program.no_ray)?;
    let ip = node_ip(alloc, c).map_err(|e| e.to_string())?;
    if let Some(setup) = &c.program.setup {
        let head_ip = args
            .head_address
            .as_deref()
            .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
            .map_or(ip, |a| a.ip());
        let mut env = setup_env_before_ray(alloc, head_ip, args.master_port.unwrap_or(0));
        env.extend(attempt_env(alloc, args.run_dir.as_deref()));
        let output = Output::Prefixed(format!("[setup {node}] "));
        let stop = || told_to_stop.load(Ordering::SeqCst);
        let code = setup::run(node, setup, &env, &output, &stop);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{}",
            Report::Setup {
                node: node.clone(),
                code
            }
            .line()
        )
        .and_then(|()| out.flush());
        if code != 0 {
            return Err(setup_failed(node, code));
        }
    }
    if !c.program.no_ray {
        let head = args
            .head_address
            .as_deref()
            .ok_or("no --head-address was given to the worker")?;
        let to = ray_start::Joining {
            head,
            ip,
            mark,
            auth,
        };
        ray_start::start_with_tries(alloc, c, &to, told_to_stop, temp_slot)?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{READY_PREFIX} {rank} {node} {ip}")
        .and_then(|_| out.flush())
        .map_err(|e| format!("cannot tell the head that node {node} joined: {e}"))
}

/// What the head says through the worker step's stdin.
struct HeadSays {
    /// Set at end-of-file: the head says stop.
    stop: Arc<AtomicBool>,
    /// Set by [`KEEP_LINE`] (before the end-of-file): the run failed, keep Ray's logs.
    keep_logs: Arc<AtomicBool>,
}

fn watch_stdin() -> HeadSays {
    let says = HeadSays {
        stop: Arc::new(AtomicBool::new(false)),
        keep_logs: Arc::new(AtomicBool::new(false)),
    };
    let (stop, keep_logs) = (Arc::clone(&says.stop), Arc::clone(&says.keep_logs));
    std::thread::spawn(move || {
        byte_lines::for_each(std::io::stdin().lock(), |line| {
            if byte_lines::text(line) == KEEP_LINE {
                keep_logs.store(true, Ordering::SeqCst);
            }
            true
        });
        stop.store(true, Ordering::SeqCst);
    });
    says
}

/// Waits until the head says stop or a stop signal comes, watching that Ray stays alive.
/// Slurm's time warning stops it only where `time_warning_stops`: an elastic worker job is
/// drained by the head before its end, and ends with it.
fn watch(
    args: &BootstrapArgs,
    node: &str,
    run: &RunMark,
    told_to_stop: &AtomicBool,
    time_warning_stops: bool,
) -> i32 {
    let mut last_check = Instant::now();
    let mut watching = !args.cluster.program.no_ray;
    loop {
        let stops = |s: &nix::sys::signal::Signal| {
            signals::stops(*s) && (time_warning_stops || *s != signals::TIME_WARNING)
        };
        if told_to_stop.load(Ordering::SeqCst) || signals::take().iter().any(stops) {
            return 0;
        }
        if watching && last_check.elapsed() >= LIVENESS_EVERY {
            last_check = Instant::now();
            if !marked::alive_named(run, "raylet") {
                if let Some(reason) = run.temp_root.as_deref().and_then(drained::reason) {
                    say(
                        node,
                        format!(
                            "Ray drained node {node} ({reason}) and ended its raylet; the node waits for the run's end"
                        ),
                    );
                    watching = false;
                    continue;
                }
                say(
                    node,
                    format!("error: Ray's raylet on node {node} stopped unexpectedly"),
                );
                return 1;
            }
        }
        std::thread::sleep(Duration::max(TICK, Duration::from_millis(100)));
    }
}
