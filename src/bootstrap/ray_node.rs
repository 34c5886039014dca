//! One `ray start` on this node: its arguments, its private temp root, and its output.
//!
//! `ray start` (without `--block`) returns once the node is registered with the GCS, so its
//! exit code is the readiness signal: no polling, no sleeps, no Python started twice. Inside an
//! image that pyxis runs, `ray start` is a Slurm step of its own, which must outlive it (Slurm
//! ends what a step leaves behind): its exit code is then written to a file in the temp root,
//! and the step kept alive until teardown stops it.

use std::fs::File;
use std::net::IpAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use anyhow::{Context, Result};

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::in_image;
use crate::bootstrap::node::{check_shm, say};
use crate::bootstrap::ports::{self, HeldRayPorts, RayPorts};
use crate::bootstrap::ray_auth::RayAuth;
use crate::bootstrap::ray_version;
use crate::bootstrap::user_code::env::node_env;
use crate::handoff::cluster::ClusterOptions;
use crate::handoff::cluster::parse_ray_args;
use crate::handoff::elastic::{ELASTIC_WORKER, RAY_CLOUD_INSTANCE_ID, RAY_NODE_MARKET_TYPE};
use crate::handoff::job_env;
use crate::sys::process::Cmd;

/// Ray's temp root for this attempt of this job on this node: short (Unix sockets live below it
/// and must stay under 107 bytes), private to the user and the attempt, and removed at the end.
///
/// `/tmp` is everyone's: a name there may have been made by another user (job ids are
/// sequential, so they can be guessed), or be a link to somewhere else. So the root is always
/// new: made by `mkdir` with mode 0700, never one found there; when the name is taken, a random
/// suffix gives another. The attempt is in the name, so that a watchdog left from an earlier
/// attempt on this node never takes the next attempt's Ray for its own; the node's bootstrap
/// tells its watchdog which root it made.
pub(crate) struct TempRoot {
    pub(crate) path: PathBuf,
}

impl TempRoot {
    /// The first name tried for the attempt's temp root: `/tmp/rs{uid}-{job}.{restart}`.
    pub(crate) fn first_name(job_id: &str, restart: u32) -> PathBuf {
        let uid = nix::unistd::getuid();
        PathBuf::from(format!("/tmp/rs{uid}-{job_id}.{restart}"))
    }

    pub(crate) fn create(job_id: &str, restart: u32) -> Result<Self> {
        Self::create_at(&Self::first_name(job_id, restart), random_suffix)
    }

    /// Makes `first`, or `first-SUFFIX` with a fresh suffix while the name is taken.
    pub(crate) fn create_at(first: &Path, mut suffix: impl FnMut() -> String) -> Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let mut path = first.to_owned();
        for _ in 0..16 {
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    path = PathBuf::from(format!("{}-{}", first.display(), suffix()));
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("cannot create Ray's temp dir `{}`", path.display())
                    });
                }
            }
        }
        anyhow::bail!(
            "cannot create Ray's temp dir: `{}` and 16 names beside it are taken; remove what is left of earlier jobs in /tmp",
            first.display()
        )
    }

    /// [`TempRoot::create`] for this attempt, naming in the log a first name that was taken.
    fn made_for(alloc: &Allocation) -> Result<Self, String> {
        let made =
            Self::create(&alloc.job_id, alloc.restart_count).map_err(|e| format!("{e:#}"))?;
        let first = Self::first_name(&alloc.job_id, alloc.restart_count);
        if made.path != first {
            say(
                &alloc.node,
                format!(
                    "`{}` was there already (another user's, a link, or left from an earlier job): Ray's temp root is `{}`",
                    first.display(),
                    made.path.display()
                ),
            );
        }
        Ok(made)
    }

    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }

    pub(crate) fn start_log(&self) -> PathBuf {
        self.path.join("rayslurm-ray-start.out")
    }

    /// Where `ray start`'s exit code is written when it runs in a step that outlives it.
    fn start_code(&self) -> PathBuf {
        self.path.join("rayslurm-ray-start.code")
    }
}

