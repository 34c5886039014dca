//! The groups [`super::ClusterOptions`] is made of, each resolved whole by one function of the
//! launcher (`commands::settings`) and read by the part of the bootstrap it is for. A group a
//! command has no flags for is its `Default`, which says "none of it": a run of `launch` does
//! not serve jobs nor grow, a cluster of `up` is never requeued.

use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use super::parse_ray_args;

/// A group's flags, as `(flag, value)`; `None` for a bare switch.
type Flags = Vec<(&'static str, Option<String>)>;

/// The switches that are on, then the values that are set.
fn flags<const S: usize, const V: usize>(
    switches: [(&'static str, bool); S],
    values: [(&'static str, Option<String>); V],
) -> Flags {
    let on = switches
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(flag, _)| (flag, None));
    let set = values
        .into_iter()
        .filter_map(|(flag, value)| value.map(|v| (flag, Some(v))));
    on.chain(set).collect()
}
use crate::handoff::signal_name::SignalName;

/// `--ready-timeout` when neither the command line nor a config file sets it.
pub(crate) const DEFAULT_READY_TIMEOUT: u32 = 180;
/// `--stop-grace` when neither the command line nor a config file sets it.
pub(crate) const DEFAULT_STOP_GRACE: u32 = 60;
/// Seconds of the stop grace the bootstrap keeps for itself after the command is killed:
/// stopping Ray on every node and keeping its logs takes about a second, so this is ample.
pub(crate) const TEARDOWN_MARGIN: u32 = 5;
/// `--worker-idle-timeout` of an elastic cluster when nothing sets it: a worker job whose node
/// ran nothing this long is given back.
pub(crate) const DEFAULT_WORKER_IDLE_TIMEOUT: u32 = 300;
/// `--max-pending-workers` when nothing sets it: worker jobs waiting in Slurm's queue at once.
pub(crate) const DEFAULT_MAX_PENDING_WORKERS: u32 = 2;
/// `--max-requeues` when neither the command line nor a config file sets it.
pub(crate) const DEFAULT_MAX_REQUEUES: u32 = 3;
/// How long the command gets after SIGTERM when no grace is set (`--stop-grace 0`): the signal
/// then comes from `scancel` or the user, and Slurm's own KillWait (30 s by default) follows.
pub(crate) const NO_GRACE_COMMAND_GRACE: u32 = 10;

/// What runs on the nodes: Ray or not, the command once or on every node, the setup before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub(crate) struct ProgramOptions {
    /// Do not start Ray.
    #[arg(long)]
    pub(crate) no_ray: bool,
    /// Run the command on every node (every task), without Ray.
    #[arg(long)]
    pub(crate) per_node: bool,
    /// Run this on every node before Ray starts or the command runs.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) setup: Option<String>,
    /// Seconds every node's setup may take (no limit without it).
    #[arg(long)]
    pub(crate) setup_timeout: Option<u32>,
    /// Leave per-node output lines unprefixed.
    #[arg(long)]
    pub(crate) no_prefix: bool,
}

impl ProgramOptions {
    pub(super) fn to_flags(&self) -> Flags {
        flags(
            [
                ("--no-ray", self.no_ray),
                ("--per-node", self.per_node),
                ("--no-prefix", self.no_prefix),
            ],
            [
                ("--setup", self.setup.clone()),
                ("--setup-timeout", self.setup_timeout.map(|s| s.to_string())),
            ],
        )
    }

    /// Whether Ray runs at all: not with `--no-ray`, nor with `--per-node`.
    pub(crate) fn with_ray(&self) -> bool {
        !self.no_ray && !self.per_node
    }
}

/// Which address family a node's IP is taken from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub(crate) enum IpFamily {
    /// IPv4 if the node has one, else IPv6.
    #[default]
    Auto,
    #[value(name = "4")]
    #[serde(rename = "4")]
    V4,
    #[value(name = "6")]
    #[serde(rename = "6")]
    V6,
}

impl IpFamily {
    /// The value as `--ip-family` takes it.
    pub(crate) fn as_arg(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::V4 => "4",
            Self::V6 => "6",
        }
    }
}

/// How the nodes come together and part: the address they meet on, how many to wait for and
/// how long, the block their ports come from, the warning before the time limit.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct NodeOptions {
    /// Network interface nodes take their IP from.
    #[arg(long)]
    pub(crate) interface: Option<String>,
    /// Address family of the nodes' IPs.
    #[arg(long, value_enum)]
    pub(crate) ip_family: IpFamily,
    /// Start the command once this many nodes (head included) have joined.
    #[arg(long)]
    pub(crate) min_nodes: Option<u32>,
    /// Seconds to wait for the cluster once every node's setup is done.
    #[arg(long)]
    pub(crate) ready_timeout: u32,
    /// First port of the block of Ray ports.
    #[arg(long)]
    pub(crate) port_base: Option<u16>,
    /// Seconds before the time limit at which Slurm signals the job.
    #[arg(long)]
    pub(crate) stop_grace: u32,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            interface: None,
            ip_family: IpFamily::Auto,
            min_nodes: None,
            ready_timeout: DEFAULT_READY_TIMEOUT,
            port_base: None,
            stop_grace: DEFAULT_STOP_GRACE,
        }
    }
}

