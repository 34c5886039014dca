//! What every node's bootstrap shares, whatever its role: the log line, this node's IP, the
//! checks and notes around Ray's memory, and the pace of every loop.

use std::fmt::Display;
use std::net::IpAddr;
use std::time::Duration;

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::net;
use crate::handoff::cluster::ClusterOptions;

/// How often loops look at children, signals and readiness.
pub(crate) const TICK: Duration = Duration::from_millis(50);
/// How often the liveness of Ray's raylet is checked while the command runs.
pub(crate) const LIVENESS_EVERY: Duration = Duration::from_secs(1);
/// SIGTERM to SIGKILL for Ray's own processes at teardown.
pub(crate) const RAY_STOP_GRACE: Duration = Duration::from_millis(500);

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
pub(crate) fn memory_note() -> String {
    peak_memory_kib().map_or_else(String::new, |k| {
        format!(" (bootstrap peak memory {:.1} MB)", k as f64 / 1024.0)
    })
}

/// This node's IP, as `--interface`/`--ip-family` ask.
pub(crate) fn node_ip(
    alloc: &Allocation,
    cluster: &ClusterOptions,
) -> Result<IpAddr, net::NetError> {
    let candidates = net::local_candidates()?;
    net::choose(
        &alloc.node,
        &candidates,
        cluster.nodes.interface.as_deref(),
        cluster.nodes.ip_family,
        &net::resolve(&alloc.node),
    )
}

/// Warns when /dev/shm cannot hold the object store: Ray then falls back to slow disk.
pub(crate) fn check_shm(node: &str, object_store_memory: Option<u64>) {
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