/// Six random hex digits (from the kernel; the time and the process id if it cannot say).
pub(crate) fn random_suffix() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 3];
    let read = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        bytes = (nanos ^ std::process::id()).to_le_bytes()[..3]
            .try_into()
            .unwrap_or_default();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a node tells Ray about itself.
pub(crate) struct RayNodeSpec<'a> {
    pub(crate) head_address: Option<&'a str>,
    pub(crate) ip: IpAddr,
    pub(crate) ports: RayPorts,
    pub(crate) num_cpus: Option<u32>,
    pub(crate) num_gpus: u32,
    /// Ray's `memory` resource, in bytes.
    pub(crate) memory: Option<u64>,
    pub(crate) object_store_memory: Option<u64>,
    pub(crate) extra: &'a [String],
}

impl RayNodeSpec<'_> {
    pub(crate) fn args(&self, temp: &Path) -> Vec<String> {
        let mut args = vec!["start".to_owned()];
        match self.head_address {
            None => args.push("--head".to_owned()),
            Some(addr) => args.push(format!("--address={addr}")),
        }
        args.push(format!("--node-ip-address={}", self.ip));
        args.extend(self.ports.ray_flags());
        if let Some(c) = self.num_cpus {
            args.push(format!("--num-cpus={c}"));
        }
        args.push(format!("--num-gpus={}", self.num_gpus));
        if let Some(b) = self.memory {
            args.push(format!("--memory={b}"));
        }
        if let Some(b) = self.object_store_memory {
            args.push(format!("--object-store-memory={b}"));
        }
        args.push(format!("--temp-dir={}", temp.display()));
        args.push("--disable-usage-stats".to_owned());
        args.extend(self.extra.iter().cloned());
        args
    }
}

/// A running `ray start`.
pub(crate) struct RayStart {
    child: Child,
    pub(crate) cmd: Cmd,
    log: PathBuf,
    /// Where the exit code is written, when `ray start` runs in a step that outlives it.
    code_file: Option<PathBuf>,
}

/// Runs `ray start` (its words after the file's path), writes its exit code to the file, and
/// stays, as long as it succeeded, until it is stopped: the daemons it started are its step's.
const RAY_START_IN_STEP: &str = r#"f=$1; shift; "$@"; rc=$?; echo "$rc" > "$f"; [ "$rc" -eq 0 ] || exit "$rc"; while sleep 3600; do :; done"#;

impl RayStart {
    /// Starts `ray start`, marked so that teardown finds every process it leaves behind.
    pub(crate) fn spawn(
        spec: &RayNodeSpec<'_>,
        temp: &TempRoot,
        mark: &str,
        env: &[(&str, String)],
    ) -> Result<Self> {
        let code_file = in_image::in_steps().then(|| temp.start_code());
        let program = match &code_file {
            Some(file) => Cmd::new("sh")
                .args(["-c", RAY_START_IN_STEP, "sh"])
                .arg(file)
                .arg("ray"),
            None => Cmd::new("ray"),
        };
        let mut cmd = program
            .args(spec.args(&temp.path))
            .env(job_env::RUN_MARK, mark)
            .env(job_env::RAY_TMPDIR, &temp.path)
            .env(job_env::TMPDIR, &temp.path);
        for (k, v) in env {
            cmd = cmd.env(k, v);
        }
        let log = temp.start_log();
        let out =
            File::create(&log).with_context(|| format!("cannot write `{}`", log.display()))?;
        // The token's variable goes before the wrapping, which copies the environment.
        let mut command = cmd.command();
        command.env_remove(job_env::RAY_AUTH_TOKEN);
        let child = in_image::wrap(command)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0)
            .spawn()
            .map_err(|e| cmd.spawn_error(e))?;
        Ok(Self {
            child,
            cmd,
            log,
            code_file,
        })
    }

    /// `ray start`'s exit status once it has ended (in a step that outlives it: once its code
    /// is written, or the step ended without one, as when the image could not start).
    pub(crate) fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        use std::os::unix::process::ExitStatusExt;
        let Some(file) = &self.code_file else {
            return self.child.try_wait();
        };
        let written = std::fs::read_to_string(file).ok();
        match written.as_deref().map(str::trim).map(str::parse::<i32>) {
            Some(Ok(code)) => Ok(Some(std::process::ExitStatus::from_raw(code << 8))),
            _ => self.child.try_wait(),
        }
    }

    /// Stops `ray start` and whatever it runs in its process group, and reaps it: a try that
    /// is over although `ray start` still waits.
    pub(crate) fn kill(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }

    /// The last lines `ray start` printed, for an error message.
    pub(crate) fn output_tail(&self, lines: usize) -> String {
        // Lossy: one byte that is not UTF-8 must not hide the whole message.
        let bytes = std::fs::read(&self.log).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// Ray's share of the node's memory: its object store (Ray's own default share of the
/// allocation unless `--object-store-memory` says) and its `memory` resource, the rest. Ray
/// would otherwise take the whole machine's memory for both, schedule by it, and see its tasks
/// killed by the site's memory limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemorySplit {
    /// The job's memory on this node, where Slurm tracks it.
    allocated: Option<u64>,
    pub(crate) ray: Option<u64>,
    pub(crate) object_store: Option<u64>,
}

