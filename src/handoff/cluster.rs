//! What the bootstrap is told about the cluster to build: one type, [`ClusterOptions`], that the
//! launcher resolves from its flags and config files and the bootstrap parses back from its
//! command line. [`ClusterOptions::to_flags`] is the one serializer and clap's derive the one
//! parser; a round-trip test keeps them in step. The clap derive stays here, beside the
//! serializer, as the bootstrap's wire format (see `bootstrap_args`).

use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::{UsageError, show};
use crate::handoff::container::ContainerOptions;
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

/// Which address family a node's IP is taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub(crate) enum IpFamily {
    /// IPv4 if the node has one, else IPv6.
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

/// The cluster the bootstrap builds, with every default already applied by the launcher.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct ClusterOptions {
    /// Do not start Ray.
    #[arg(long)]
    pub(crate) no_ray: bool,
    /// Run the command on every node (every task), without Ray.
    #[arg(long)]
    pub(crate) per_node: bool,
    /// Run this on every node before Ray starts or the command runs.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) setup: Option<String>,
    /// Leave per-node output lines unprefixed.
    #[arg(long)]
    pub(crate) no_prefix: bool,
    /// Keep the cluster alive for jobs submitted to it (`rayslurm up`) instead of a command.
    #[arg(long)]
    pub(crate) serve: bool,
    /// With `serve`: release the allocation after this many seconds without a job.
    #[arg(long)]
    pub(crate) idle_timeout: Option<u32>,
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
    /// Seconds every node's setup may take (no limit without it).
    #[arg(long)]
    pub(crate) setup_timeout: Option<u32>,
    /// Bytes of Ray object store per node.
    #[arg(long)]
    pub(crate) object_store_memory: Option<u64>,
    /// Extra `ray start` arguments for every node, one shell-quoted string.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) ray_args: Option<String>,
    /// Extra `ray start` arguments for the head only.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) ray_head_args: Option<String>,
    /// First port of the block of Ray ports.
    #[arg(long)]
    pub(crate) port_base: Option<u16>,
    /// Seconds before the time limit at which Slurm signals the job.
    #[arg(long)]
    pub(crate) stop_grace: u32,
    /// Start Ray without token authentication (anyone on the network may use the cluster).
    #[arg(long)]
    pub(crate) no_ray_auth: bool,
    /// Serve Ray's Prometheus metrics (its port takes no token).
    #[arg(long)]
    pub(crate) ray_metrics: bool,
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
    /// The image every program of the run runs in, if any.
    #[command(flatten)]
    pub(crate) container: ContainerOptions,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            no_ray: false,
            per_node: false,
            setup: None,
            no_prefix: false,
            serve: false,
            idle_timeout: None,
            interface: None,
            ip_family: IpFamily::Auto,
            min_nodes: None,
            ready_timeout: DEFAULT_READY_TIMEOUT,
            setup_timeout: None,
            object_store_memory: None,
            ray_args: None,
            ray_head_args: None,
            port_base: None,
            stop_grace: DEFAULT_STOP_GRACE,
            no_ray_auth: false,
            ray_metrics: false,
            signal: SignalName::default(),
            requeue: false,
            max_requeues: DEFAULT_MAX_REQUEUES,
            max_nodes: None,
            worker_idle_timeout: DEFAULT_WORKER_IDLE_TIMEOUT,
            max_pending_workers: DEFAULT_MAX_PENDING_WORKERS,
            replace_failed: false,
            container: ContainerOptions::default(),
        }
    }
}

