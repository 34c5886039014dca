//! What Ray reports of its own cluster, for an elastic cluster's head: the work it cannot
//! place (tasks and actors by shape, placement groups whole, the `request_resources` floor
//! apart) and every node (its Slurm job, type, state, idle time, resources and labels), read
//! raw from Ray's GCS (`GetClusterResourceState`, the call Ray's own autoscaler makes) by one
//! long-lived Python process (`ray_status.py`) every [`EVERY`]. It prints a line only when
//! something changed, and every [`HEARTBEAT`] anyway, so a report's age says whether Ray
//! still answers.

use std::collections::BTreeMap;
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

/// How often Ray is asked: its GCS gathers the nodes' loads every second, nothing is fresher.
pub(super) const EVERY: Duration = Duration::from_secs(1);

/// A report comes at least this often, changed or not.
pub(super) const HEARTBEAT: Duration = Duration::from_secs(10);

/// A report older than this is not acted on.
const STALE: Duration = Duration::from_secs(35);

/// Amounts of Ray resources by name (`CPU`, `GPU`, `memory`, custom ones).
pub(super) type Resources = BTreeMap<String, f64>;

/// Ray node labels.
pub(super) type Labels = BTreeMap<String, String>;

/// One answer of Ray's.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(super) struct Report {
    /// Ray's `cluster_resource_state_version` (it moves on its own every second or so).
    #[serde(default)]
    pub(super) version: u64,
    #[serde(default)]
    pub(super) demand: Demand,
    #[serde(default)]
    pub(super) nodes: Vec<RayNode>,
    #[serde(default)]
    error: Option<String>,
}

/// The work Ray cannot place now, and the floor `request_resources` asks for.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(super) struct Demand {
    /// Tasks and actors (the Jobs API's entrypoint actors among them), by shape.
    #[serde(default)]
    pub(super) tasks: Vec<Counted>,
    /// Placement groups waiting for all (or, rescheduled, the rest) of their bundles.
    #[serde(default)]
    pub(super) groups: Vec<Group>,
    /// `ray.autoscaler.sdk.request_resources`: what the cluster should be able to hold at
    /// least, packed against nodes' totals. Not work: it stays until asked again.
    #[serde(default)]
    pub(super) floor: Vec<Counted>,
}

/// `count` requests of one shape.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct Counted {
    #[serde(flatten)]
    pub(super) shape: Shape,
    pub(super) count: u32,
}

/// What one task, actor or bundle asks for.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(super) struct Shape {
    #[serde(default)]
    pub(super) resources: Resources,
    /// Label selectors, the first preferred: a node must meet every term of one of them.
    /// Ray sends `[[]]` (one empty selector: any node) for a request without.
    #[serde(default)]
    pub(super) selectors: Vec<Vec<LabelTerm>>,
    /// A placement group's: affinity (STRICT_PACK) or anti-affinity (STRICT_SPREAD).
    #[serde(default)]
    pub(super) constraints: Vec<Placement>,
}

/// One term of a label selector: the node's label `key` is (`In`) or is not (`NotIn`) one
/// of `values` (a node without the label is not in any set).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(super) struct LabelTerm {
    pub(super) key: String,
    pub(super) op: LabelOp,
    #[serde(default)]
    pub(super) values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum LabelOp {
    In,
    NotIn,
    /// An operator this Ray does not have: no node meets it, as in Ray's scheduler.
    #[serde(other)]
    Unknown,
}

/// A placement constraint on a bundle: with `label` (`_PG_<group id>`) on the same node
/// (`Affinity`) or on no other bundle's node (`AntiAffinity`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(super) struct Placement {
    pub(super) kind: PlacementKind,
    pub(super) label: String,
    #[serde(default)]
    pub(super) value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum PlacementKind {
    Affinity,
    AntiAffinity,
}

/// A placement group Ray cannot place: all its bundles or none.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct Group {
    /// The group's id, hex.
    pub(super) id: String,
    /// `PACK`, `SPREAD`, `STRICT_PACK` or `STRICT_SPREAD`.
    pub(super) strategy: String,
    /// `PENDING` or `RESCHEDULING`.
    #[serde(default)]
    pub(super) state: String,
    pub(super) bundles: Vec<Shape>,
}

