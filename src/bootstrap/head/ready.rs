//! Waiting for the cluster: the head's own `ray start` and the workers' ready lines, until
//! enough nodes have joined, a start fails, a stop signal comes or `--ready-timeout` passes.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use super::auth_check::{self, AuthCheck, Verdict};
use super::cluster::{RayHead, say_dashboard};
use super::kept_ports;
use super::outcome::Outcome;
use super::srun_workers::{Joined, StepEvent};
use super::startup::StartUp;
use crate::bootstrap::heartbeat;
use crate::bootstrap::node::{TICK, say};
use crate::bootstrap::protocol::Report;
use crate::bootstrap::ray_node::RayStart;
use crate::bootstrap::signals;
use crate::bootstrap::user_code::setup::setup_failed;
use crate::sys::process::describe_status;

/// Which nodes have joined, and whether that is enough: the pure part of waiting.
#[derive(Debug)]
pub(super) struct Readiness {
    needed_workers: usize,
    head_ready: bool,
    pub(super) joined: BTreeMap<u32, Joined>,
}

impl Readiness {
    /// `min_nodes` counts the head too; without it every node must join.
    pub(super) fn new(total_nodes: u32, min_nodes: Option<u32>, head_ready: bool) -> Self {
        Self {
            needed_workers: min_nodes.unwrap_or(total_nodes).saturating_sub(1) as usize,
            head_ready,
            joined: BTreeMap::new(),
        }
    }

    pub(super) fn head_is_ready(&mut self) {
        self.head_ready = true;
    }

    pub(super) fn join(&mut self, rank: u32, node: Joined) {
        self.joined.insert(rank, node);
    }

    /// Fewer workers have joined than the command needs.
    pub(super) fn short_of_workers(&self) -> bool {
        self.joined.len() < self.needed_workers
    }

    pub(super) fn is_ready(&self) -> bool {
        self.head_ready && !self.short_of_workers()
    }

    /// Why the cluster is not ready after `timeout`: the head's state and the worker nodes
    /// (of `others`) that have not joined.
    pub(super) fn timeout_message(&self, timeout: Duration, others: &[String]) -> String {
        let joined: std::collections::HashSet<&str> =
            self.joined.values().map(|j| j.node.as_str()).collect();
        let missing: Vec<&str> = others
            .iter()
            .map(String::as_str)
            .filter(|n| !joined.contains(n))
            .collect();
        format!(
            "the cluster was not ready after --ready-timeout {} s: head {}, nodes not joined: {}",
            timeout.as_secs(),
            if self.head_ready {
                "ready"
            } else {
                "not ready"
            },
            if missing.is_empty() {
                "none".to_owned()
            } else {
                missing.join(", ")
            }
        )
    }
}