impl NodeOptions {
    pub(super) fn to_flags(&self) -> Flags {
        flags(
            [],
            [
                ("--interface", self.interface.clone()),
                ("--ip-family", Some(self.ip_family.as_arg().to_owned())),
                ("--min-nodes", self.min_nodes.map(|n| n.to_string())),
                ("--ready-timeout", Some(self.ready_timeout.to_string())),
                ("--port-base", self.port_base.map(|p| p.to_string())),
                ("--stop-grace", Some(self.stop_grace.to_string())),
            ],
        )
    }

    /// How long the command gets after SIGTERM before it is killed: the stop grace less what
    /// teardown needs, so that Ray is stopped and the final state written before Slurm's limit.
    pub(crate) fn command_grace(&self) -> Duration {
        let secs = if self.stop_grace == 0 {
            NO_GRACE_COMMAND_GRACE
        } else {
            self.stop_grace.saturating_sub(TEARDOWN_MARGIN).max(1)
        };
        Duration::from_secs(u64::from(secs))
    }
}

/// What Ray is started with on every node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub(crate) struct RayOptions {
    /// Bytes of Ray object store per node.
    #[arg(long)]
    pub(crate) object_store_memory: Option<u64>,
    /// Extra `ray start` arguments for every node, one shell-quoted string.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) ray_args: Option<String>,
    /// Extra `ray start` arguments for the head only.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) ray_head_args: Option<String>,
    /// Start Ray without token authentication (anyone on the network may use the cluster).
    #[arg(long)]
    pub(crate) no_ray_auth: bool,
    /// Serve Ray's Prometheus metrics (its port takes no token).
    #[arg(long)]
    pub(crate) ray_metrics: bool,
}

impl RayOptions {
    pub(super) fn to_flags(&self) -> Flags {
        flags(
            [
                ("--no-ray-auth", self.no_ray_auth),
                ("--ray-metrics", self.ray_metrics),
            ],
            [
                (
                    "--object-store-memory",
                    self.object_store_memory.map(|b| b.to_string()),
                ),
                ("--ray-args", self.ray_args.clone()),
                ("--ray-head-args", self.ray_head_args.clone()),
            ],
        )
    }

    /// The GPUs Ray is told each node has: `--ray-args`' last `--num-gpus` (a cluster that
    /// Slurm gives no GPU resource for, while its nodes have GPUs), else Slurm's count.
    pub(crate) fn gpus(&self, slurm_gpus: u32) -> u32 {
        let words = self
            .ray_args
            .as_deref()
            .and_then(|t| parse_ray_args("--ray-args", t).ok())
            .unwrap_or_default();
        let mut gpus = slurm_gpus;
        for (i, w) in words.iter().enumerate() {
            let value = match w.strip_prefix("--num-gpus") {
                Some(rest) if rest.starts_with('=') => Some(&rest[1..]),
                Some("") => words.get(i + 1).map(String::as_str),
                _ => None,
            };
            if let Some(n) = value.and_then(|v| v.parse().ok()) {
                gpus = n;
            }
        }
        gpus
    }
}

/// A long run's (`launch`'s): what the command gets as the time limit nears, and whether the
/// job is put back in the queue when stopped.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct LongRunOptions {
    /// What the command gets when the time limit nears (Ray keeps running for the grace).
    #[arg(long, default_value_t)]
    pub(crate) signal: SignalName,
    /// Put the job back in the queue when the time limit, a preemption or a node failure
    /// stopped it.
    #[arg(long)]
    pub(crate) requeue: bool,
    /// With `requeue`: at most this many times (counted by Slurm's restart count).
    #[arg(long, default_value_t = DEFAULT_MAX_REQUEUES)]
    pub(crate) max_requeues: u32,
    /// Put the job back in the queue when the command fails, at most this many times (counted
    /// from the run's final state, apart from `max_requeues`).
    #[arg(long, default_value_t = 0)]
    pub(crate) restarts_on_error: u32,
}

impl LongRunOptions {
    /// The signal and the count left out at their defaults, so that scripts show them only
    /// where they matter.
    pub(super) fn to_flags(&self) -> Flags {
        flags(
            [("--requeue", self.requeue)],
            [
                (
                    "--signal",
                    Some(self.signal.to_string()).filter(|_| self.signal != SignalName::default()),
                ),
                (
                    "--max-requeues",
                    Some(self.max_requeues.to_string())
                        .filter(|_| self.max_requeues != DEFAULT_MAX_REQUEUES),
                ),
                (
                    "--restarts-on-error",
                    Some(self.restarts_on_error.to_string())
                        .filter(|_| self.restarts_on_error != 0),
                ),
            ],
        )
    }
}

