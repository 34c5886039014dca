//! The head's start-up: the checks that come before anything starts, the run directory taken,
//! then the head's ports (held until Ray binds them), Ray's token, the setups, Ray's head and the worker step (in the
//! order the setup asks), until enough nodes have joined ([`super::ready`]), on a [`StartUp`]. It ends with the
//! [`Head`] of a ready cluster, or with how the start failed.

use std::cell::{Cell, RefCell};
use std::net::IpAddr;
use std::path::Path;
use std::time::Instant;

use super::cluster::{Head, RayHead};
use super::outcome::Outcome;
use super::run_dir_lease::{self, Holder, Lease};
use super::srun_workers::{Joined, WorkerStep};
use super::startup::StartUp;
use super::teardown::Started;
use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::in_image;
use crate::bootstrap::net::HostPort;
use crate::bootstrap::node::{node_ip, say};
use crate::bootstrap::ports::{self, HeadPorts, HeldRayPorts};
use crate::bootstrap::ray_auth::RayAuth;
use crate::bootstrap::ray_node::{NodeRole, RayStart, start_node};
use crate::bootstrap::signals;
use crate::bootstrap::user_code::command::Output;
use crate::bootstrap::user_code::env::{attempt_env, setup_env_before_ray};
use crate::bootstrap::user_code::setup::{self, setup_failed};
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::run_files::create_private_dir;
use crate::slurm::env as slurm_env;

/// Checks what must hold before anything starts, takes the run's directory for this attempt,
/// and finds this node's IP.
pub(super) fn prepare(
    args: &BootstrapArgs,
    alloc: &Allocation,
    started: &mut Started,
) -> Result<IpAddr, Outcome> {
    let no_command = args.command.as_deref().unwrap_or_default().is_empty();
    if no_command && !args.cluster.serve.on {
        return Err(Outcome::startup_failed(
            "no --command was given to the bootstrap",
        ));
    }
    if let Some(why) = wrong_directory(
        std::env::current_dir().ok().as_deref(),
        std::env::var_os(slurm_env::SLURM_SUBMIT_DIR)
            .as_deref()
            .map(Path::new),
        &alloc.node,
    ) {
        return Err(Outcome::startup_failed(why));
    }
    if let Some(dir) = &args.run_dir {
        started.lease = Some(take_run_dir(dir, alloc)?);
    }
    signals::clear_requests(args.run_dir.as_deref(), &alloc.node);
    in_image::check(&alloc.node, args.cluster.with_ray()).map_err(Outcome::startup_failed)?;
    node_ip(alloc, &args.cluster).map_err(|e| Outcome::startup_failed(e.to_string()))
}