impl StartUp<'_> {
    /// Waits for the head's `ray start` (if Ray runs) and the workers' ready lines.
    pub(super) fn wait_ready(
        &mut self,
        mut ray: Option<(RayStart, &mut RayHead)>,
    ) -> Result<BTreeMap<u32, Joined>, Outcome> {
        let c = &self.args.cluster;
        let timeout = Duration::from_secs(u64::from(c.nodes.ready_timeout));
        let mut ready = Readiness::new(
            self.alloc.nodes.len() as u32,
            c.nodes.min_nodes,
            ray.is_none(),
        );
        loop {
            if let Some(signal) = signals::take().into_iter().find(|s| signals::stops(*s)) {
                return Err(Outcome::stopped_while_starting(signal));
            }
            if let Some((start, head)) = &mut ray
                && self.head_started(start, head)?
            {
                ready.head_is_ready();
                ray = None;
            }
            self.take_joined(&mut ready)?;
            if ready.is_ready() {
                return Ok(ready.joined);
            }
            let now = std::time::Instant::now();
            if let Some(why) = self.setups.overdue(now) {
                return Err(Outcome::startup_failed(why));
            }
            if self.setups.ready_overdue(timeout, now) {
                return Err(Outcome::startup_failed(
                    ready.timeout_message(timeout, &self.alloc.others()),
                ));
            }
            std::thread::sleep(TICK);
        }
    }

    /// Whether the head's `ray start` has ended well; its failure ends the wait.
    fn head_started(&mut self, start: &mut RayStart, head: &mut RayHead) -> Result<bool, Outcome> {
        let node = &self.alloc.node;
        match start.try_wait() {
            Ok(Some(status)) if status.success() => {
                say(
                    node,
                    format!(
                        "Ray head ready after {:.1} s",
                        self.t0.elapsed().as_secs_f64()
                    ),
                );
                head.kept = kept_ports::keep_services(node, &head.head_ports);
                self.check_auth(head)?;
                if head.auth_check.is_none() {
                    head.dashboard_announced = say_dashboard(node, head.head_ports.dashboard);
                }
                Ok(true)
            }
            Ok(Some(status)) => Err(Outcome::startup_failed(format!(
                "the Ray head on node {node} failed to start ({}):\n{}",
                describe_status(status),
                start.output_tail(15)
            ))),
            Ok(None) => Ok(false),
            Err(e) => Err(Outcome::startup_failed(format!(
                "cannot wait for `{}`: {e}",
                start.cmd
            ))),
        }
    }

    /// Starts the check that Ray refuses requests without the run's token: beside the command
    /// (see [`AuthCheck`]), or, for a persistent cluster, waited for here.
    fn check_auth(&self, head: &mut RayHead) -> Result<(), Outcome> {
        let Some(token) = head.auth.token_path() else {
            return Ok(());
        };
        let ports = auth_check::Ports {
            node: self.alloc.node.clone(),
            dashboard: head.head_ports.dashboard,
            host: match self.ip {
                IpAddr::V4(v4) => v4.to_string(),
                IpAddr::V6(v6) => format!("[{v6}]"),
            },
            others: head.ports.other_http().to_vec(),
            metrics_asked: self.args.cluster.ray.ray_metrics,
            ray_temp: self.started.temp.as_ref().map(|t| t.path.clone()),
        };
        let check = AuthCheck::spawn(token.to_owned(), ports, auth_check::PATIENCE);
        if !self.args.cluster.serve.on {
            head.auth_check = Some(check);
            return Ok(());
        }
        match check.wait(&self.alloc.node) {
            Verdict::Stop(why) => Err(Outcome::auth_not_enforced(why)),
            _ => Ok(()),
        }
    }

    /// Takes the workers' ready lines; the worker step ending before enough joined ends the
    /// wait.
    fn take_joined(&mut self, ready: &mut Readiness) -> Result<(), Outcome> {
        let node = &self.alloc.node;
        let Some(step) = &mut self.started.workers else {
            return Ok(());
        };
        while let Some(event) = step.next_event() {
            match event {
                StepEvent::Joined(rank, j) => {
                    say(
                        node,
                        format!(
                            "node {} ({}) joined after {:.1} s",
                            j.node,
                            j.ip,
                            self.t0.elapsed().as_secs_f64()
                        ),
                    );
                    ready.join(rank, j);
                }
                StepEvent::Report(Report::Setup { node: n, code }) if code != 0 => {
                    return Err(Outcome::startup_failed(setup_failed(&n, code)));
                }
                StepEvent::Report(Report::Setup { node: n, .. }) => self.setups.done(&n),
                StepEvent::Report(_) => {}
            }
        }
        if let Some((silent, quiet)) = step.silent_node() {
            return Err(Outcome::startup_failed(heartbeat::silence_message(
                &silent, quiet,
            )));
        }
        if ready.short_of_workers()
            && let Ok(Some(status)) = step.child.try_wait()
        {
            // A worker whose setup failed said so before its step ended.
            std::thread::sleep(TICK);
            while let Some(event) = step.next_event() {
                if let StepEvent::Report(Report::Setup { node: n, code }) = event
                    && code != 0
                {
                    return Err(Outcome::startup_failed(setup_failed(&n, code)));
                }
            }
            return Err(Outcome::startup_failed(format!(
                "the worker step (`{}`) ended with {} before every node joined; the worker's own error is above",
                step.cmd,
                describe_status(status)
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(node: &str) -> Joined {
        Joined {
            node: node.to_owned(),
            ip: "10.0.0.2".parse().unwrap(),
        }
    }

    #[test]
    fn every_node_is_needed_unless_min_nodes_says_fewer() {
        let mut all = Readiness::new(3, None, true);
        all.join(1, joined("n2"));
        assert!(!all.is_ready());
        all.join(2, joined("n3"));
        assert!(all.is_ready());

        let mut two = Readiness::new(3, Some(2), false);
        two.join(1, joined("n2"));
        assert!(!two.is_ready(), "the head is not ready yet");
        two.head_is_ready();
        assert!(two.is_ready());
    }

    #[test]
    fn the_timeout_message_names_the_nodes_that_did_not_join() {
        let mut r = Readiness::new(3, None, true);
        r.join(1, joined("n2"));
        let others = vec!["n2".to_owned(), "n3".to_owned()];
        assert_eq!(
            r.timeout_message(Duration::from_secs(5), &others),
            "the cluster was not ready after --ready-timeout 5 s: head ready, nodes not joined: n3"
        );
        r.join(2, joined("n3"));
        assert!(
            r.timeout_message(Duration::from_secs(5), &others)
                .ends_with("nodes not joined: none")
        );
    }
}