impl Default for LongRunOptions {
    fn default() -> Self {
        Self {
            signal: SignalName::default(),
            requeue: false,
            max_requeues: DEFAULT_MAX_REQUEUES,
            restarts_on_error: 0,
        }
    }
}

/// A persistent cluster's (`up`'s): it serves jobs instead of running a command, and may grow
/// with worker jobs (an elastic cluster).
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct ServeOptions {
    /// Keep the cluster alive for jobs submitted to it (`rayslurm up`) instead of a command.
    #[arg(long = "serve")]
    pub(crate) on: bool,
    /// With `serve`: release the allocation after this many seconds without a job.
    #[arg(long)]
    pub(crate) idle_timeout: Option<u32>,
    /// With `serve`: grow with worker jobs up to this many nodes in all (an elastic cluster).
    #[arg(long)]
    pub(crate) max_nodes: Option<u32>,
    /// Seconds a worker job's node may run nothing before it is given back.
    #[arg(long, default_value_t = DEFAULT_WORKER_IDLE_TIMEOUT)]
    pub(crate) worker_idle_timeout: u32,
    /// Worker jobs waiting in Slurm's queue at once, at most.
    #[arg(long, default_value_t = DEFAULT_MAX_PENDING_WORKERS)]
    pub(crate) max_pending_workers: u32,
    /// Replace a worker job that ended early (node failure, preemption) even without demand.
    #[arg(long)]
    pub(crate) replace_failed: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            on: false,
            idle_timeout: None,
            max_nodes: None,
            worker_idle_timeout: DEFAULT_WORKER_IDLE_TIMEOUT,
            max_pending_workers: DEFAULT_MAX_PENDING_WORKERS,
            replace_failed: false,
        }
    }
}

impl ServeOptions {
    /// An elastic cluster's flags only with `--max-nodes` (none for a cluster of a fixed
    /// size), and those at their defaults left out.
    pub(super) fn to_flags(&self) -> Flags {
        let elastic = self.max_nodes.is_some();
        flags(
            [
                ("--serve", self.on),
                ("--replace-failed", elastic && self.replace_failed),
            ],
            [
                ("--idle-timeout", self.idle_timeout.map(|s| s.to_string())),
                ("--max-nodes", self.max_nodes.map(|n| n.to_string())),
                (
                    "--worker-idle-timeout",
                    Some(self.worker_idle_timeout.to_string()).filter(|_| {
                        elastic && self.worker_idle_timeout != DEFAULT_WORKER_IDLE_TIMEOUT
                    }),
                ),
                (
                    "--max-pending-workers",
                    Some(self.max_pending_workers.to_string()).filter(|_| {
                        elastic && self.max_pending_workers != DEFAULT_MAX_PENDING_WORKERS
                    }),
                ),
            ],
        )
    }
}

/// Every option of every group set, none at its default: the round trip of the flags
/// (`super::tests`) holds for each. A new field is set here, beside its group.
#[cfg(test)]
pub(super) fn every_option() -> super::ClusterOptions {
    super::ClusterOptions {
        program: ProgramOptions {
            no_ray: true,
            per_node: true,
            setup: Some("pip install -e . && echo 'ready'".into()),
            setup_timeout: Some(3600),
            no_prefix: true,
        },
        nodes: NodeOptions {
            interface: Some("ib0".into()),
            ip_family: IpFamily::V6,
            min_nodes: Some(2),
            ready_timeout: 7,
            port_base: Some(20_000),
            stop_grace: 0,
        },
        ray: RayOptions {
            object_store_memory: Some(100_000_000),
            ray_args: Some("--object-manager-port=0 'a b'".into()),
            ray_head_args: Some("--include-dashboard=false".into()),
            no_ray_auth: true,
            ray_metrics: true,
        },
        long_run: LongRunOptions {
            signal: SignalName(nix::sys::signal::Signal::SIGUSR1),
            requeue: true,
            max_requeues: 5,
            restarts_on_error: 2,
        },
        serve: ServeOptions {
            on: true,
            idle_timeout: Some(1800),
            max_nodes: Some(8),
            worker_idle_timeout: 60,
            max_pending_workers: 1,
            replace_failed: true,
        },
        container: crate::handoff::container::ContainerOptions {
            container_image: Some("/images/a b.sqsh".into()),
            container_mounts: vec!["/data:/mnt/data:ro".parse().unwrap()],
            container_workdir: Some("/mnt/data".into()),
            container_runtime: crate::containers::ContainerRuntime::named("apptainer"),
        },
    }
}