/// One Ray node as its GCS sees it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct RayNode {
    /// Ray's node id, hex.
    pub(super) node_id: String,
    /// `RAY_CLOUD_INSTANCE_ID` of its `ray start`: a worker job's Slurm job id; empty on the
    /// head.
    #[serde(default)]
    pub(super) instance_id: String,
    /// `RAY_NODE_TYPE_NAME` of its `ray start` (the worker type); empty on the head.
    #[serde(default)]
    pub(super) ray_node_type_name: String,
    pub(super) status: NodeStatus,
    #[serde(default)]
    pub(super) idle_duration_ms: u64,
    #[serde(default)]
    pub(super) ip: String,
    #[serde(default)]
    pub(super) total: Resources,
    #[serde(default)]
    pub(super) available: Resources,
    /// Its labels, the placement groups' `_PG_<id>` ones (Ray's "dynamic labels") among them.
    #[serde(default)]
    pub(super) labels: Labels,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(super) enum NodeStatus {
    Running,
    Idle,
    Draining,
    Dead,
    #[serde(other)]
    Unspecified,
}

impl RayNode {
    /// Alive and taking work: neither dead nor draining.
    pub(super) fn schedulable(&self) -> bool {
        matches!(self.status, NodeStatus::Running | NodeStatus::Idle)
    }

    /// The head node of the cluster (the resource only Ray's head has).
    pub(super) fn is_head(&self) -> bool {
        self.total.contains_key("node:__internal_head__")
    }

    fn idle_s(&self) -> u64 {
        self.idle_duration_ms / 1000
    }
}

impl Report {
    /// Seconds the node at `ip` has run nothing, if Ray lists it alive (a dead node of an
    /// earlier job on the same host is not it).
    pub(super) fn idle_s(&self, ip: &str) -> Option<u64> {
        self.alive().find(|n| n.ip == ip).map(RayNode::idle_s)
    }

    /// Seconds the node of worker job `job_id` has run nothing, if Ray lists it alive.
    pub(super) fn idle_s_of_instance(&self, job_id: &str) -> Option<u64> {
        self.alive()
            .find(|n| n.instance_id == job_id)
            .map(RayNode::idle_s)
    }

    fn alive(&self) -> impl Iterator<Item = &RayNode> {
        self.nodes.iter().filter(|n| n.status != NodeStatus::Dead)
    }
}

/// The helper process and its latest report.
pub(super) struct RayStatus {
    child: Child,
    latest: Arc<Mutex<Option<(Instant, Report)>>>,
}