/// The run's private directory (checkpoints as `RAYSLURM_RUN_DIR`, Ray's token, a cluster's
/// jobs), made if need be and held for this attempt. Every run has one, with Ray or without,
/// in the user's private tree: checked again here (as StrictModes does), since the job may
/// start days after the launch. One attempt at a time in the directory (runs `--after` one
/// run share it); then whatever an earlier attempt or run left for its own signals is not
/// this one's.
fn take_run_dir(dir: &Path, alloc: &Allocation) -> Result<Lease, Outcome> {
    if let Some(parent) = dir.parent()
        && let Err(e) = crate::sys::private_tree::check(parent)
    {
        return Err(Outcome::startup_failed(format!(
            "the run's private directory is not safe, so the run does not start: {e}"
        )));
    }
    create_private_dir(dir).map_err(|e| Outcome::startup_failed(format!("{e:#}")))?;
    let me = Holder {
        job_id: alloc.job_id.clone(),
        restart: alloc.restart_count,
    };
    Lease::take(dir, &me, &run_dir_lease::slurm_liveness)
        .map_err(|e| Outcome::startup_failed(e.to_string()))
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

impl<'a> StartUp<'a> {
    /// Starts the cluster and waits until it is ready.
    pub(super) fn start(mut self) -> Result<Head<'a>, Outcome> {
        let c = &self.args.cluster.clone();
        // The ports first, held until their users start: the workers learn the head's address
        // from them, the setups and the command their rendezvous port.
        let node = &self.alloc.node;
        let fail = |e: ports::PortError| Outcome::startup_failed(e.to_string());
        let master = ports::choose_master(node, c.nodes.port_base).map_err(fail)?;
        let ray_ports = if c.with_ray() {
            Some(ports::choose_ray(node, true, c.nodes.port_base).map_err(fail)?)
        } else {
            None
        };
        let head_ports = ray_ports.as_ref().and_then(|p| p.ports.head);
        let address = head_ports.map(|h| HostPort(self.ip, h.gcs).to_string());
        let auth = if c.with_ray() {
            RayAuth::prepare(self.args, self.alloc)
                .map_err(|e| Outcome::startup_failed(format!("{e:#}")))?
        } else {
            RayAuth::Disabled
        };
        let head_address = address
            .clone()
            .unwrap_or_else(|| HostPort(self.ip, 0).to_string());
        // With a setup the workers start at once and run theirs while the head runs its own;
        // without, Ray's head starts first, as the head's setup would otherwise.
        let spawn_first = c.program.setup.is_some();
        if spawn_first {
            self.spawn_workers(&head_address, master.port)?;
        }
        if let Some(setup) = &c.program.setup {
            self.run_setup(setup, master.port)?;
        }
        let (mut ray_start, mut ray) = (None, None);
        if let Some(((address, held), head_ports)) = address.zip(ray_ports).zip(head_ports) {
            let (start, head) = self.start_ray(held, head_ports, address, auth)?;
            (ray_start, ray) = (Some(start), Some(head));
        }
        if !spawn_first {
            self.spawn_workers(&head_address, master.port)?;
        }
        self.say_starting(ray.as_ref());
        let joined = self.wait_ready(ray_start.zip(ray.as_mut()))?;
        Ok(self.ready(&joined, master, ray))
    }

    /// Starts the worker step, if there are other nodes.
    fn spawn_workers(&mut self, head_address: &str, master_port: u16) -> Result<(), Outcome> {
        if self.alloc.others().is_empty() {
            return Ok(());
        }
        let step = WorkerStep::spawn(
            self.args,
            self.alloc,
            head_address,
            master_port,
            &self.started.mark,
        )
        .map_err(|e| Outcome::startup_failed(format!("cannot start the worker step: {e:#}")))?;
        self.started.workers = Some(step);
        Ok(())
    }

    /// Runs the head's setup. It ends early when a worker's setup fails or a node goes silent
    /// (the run is lost), or when the job is told to stop (a stop, not a failure).
    fn run_setup(&mut self, setup: &str, master_port: u16) -> Result<(), Outcome> {
        let mut env = setup_env_before_ray(self.alloc, self.ip, master_port);
        env.extend(attempt_env(self.alloc, self.args.run_dir.as_deref()));
        let output = Output::Prefixed(format!("[setup {}] ", self.alloc.node));
        let trouble = RefCell::new(None);
        let stopped_by = Cell::new(None);
        let setups = RefCell::new(&mut self.setups);
        let workers = self.started.workers.as_ref();
        let stop = || {
            if let Some(s) = signals::take().into_iter().find(|s| signals::stops(*s)) {
                stopped_by.set(Some(s));
                return true;
            }
            let mut setups = setups.borrow_mut();
            for node in workers.map(WorkerStep::setups_ended).unwrap_or_default() {
                setups.done(&node);
            }
            let why = workers
                .and_then(WorkerStep::setup_trouble)
                .or_else(|| setups.overdue(Instant::now()));
            let stop = why.is_some();
            if stop {
                trouble.replace(why);
            }
            stop
        };
        let code = setup::run(&self.alloc.node, setup, &env, &output, &stop);
        if let Some(signal) = stopped_by.get() {
            return Err(Outcome::stopped_while_starting(signal));
        }
        if let Some(why) = trouble.take() {
            return Err(Outcome::startup_failed(why));
        }
        if code != 0 {
            return Err(Outcome::startup_failed(setup_failed(
                &self.alloc.node,
                code,
            )));
        }
        self.setups.done(&self.alloc.node);
        Ok(())
    }

    /// Starts `ray start --head` on the ports chosen (and held) for the run; the head it will
    /// be once it has started.
    fn start_ray(
        &mut self,
        held: HeldRayPorts,
        head_ports: HeadPorts,
        address: String,
        auth: RayAuth,
    ) -> Result<(RayStart, RayHead), Outcome> {
        let started = start_node(
            self.alloc,
            &self.args.cluster,
            NodeRole::Head(held),
            self.ip,
            &self.started.mark,
            &auth,
            &mut self.started.temp,
        );
        self.started.tell_watchdog_temp();
        let (start, ports) = started.map_err(Outcome::startup_failed)?;
        let head = RayHead {
            address,
            head_ports,
            ports,
            auth,
            auth_check: None,
            kept: Vec::new(),
            dashboard_announced: false,
        };
        Ok((start, head))
    }

    fn say_starting(&self, ray: Option<&RayHead>) {
        let others = self.alloc.others().len();
        say(
            &self.alloc.node,
            match ray {
                Some(ray) => format!(
                    "starting Ray head at {} and {others} worker node(s)",
                    ray.address
                ),
                None => format!(
                    "starting the command on {} node(s) without Ray (--no-ray)",
                    others + 1
                ),
            },
        );
    }

    /// The head of the cluster now ready: the nodes that joined (the head's first), their IPs.
    fn ready(
        self,
        joined: &std::collections::BTreeMap<u32, Joined>,
        master: ports::Held,
        ray: Option<RayHead>,
    ) -> Head<'a> {
        let ips: Vec<IpAddr> = std::iter::once(self.ip)
            .chain(joined.values().map(|j| j.ip))
            .collect();
        let nodes = std::iter::once(self.alloc.node.clone())
            .chain(joined.values().map(|j| j.node.clone()))
            .collect();
        say(
            &self.alloc.node,
            format!(
                "cluster ready: {} node(s) in {:.1} s; running the command",
                ips.len(),
                self.t0.elapsed().as_secs_f64()
            ),
        );
        Head {
            args: self.args,
            alloc: self.alloc,
            started: self.started,
            ips,
            nodes,
            master_port: master.port,
            master_held: Some(master),
            ray,
        }
    }
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