/// Ray's default share of a node's memory for its object store.
const OBJECT_STORE_SHARE: f64 = 0.3;

impl MemorySplit {
    pub(crate) fn of(allocated: Option<u64>, object_store: Option<u64>) -> Self {
        let Some(total) = allocated else {
            return Self {
                allocated,
                ray: None,
                object_store,
            };
        };
        let store = object_store.unwrap_or((total as f64 * OBJECT_STORE_SHARE) as u64);
        Self {
            allocated,
            // An object store as large as the allocation leaves Ray nothing to give: Ray's own
            // check then says what is wrong.
            ray: total.checked_sub(store).filter(|r| *r > 0),
            object_store: Some(store),
        }
    }

    /// The log line that says what Ray was given.
    pub(crate) fn describe(&self) -> String {
        let mb = |b: u64| b >> 20;
        match (self.allocated, self.ray, self.object_store) {
            (Some(total), Some(ray), Some(store)) => format!(
                "Ray gets {} MB of memory and a {} MB object store: the {} MB Slurm allocated on this node",
                mb(ray),
                mb(store),
                mb(total)
            ),
            (Some(total), _, store) => format!(
                "warning: the object store ({} MB) leaves nothing of the {} MB Slurm allocated on this node; pass a smaller --object-store-memory",
                store.map_or(0, mb),
                mb(total)
            ),
            (None, ..) => "Slurm does not track memory here (no SLURM_MEM_PER_NODE or SLURM_MEM_PER_CPU): Ray takes the node's whole memory as its own".to_owned(),
        }
    }
}

/// Which Ray node this is.
pub(crate) enum NodeRole<'a> {
    /// The head, with the ports it chose at the start of the run (held since).
    Head(HeldRayPorts),
    /// A worker, which joins the head at this address and chooses its own ports.
    Worker(&'a str),
}

