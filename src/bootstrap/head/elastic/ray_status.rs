//! What Ray reports of its own cluster, for an elastic cluster's head: the work it cannot
//! place and each node's idle time, from `ray.autoscaler.v2.sdk.get_cluster_status` asked by
//! one long-lived Python process (`ray_status.py`) every [`EVERY`].

use std::io::BufReader;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::super::cluster::RayHead;
use super::super::python::ray_python;
use crate::bootstrap::byte_lines;
use crate::bootstrap::in_image;
use crate::bootstrap::node::say;
use crate::handoff::job_env;

const SCRIPT: &str = include_str!("ray_status.py");

/// How often Ray is asked.
pub(super) const EVERY: Duration = Duration::from_secs(10);

/// A report older than this is not acted on.
const STALE: Duration = Duration::from_secs(35);

/// One answer of Ray's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(super) struct Report {
    #[serde(default)]
    pub(super) demand: u32,
    #[serde(default)]
    nodes: Vec<NodeIdle>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct NodeIdle {
    ip: String,
    idle_s: u64,
}

impl Report {
    /// Seconds the node at `ip` has run nothing, if Ray lists it.
    pub(super) fn idle_s(&self, ip: &str) -> Option<u64> {
        self.nodes.iter().find(|n| n.ip == ip).map(|n| n.idle_s)
    }
}

/// The helper process and its latest report.
pub(super) struct RayStatus {
    child: Child,
    latest: Arc<Mutex<Option<(Instant, Report)>>>,
}

impl RayStatus {
    pub(super) fn start(ray: &RayHead, mark: &str, node: &str) -> Result<Self, String> {
        let args = ["-c", SCRIPT, &ray.address, &EVERY.as_secs().to_string()].map(Into::into);
        let mut cmd = ray_python(&args).env(job_env::RUN_MARK, mark);
        for (k, v) in ray.auth.env() {
            cmd = cmd.env(k, v);
        }
        let mut command = cmd.command();
        command.env_remove(job_env::RAY_AUTH_TOKEN);
        let mut child = in_image::wrap(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| cmd.spawn_error(e).to_string())?;
        let latest = Arc::new(Mutex::new(None));
        let out = child.stdout.take().ok_or("no stdout")?;
        let (slot, node) = (Arc::clone(&latest), node.to_owned());
        std::thread::spawn(move || {
            let mut said_error = false;
            byte_lines::for_each(BufReader::new(out), |line| {
                let Ok(report) = serde_json::from_slice::<Report>(line) else {
                    return true;
                };
                if let Some(e) = &report.error {
                    if !said_error {
                        say(
                            &node,
                            format!("warning: Ray's cluster status did not answer: {e}"),
                        );
                    }
                    said_error = true;
                    return true;
                }
                said_error = false;
                if let Ok(mut s) = slot.lock() {
                    *s = Some((Instant::now(), report));
                }
                true
            });
        });
        Ok(Self { child, latest })
    }

    /// Ray's latest report and when it came, unless it is stale.
    pub(super) fn latest(&self) -> Option<(Instant, Report)> {
        let guard = self.latest.lock().ok()?;
        guard
            .as_ref()
            .filter(|(at, _)| at.elapsed() < STALE)
            .cloned()
    }
}

impl Drop for RayStatus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_gives_demand_and_each_nodes_idle_time() {
        let r: Report = serde_json::from_str(
            r#"{"demand": 3, "nodes": [{"ip": "10.0.0.2", "idle_s": 42}, {"ip": "10.0.0.1", "idle_s": 0}]}"#,
        )
        .unwrap();
        assert_eq!(r.demand, 3);
        assert_eq!(r.idle_s("10.0.0.2"), Some(42));
        assert_eq!(r.idle_s("10.0.0.9"), None);
        let e: Report = serde_json::from_str(r#"{"error": "RpcError: timeout"}"#).unwrap();
        assert!(e.error.is_some());
    }
}
