//! Inside the allocation: the same binary, started by the sbatch script on the head node
//! (`rayslurm bootstrap`) and by one `srun` step on every other node (`--worker`).
//!
//! The head starts Ray and, at the same moment, the worker step; each worker starts Ray
//! pointing at the head (Ray waits for the head's GCS by itself) and reports when its node is
//! registered. The command starts as soon as enough nodes have joined, and when it ends every
//! node stops the Ray processes it started (found by a mark in their environment), and no others.
//! It runs on other hosts than the launcher, with another environment and signal model, and
//! uses only `handoff` (its arguments, the environment it sets, the final state it writes),
//! `slurm`, `sys` and `error`.

mod allocation;
mod byte_lines;
mod head;
mod heartbeat;
mod kept_logs;
mod lease;
mod marked;
mod net;
mod outcome;
mod ports;
mod protocol;
mod rank_env;
mod ray_auth;
mod ray_node;
mod requeue;
mod setup;
mod signals;
mod task;
mod user_command;
mod watchdog;
mod worker;
mod worker_step;

use std::collections::HashMap;
use std::fmt::Display;
use std::net::IpAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::cluster::ClusterOptions;

pub(crate) use allocation::Allocation;

/// How often loops look at children, signals and readiness.
const TICK: Duration = Duration::from_millis(50);
/// How often the liveness of Ray's raylet is checked while the command runs.
const LIVENESS_EVERY: Duration = Duration::from_secs(1);
/// SIGTERM to SIGKILL for Ray's own processes at teardown.
const RAY_STOP_GRACE: Duration = Duration::from_millis(500);
/// The line a worker prints on stdout once its node has joined.
const READY_PREFIX: &str = "RAYSLURM-READY";

pub(crate) fn run(args: &BootstrapArgs) -> Result<ExitCode> {
    if let Some(list) = &args.trust_unverified_owner {
        crate::sys::private_tree::accept_owners(
            crate::sys::private_tree::parse_owner_list(list).map_err(anyhow::Error::msg)?,
        );
    }
    let env: HashMap<String, String> = std::env::vars().collect();
    let alloc = Allocation::from_env(&env, args.requested_gpus)?;
    if args.watchdog {
        return Ok(exit_code(watchdog::run(args, &alloc)));
    }
    signals::install()?;
    let code = if args.worker && args.cluster.per_node {
        task::run(args, &alloc, &env)
    } else if args.worker {
        worker::run(args, &alloc, &env)
    } else {
        head::run(args, &alloc)
    };
    Ok(exit_code(code))
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}

/// A log line from the bootstrap: time, node, message, on stderr (the job's log).
pub(crate) fn say(node: &str, message: impl Display) {
    eprintln!(
        "[rayslurm {} {node}] {message}",
        chrono::Local::now().format("%H:%M:%S%.3f")
    );
}

/// This process's peak resident memory in KiB (`VmHWM`), for the closing log line.
fn peak_memory_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The closing log line's note on the bootstrap's own memory.
fn memory_note() -> String {
    peak_memory_kib().map_or_else(String::new, |k| {
        format!(" (bootstrap peak memory {:.1} MB)", k as f64 / 1024.0)
    })
}

/// This node's IP, as `--interface`/`--ip-family` ask.
fn node_ip(alloc: &Allocation, cluster: &ClusterOptions) -> Result<IpAddr, net::NetError> {
    let candidates = net::local_candidates()?;
    net::choose(
        &alloc.node,
        &candidates,
        cluster.interface.as_deref(),
        cluster.ip_family,
        &net::resolve(&alloc.node),
    )
}

/// Warns when /dev/shm cannot hold the object store: Ray then falls back to slow disk.
fn check_shm(node: &str, object_store_memory: Option<u64>) {
    let Ok(stat) = nix::sys::statvfs::statvfs("/dev/shm") else {
        say(
            node,
            "warning: /dev/shm is missing; Ray's object store will use slow disk",
        );
        return;
    };
    let free = stat.blocks_available() * stat.fragment_size();
    let wanted = object_store_memory.unwrap_or(2 << 30);
    if free < wanted {
        say(
            node,
            format!(
                "warning: /dev/shm has {} MB free, less than the {} MB object store; Ray falls back to slow disk (pass a smaller --object-store-memory, or give the container a larger /dev/shm)",
                free >> 20,
                wanted >> 20
            ),
        );
    }
}