/// Starts Ray on this node: checks that `ray` is on PATH, picks a worker's ports and lets the
/// ports go just before `ray start` binds them, makes the temp root (in `temp_slot`, which
/// teardown removes whatever happens next) and spawns `ray start`. The error is for the log.
pub(crate) fn start_node(
    alloc: &Allocation,
    cluster: &ClusterOptions,
    role: NodeRole<'_>,
    ip: IpAddr,
    mark: &str,
    auth: &RayAuth,
    temp_slot: &mut Option<TempRoot>,
) -> Result<(RayStart, RayPorts), String> {
    let node = &alloc.node;
    // Inside an image, `in_image::check` has found `ray` there.
    if !in_image::is_set() {
        ray_version::check_on_path(node)?;
    }
    let memory = MemorySplit::of(alloc.memory_on_node, cluster.ray.object_store_memory);
    let (head_address, held) = match role {
        NodeRole::Head(held) => {
            say(node, memory.describe());
            (None, held)
        }
        NodeRole::Worker(address) => (
            Some(address),
            ports::choose_ray(node, false, cluster.nodes.port_base).map_err(|e| e.to_string())?,
        ),
    };
    check_shm(node, memory.object_store);
    // Head-only flags (dashboard, autoscaler, ...) would make a worker's `ray start` fail.
    let head_args = if head_address.is_none() {
        &cluster.ray.ray_head_args
    } else {
        &None
    };
    let mut extra = Vec::new();
    let mut env = auth.env();
    if !cluster.ray.ray_metrics {
        env.push((job_env::RAY_ENABLE_METRICS_COLLECTION, "false".to_owned()));
    }
    env.extend(start_waits(cluster.nodes.ready_timeout));
    // An elastic cluster's worker job: Ray names the node by its job (the head's exact join of
    // Ray's nodes with its jobs); its type came with the job's environment.
    if head_address.is_some() && std::env::var_os(ELASTIC_WORKER).is_some() {
        env.push((RAY_CLOUD_INSTANCE_ID, alloc.job_id.clone()));
    } else if cluster.serve.max_nodes.is_some() {
        env.push((RAY_NODE_MARKET_TYPE, "on-demand".to_owned()));
    }
    if cluster.serve.on {
        let head_ip = head_address
            .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
            .map_or(ip, |a| a.ip());
        env.extend(node_env(alloc, head_ip));
    }
    if head_address.is_none() && cluster.serve.on {
        // A persistent cluster's Jobs API is for the login node: it must listen on the node's
        // address (the token keeps everyone else out).
        let any = if ip.is_ipv6() { "::" } else { "0.0.0.0" };
        extra.push(format!("--dashboard-host={any}"));
        // Jobs wait in Ray's queue as long as the allocation lives, and get the stop grace.
        env.push((
            job_env::RAY_JOB_START_TIMEOUT_SECONDS,
            "31536000".to_owned(),
        ));
        env.push((
            job_env::RAY_JOB_STOP_WAIT_TIME_S,
            cluster.nodes.command_grace().as_secs().to_string(),
        ));
    }
    for (flag, text) in [
        ("--ray-args", &cluster.ray.ray_args),
        ("--ray-head-args", head_args),
    ] {
        if let Some(text) = text {
            extra.extend(parse_ray_args(flag, text).map_err(|e| e.to_string())?);
        }
    }
    let temp = temp_slot.insert(TempRoot::made_for(alloc)?);
    let ports = held.ports;
    let spec = RayNodeSpec {
        head_address,
        ip,
        ports,
        num_cpus: alloc.cpus_on_node,
        num_gpus: cluster.ray.gpus(alloc.gpus_on_node),
        memory: memory.ray,
        object_store_memory: memory.object_store,
        extra: &extra,
    };
    // Held until now, so that nothing else took them; `ray start` binds them next.
    held.release();
    let start = RayStart::spawn(&spec, temp, mark, &env).map_err(|e| format!("{e:#}"))?;
    Ok((start, ports))
}

/// The waits a loaded node needs (many Ray nodes starting at once), as `ray start`'s
/// variables, but those the user set.
fn start_waits(ready_timeout: u32) -> Vec<(&'static str, String)> {
    let wait = raylet_start_wait(ready_timeout);
    [
        (job_env::RAY_RAYLET_START_WAIT_TIME_S, wait.to_string()),
        (
            job_env::RAY_AGENT_REGISTER_TIMEOUT_MS,
            (u64::from(wait) * 1000).to_string(),
        ),
    ]
    .into_iter()
    .filter(|(name, _)| std::env::var_os(name).is_none())
    .collect()
}

/// Seconds `ray start` waits for its raylet, and the raylet for its dashboard agent (unless the
/// user set them): a worker's share of the ready timeout, as it has three tries
/// (`worker::ray_start`), between Ray's own 30 s and 300.
pub(crate) fn raylet_start_wait(ready_timeout: u32) -> u32 {
    (ready_timeout / 3).clamp(30, 300)
}

#[cfg(test)]
#[path = "ray_node_tests.rs"]
mod tests;