impl RayStatus {
    pub(super) fn start(ray: &RayHead, mark: &str, node: &str) -> Result<Self, String> {
        let (every, beat) = (EVERY.as_secs().to_string(), HEARTBEAT.as_secs().to_string());
        let args = ["-c", SCRIPT, &ray.address, &every, &beat].map(Into::into);
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

    /// How many things wait for room: tasks and actors, one per request, and placement
    /// groups, one per group; not the `request_resources` floor, which is no work.
    fn demand_count(r: &Report) -> u32 {
        let tasks: u32 = r.demand.tasks.iter().map(|t| t.count).sum();
        tasks + r.demand.groups.len() as u32
    }
    use super::*;

    /// Lines `ray_status.py` printed on the lab (Ray 2.60, a 1-node cluster on node7 that grew
    /// a worker on node8), while `exec` jobs waited for a task of `{"GPU": 1}`, an actor of
    /// `{"accel": 2}`, tasks with label selectors, a STRICT_SPREAD group of 2 and a STRICT_PACK
    /// group of 2 `{"CPU": 1, "accel": 1}`, and `request_resources(num_cpus=6, bundles=[{"GPU":
    /// 2}])` (asked with `RAY_enable_autoscaler_v2=1`), and a node started by hand as a worker
    /// job would be (`RAY_CLOUD_INSTANCE_ID=6`, `RAY_NODE_TYPE_NAME=gpu`,
    /// `RAY_NODE_MARKET_TYPE=spot`) had taken the GPU task.
    const SPREAD: &str = include_str!("fixtures/ray_state_spread.json");
    const TYPED: &str = include_str!("fixtures/ray_state_typed.json");

    fn parse(line: &str) -> Report {
        serde_json::from_str(line).unwrap()
    }

    fn res(pairs: &[(&str, f64)]) -> Resources {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn a_report_gives_ray_s_demand_by_shape_with_selectors_and_groups_whole() {
        let r = parse(SPREAD);
        let shapes: Vec<(&Resources, u32)> = r
            .demand
            .tasks
            .iter()
            .map(|t| (&t.shape.resources, t.count))
            .collect();
        assert_eq!(
            shapes,
            [
                (&res(&[("CPU", 1.0), ("GPU", 1.0)]), 1),
                (&res(&[("accel", 2.0)]), 1),
                (&res(&[("CPU", 1.0)]), 2),
                (&res(&[("CPU", 1.0)]), 1),
            ]
        );
        assert_eq!(r.demand.tasks[0].shape.selectors, [Vec::<LabelTerm>::new()]);
        let on_demand = &r.demand.tasks[3].shape.selectors;
        assert_eq!(
            on_demand,
            &[vec![LabelTerm {
                key: "ray.io/market-type".into(),
                op: LabelOp::In,
                values: vec!["on-demand".into()],
            }]]
        );
        let terms = &r.demand.tasks[2].shape.selectors[0];
        assert_eq!(terms[1].op, LabelOp::NotIn);
        assert_eq!(terms[0].values, ["cpu", "gpu"]);
        let [group] = &r.demand.groups[..] else {
            panic!("one group: {:?}", r.demand.groups)
        };
        assert_eq!(group.strategy, "STRICT_SPREAD");
        assert_eq!(group.state, "PENDING");
        assert_eq!(group.bundles.len(), 2);
        for b in &group.bundles {
            assert_eq!(b.resources, res(&[("CPU", 1.0)]));
            assert_eq!(b.constraints[0].kind, PlacementKind::AntiAffinity);
            assert_eq!(b.constraints[0].label, format!("_PG_{}", group.id));
        }
        assert!(r.demand.floor.is_empty());
        // 1 + 1 + 2 + 1 tasks and one group.
        assert_eq!(demand_count(&r), 6);
    }

    #[test]
    fn a_report_gives_each_node_with_its_job_type_state_and_resources() {
        let r = parse(TYPED);
        assert_eq!(r.nodes.len(), 3);
        let worker = r.nodes.iter().find(|n| n.instance_id == "6").unwrap();
        assert_eq!(worker.ray_node_type_name, "gpu");
        assert_eq!(worker.status, NodeStatus::Idle);
        assert_eq!(worker.total["GPU"], 4.0);
        assert_eq!(worker.labels["ray.io/market-type"], "spot");
        assert_eq!(worker.labels["ray.io/node-group"], "gpu");
        assert_eq!(worker.labels["zone"], "z1");
        assert_eq!(worker.node_id.len(), 56);
        let head = r.nodes.iter().find(|n| n.is_head()).unwrap();
        assert_eq!(
            (head.instance_id.as_str(), head.ray_node_type_name.as_str()),
            ("", "")
        );
        // The STRICT_SPREAD group placed one bundle on each node: its label on both.
        let spread = r
            .nodes
            .iter()
            .filter(|n| n.labels.keys().any(|k| k.starts_with("_PG_")));
        assert_eq!(spread.count(), 2);
        assert_eq!(
            r.idle_s_of_instance("6"),
            Some(worker.idle_duration_ms / 1000)
        );
        assert_eq!(r.idle_s(&worker.ip), Some(worker.idle_duration_ms / 1000));
        assert_eq!(r.idle_s_of_instance("7"), None);
    }

    #[test]
    fn the_request_resources_floor_is_kept_apart_and_not_counted_as_demand() {
        let r = parse(TYPED);
        let floor: Vec<(&Resources, u32)> = r
            .demand
            .floor
            .iter()
            .map(|t| (&t.shape.resources, t.count))
            .collect();
        assert_eq!(
            floor,
            [(&res(&[("CPU", 1.0)]), 6), (&res(&[("GPU", 2.0)]), 1)]
        );
        let [group] = &r.demand.groups[..] else {
            panic!("one group: {:?}", r.demand.groups)
        };
        assert_eq!(group.strategy, "STRICT_PACK");
        assert_eq!(
            group.bundles[0].constraints[0].kind,
            PlacementKind::Affinity
        );
        // The actor and the task for on-demand nodes wait; the floor's 7 requests do not count.
        assert_eq!(demand_count(&r), 3);
    }

    #[test]
    fn a_dead_node_is_not_the_one_at_its_address() {
        let mut r = parse(TYPED);
        let mut dead = r.nodes[1].clone();
        dead.status = NodeStatus::Dead;
        dead.idle_duration_ms = 999_000;
        r.nodes.insert(0, dead.clone());
        assert_eq!(r.idle_s(&dead.ip), Some(r.nodes[2].idle_duration_ms / 1000));
        assert!(!dead.schedulable());
    }

    #[test]
    fn an_error_line_is_an_error() {
        let e: Report = serde_json::from_str(r#"{"error": "RpcError: timeout"}"#).unwrap();
        assert!(e.error.is_some());
        assert_eq!(demand_count(&e), 0);
    }
}