impl ClusterOptions {
    /// The GPUs Ray is told each node has: `--ray-args`' last `--num-gpus` (a cluster that
    /// Slurm gives no GPU resource for, while its nodes have GPUs), else Slurm's count.
    pub(crate) fn ray_gpus(&self, slurm_gpus: u32) -> u32 {
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

    /// The options from their flags as words ([`joined_words`] of [`Self::to_flags`]); an
    /// error is clap's first line (`unexpected argument '--x' found`).
    pub(crate) fn from_words(words: &[String]) -> Result<Self, String> {
        #[derive(clap::Parser)]
        struct Words {
            #[command(flatten)]
            cluster: ClusterOptions,
        }
        let argv = std::iter::once("cluster-options").chain(words.iter().map(String::as_str));
        <Words as clap::Parser>::try_parse_from(argv)
            .map(|w| w.cluster)
            .map_err(|e| {
                let text = e.to_string();
                let first = text.lines().next().unwrap_or_default();
                first.trim_start_matches("error: ").to_owned()
            })
    }

    /// The flags that carry these options, as `(flag, value)`; `None` for a bare switch.
    pub(crate) fn to_flags(&self) -> Vec<(&'static str, Option<String>)> {
        let Self {
            no_ray,
            per_node,
            setup,
            no_prefix,
            serve,
            idle_timeout,
            interface,
            ip_family,
            min_nodes,
            ready_timeout,
            setup_timeout,
            object_store_memory,
            ray_args,
            ray_head_args,
            port_base,
            stop_grace,
            no_ray_auth,
            ray_metrics,
            signal,
            requeue,
            max_requeues,
            // An elastic cluster's: see `elastic_flags`.
            max_nodes: _,
            worker_idle_timeout: _,
            max_pending_workers: _,
            replace_failed: _,
            container: _,
        } = self;
        let mut flags = Vec::new();
        for (set, flag) in [
            (*no_ray, "--no-ray"),
            (*per_node, "--per-node"),
            (*no_prefix, "--no-prefix"),
            (*serve, "--serve"),
            (*no_ray_auth, "--no-ray-auth"),
            (*ray_metrics, "--ray-metrics"),
            (*requeue, "--requeue"),
        ] {
            if set {
                flags.push((flag, None));
            }
        }
        let optional = [
            ("--setup", setup.clone()),
            ("--idle-timeout", idle_timeout.map(|s| s.to_string())),
            ("--interface", interface.clone()),
            ("--ip-family", Some(ip_family.as_arg().to_owned())),
            ("--min-nodes", min_nodes.map(|n| n.to_string())),
            ("--ready-timeout", Some(ready_timeout.to_string())),
            ("--setup-timeout", setup_timeout.map(|s| s.to_string())),
            (
                "--object-store-memory",
                object_store_memory.map(|b| b.to_string()),
            ),
            ("--ray-args", ray_args.clone()),
            ("--ray-head-args", ray_head_args.clone()),
            ("--port-base", port_base.map(|p| p.to_string())),
            ("--stop-grace", Some(stop_grace.to_string())),
            // Left out at their defaults, so that scripts show them only where they matter.
            (
                "--signal",
                Some(signal.to_string()).filter(|_| *signal != SignalName::default()),
            ),
            (
                "--max-requeues",
                Some(max_requeues.to_string()).filter(|_| *max_requeues != DEFAULT_MAX_REQUEUES),
            ),
        ];
        flags.extend(
            optional
                .into_iter()
                .filter_map(|(flag, value)| value.map(|v| (flag, Some(v)))),
        );
        // An elastic cluster's and the image's (`ContainerOptions::to_flags`) last.
        flags.extend(
            self.elastic_flags()
                .into_iter()
                .chain(self.container.to_flags()),
        );
        flags
    }

    /// An elastic cluster's flags (none for a cluster of a fixed size); the rest at their
    /// defaults are left out.
    fn elastic_flags(&self) -> Vec<(&'static str, Option<String>)> {
        let Some(max_nodes) = self.max_nodes else {
            return Vec::new();
        };
        let mut flags = vec![("--max-nodes", Some(max_nodes.to_string()))];
        if self.worker_idle_timeout != DEFAULT_WORKER_IDLE_TIMEOUT {
            flags.push((
                "--worker-idle-timeout",
                Some(self.worker_idle_timeout.to_string()),
            ));
        }
        if self.max_pending_workers != DEFAULT_MAX_PENDING_WORKERS {
            flags.push((
                "--max-pending-workers",
                Some(self.max_pending_workers.to_string()),
            ));
        }
        if self.replace_failed {
            flags.push(("--replace-failed", None));
        }
        flags
    }

    /// The options as the workers get them: head-only `ray start` flags (dashboard,
    /// autoscaler, ...) would make a worker's `ray start` fail.
    pub(crate) fn for_workers(&self) -> Self {
        Self {
            ray_head_args: None,
            ..self.clone()
        }
    }

    /// Whether Ray runs at all: not with `--no-ray`, nor with `--per-node`.
    pub(crate) fn with_ray(&self) -> bool {
        !self.no_ray && !self.per_node
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

/// Flags as words for a command line: `--flag=value` (one word each, so a value that starts
/// with `-` is never taken for a flag) or the bare `--flag`.
pub(crate) fn joined_words(flags: Vec<(&'static str, Option<String>)>) -> Vec<String> {
    flags
        .into_iter()
        .map(|(flag, value)| match value {
            Some(v) => format!("{flag}={v}"),
            None => flag.to_owned(),
        })
        .collect()
}

/// Splits `--ray-args` (or `--ray-head-args`, named by `flag`) into words as a shell would.
pub(crate) fn parse_ray_args(flag: &str, text: &str) -> Result<Vec<String>, UsageError> {
    let words = shlex::split(text).ok_or_else(|| {
        UsageError::new(format!("{flag} {} has an unclosed quote", show(text))).hint(format!(
            "quote it as you would in a shell, e.g. `{flag} \"--object-manager-port=0\"`"
        ))
    })?;
    if let Some(w) = words.iter().find(|w| w.contains('\n')) {
        return Err(UsageError::new(format!(
            "{flag} word {} contains a newline",
            show(w)
        )));
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_option() -> ClusterOptions {
        ClusterOptions {
            no_ray: true,
            per_node: true,
            setup: Some("pip install -e . && echo 'ready'".into()),
            no_prefix: true,
            serve: true,
            idle_timeout: Some(1800),
            interface: Some("ib0".into()),
            ip_family: IpFamily::V6,
            min_nodes: Some(2),
            ready_timeout: 7,
            setup_timeout: Some(3600),
            object_store_memory: Some(100_000_000),
            ray_args: Some("--object-manager-port=0 'a b'".into()),
            ray_head_args: Some("--include-dashboard=false".into()),
            port_base: Some(20_000),
            stop_grace: 0,
            no_ray_auth: true,
            ray_metrics: true,
            signal: SignalName(nix::sys::signal::Signal::SIGUSR1),
            requeue: true,
            max_requeues: 5,
            max_nodes: Some(8),
            worker_idle_timeout: 60,
            max_pending_workers: 1,
            replace_failed: true,
            container: ContainerOptions {
                container_image: Some("/images/a b.sqsh".into()),
                container_mounts: vec!["/data:/mnt/data:ro".parse().unwrap()],
                container_workdir: Some("/mnt/data".into()),
                container_runtime: crate::containers::ContainerRuntime::named("apptainer"),
            },
        }
    }

    fn parse(words: Vec<String>) -> ClusterOptions {
        ClusterOptions::from_words(&words).expect("parses")
    }

    #[test]
    fn words_it_does_not_know_are_refused_by_name() {
        let err = ClusterOptions::from_words(&["--no-such-flag".to_owned()]).unwrap_err();
        assert_eq!(err, "unexpected argument '--no-such-flag' found");
    }

    #[test]
    fn ray_args_num_gpus_is_what_ray_is_told() {
        let with = |args: Option<&str>| {
            let mut o = every_option();
            o.ray_args = args.map(str::to_owned);
            o.ray_gpus(2)
        };
        assert_eq!(with(None), 2);
        assert_eq!(with(Some("--num-gpus=4")), 4);
        assert_eq!(with(Some("--num-gpus 1 --resources '{}'")), 1);
        assert_eq!(with(Some("--num-gpus=x --num-cpus=3")), 2);
    }

    #[test]
    fn flags_round_trip_as_the_script_and_the_worker_step_write_them() {
        for options in [every_option(), ClusterOptions::default()] {
            let separate: Vec<String> = options
                .to_flags()
                .into_iter()
                .flat_map(|(f, v)| std::iter::once(f.to_owned()).chain(v))
                .collect();
            assert_eq!(parse(separate), options);
            assert_eq!(parse(joined_words(options.to_flags())), options);
        }
    }

    /// Regression: `--ray-args --include-dashboard=false` reached the workers, whose
    /// `ray start` refuses head-only flags, and failed every job.
    #[test]
    fn head_only_ray_args_never_reach_the_workers() {
        let words = joined_words(every_option().for_workers().to_flags()).join(" ");
        assert!(
            words.contains("--ray-args=--object-manager-port=0"),
            "{words}"
        );
        assert!(!words.contains("dashboard"), "{words}");
    }

    #[test]
    fn the_command_gets_the_grace_less_the_teardown_margin() {
        let with = |stop_grace| ClusterOptions {
            stop_grace,
            ..ClusterOptions::default()
        };
        assert_eq!(with(60).command_grace(), Duration::from_secs(55));
        assert_eq!(with(3).command_grace(), Duration::from_secs(1));
        assert_eq!(with(0).command_grace(), Duration::from_secs(10));
    }
}
