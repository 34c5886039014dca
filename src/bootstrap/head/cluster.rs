//! The head of a ready cluster: what the start-up found and started ([`Head`]), what it tells
//! the login side (a [`ClusterInfo`] in the run's directory, written by every Ray head once the
//! cluster is ready), and the choice between running the command and serving jobs.

use std::net::IpAddr;

use chrono::{Local, SecondsFormat};

use super::auth_check::AuthCheck;
use super::outcome::Outcome;
use super::teardown::Started;
use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::node::say;
use crate::bootstrap::ports::{self, HeadPorts, RayPorts};
use crate::bootstrap::ray_auth::RayAuth;
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::cluster_info::ClusterInfo;
use crate::handoff::run_files::create_private_dir;

/// The head once its cluster is ready.
pub(super) struct Head<'a> {
    pub(super) args: &'a BootstrapArgs,
    pub(super) alloc: &'a Allocation,
    /// What the attempt started, for the teardown (the worker step and the command are in it).
    pub(super) started: &'a mut Started,
    /// The IP of every node that joined, the head's first.
    pub(super) ips: Vec<IpAddr>,
    /// The nodes that joined, the head first.
    pub(super) nodes: Vec<String>,
    /// The port frameworks rendezvous on (`MASTER_PORT`), chosen on the head.
    pub(super) master_port: u16,
    /// That port, held from its choice until the command starts, then left for it to bind
    /// and kept from every other run's choice.
    pub(super) master_held: Option<ports::Held>,
    /// Ray's head on this node; none with `--no-ray`.
    pub(super) ray: Option<RayHead>,
}

/// Ray's head, once `ray start --head` has been run.
pub(super) struct RayHead {
    /// `IP:port` of its GCS, the address the command and the workers are given.
    pub(super) address: String,
    /// The head's own services' ports (GCS, dashboard, client server).
    pub(super) head_ports: HeadPorts,
    /// Every port it was given.
    pub(super) ports: RayPorts,
    /// How this run's Ray authenticates.
    pub(super) auth: RayAuth,
    /// The check that Ray enforces the token, while under way beside the command.
    pub(super) auth_check: Option<AuthCheck>,
    /// Whether the log has named the dashboard: it listens, and Ray was found to enforce the
    /// token (when there is one).
    pub(super) dashboard_announced: bool,
    /// The GCS's and Ray Client server's listening sockets, kept from changing hands for as
    /// long as the head lives (`kept_ports`).
    pub(super) kept: Vec<crate::sys::port_keeper::Kept>,
}

impl Head<'_> {
    pub(super) fn node(&self) -> &str {
        &self.alloc.node
    }

    /// Serves jobs (`up`) or runs the command, and says how the run ended.
    pub(super) fn run(mut self) -> Outcome {
        if self.args.cluster.serve.on {
            return self.serve();
        }
        self.publish_or_warn();
        self.run_command()
    }

    /// What the login side learns of this Ray head: where it is, its nodes, its token.
    fn info(&self, ray: &RayHead) -> ClusterInfo {
        ClusterInfo {
            job_id: self.alloc.job_id.clone(),
            head_node: self.alloc.node.clone(),
            head_ip: self.ips[0],
            dashboard_port: ray.head_ports.dashboard,
            dashboard: ray.dashboard_announced,
            nodes: self.nodes.clone(),
            cpus_per_node: self.alloc.cpus_on_node,
            gpus_per_node: self.args.cluster.ray.gpus(self.alloc.gpus_on_node),
            ready_at: Local::now().to_rfc3339_opts(SecondsFormat::Secs, false),
            token_file: ray.auth.token_path().map(Into::into),
            rayslurm_bin: std::env::current_exe().unwrap_or_default(),
            idle_timeout: self.args.cluster.serve.idle_timeout,
            attempt: self.alloc.restart_count,
            gcs_address: Some(ray.address.clone()),
        }
    }

    /// Writes the [`ClusterInfo`] into the run's directory (with Ray and a run directory;
    /// none otherwise), and returns it.
    pub(super) fn publish(&self) -> anyhow::Result<Option<ClusterInfo>> {
        let (Some(ray), Some(run_dir)) = (&self.ray, &self.args.run_dir) else {
            return Ok(None);
        };
        let info = self.info(ray);
        create_private_dir(run_dir).and_then(|()| info.write(run_dir))?;
        Ok(Some(info))
    }

    /// [`Head::publish`], for a run that goes on without it (only `dashboard` misses it).
    fn publish_or_warn(&self) {
        if let Err(e) = self.publish() {
            say(self.node(), format!("warning: {e:#}"));
        }
    }

    /// Names the dashboard in the log and in the published info, once Ray was found to
    /// enforce the token.
    pub(super) fn announce_dashboard(&mut self) {
        let node = self.alloc.node.clone();
        let Some(ray) = &mut self.ray else {
            return;
        };
        ray.dashboard_announced = say_dashboard(&node, ray.head_ports.dashboard);
        if ray.dashboard_announced {
            self.publish_or_warn();
        }
    }
}

/// Tells where the dashboard is, if Ray started one (`--include-dashboard=false` does not);
/// whether it did.
pub(super) fn say_dashboard(node: &str, port: u16) -> bool {
    let listening = ports::listening_locally(port);
    if listening {
        say(
            node,
            format!(
                "Ray dashboard on {node} at 127.0.0.1:{port}; from the login node: ssh -N -L {port}:127.0.0.1:{port} {node}, then open http://localhost:{port}"
            ),
        );
    }
    listening
}
