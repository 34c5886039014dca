//! Where a task runs and what becomes of it when it is stopped: `infra` (this Slurm cluster,
//! a partition of it), `use_spot` (the site's preemptible partition or QOS, which the config
//! names: `commands::settings::task_file` reads it), `job_recovery` (requeued); and the
//! `ports` it serves, which the launch prints with the command that forwards each.

use super::super::given::Given;
use super::super::node::{Line, Node};
use super::super::{Reading, Refusal};

/// The flag a task file gives for `use_spot: true`: not an option of any command, it becomes
/// the config's `spot_partition` and/or `spot_qos` (with `--requeue`) before the flags are
/// parsed.
pub(crate) const USE_SPOT: &str = "use-spot";

/// The flag a task file gives for `infra: slurm/CLUSTER`: the cluster named, checked against
/// this one before anything is submitted.
pub(crate) const SLURM_CLUSTER: &str = "slurm-cluster";

/// `use_spot: true`: the site's preemptible partition or QOS, requeued when preempted.
pub(super) fn use_spot(field: &str, value: &Line<Node>) -> Result<Vec<Given>, Refusal> {
    match value.value {
        Node::Bool(false) | Node::Null => Ok(Vec::new()),
        Node::Bool(true) => Ok(vec![
            Given::switch(field, value.line, USE_SPOT),
            Given::switch(field, value.line, "requeue"),
        ]),
        ref other => Err(Refusal::new(
            field,
            value.line,
            format!("is {}: give true or false", other.kind()),
        )),
    }
}

/// What becomes of a task's placement in a cloud (`cloud`, `region`, `zone`, an `infra` of
/// another cloud): launched with rayslurm, it runs on this Slurm cluster.
pub(crate) const ELSEWHERE: &str = "launched with rayslurm, the task runs on this Slurm cluster, as `sky launch --infra slurm` runs it whatever the file names (choose a partition with `rayslurm: {partition: NAME}`)";

/// SkyPilot's recovery strategies; on Slurm each is a requeue of the job on this cluster.
const STRATEGIES: &[&str] = &["failover", "eager_next_region"];

/// What a requeue does and does not do, for the keys of `job_recovery` it cannot honour
/// otherwise.
const NOT_ON_ERRORS: &str = "a failed command is restarted whatever its exit code, within `max_restarts_on_errors` (`--restarts-on-error`); no exit code restarts it beyond that";

/// `job_recovery: STRATEGY` or `{strategy: , max_restarts_on_errors: N}`: `--requeue` (none
/// for `none`).
pub(super) fn job_recovery(
    r: &mut Reading,
    field: &str,
    value: &Line<Node>,
) -> Result<(), Refusal> {
    let strategy = |text: &str, line: u32| -> Result<bool, Refusal> {
        let lower = text.trim().to_ascii_lowercase();
        if lower == "none" {
            return Ok(false);
        }
        if STRATEGIES.contains(&lower.as_str()) {
            return Ok(true);
        }
        Err(Refusal::new(
            field,
            line,
            format!(
                "`{text}` is not a recovery strategy: give FAILOVER, EAGER_NEXT_REGION or none (each is a requeue on this cluster)"
            ),
        ))
    };
    let requeue =
        match &value.value {
            Node::Null => false,
            Node::Str(text) => strategy(text, value.line)?,
            Node::Map(entries) => {
                let mut requeue = true;
                for (key, v) in entries {
                    let name = format!("{field}.{}", key.value);
                    match (key.value.as_str(), &v.value) {
                        ("strategy", Node::Null) => {}
                        ("strategy", Node::Str(text)) => requeue = strategy(text, key.line)?,
                        ("max_restarts_on_errors", Node::Int(0)) => {}
                        ("max_restarts_on_errors", Node::Int(n)) if *n > 0 => r.given.push(
                            Given::one(&name, key.line, "restarts-on-error", n.to_string()),
                        ),
                        ("recover_on_exit_codes", _) => {
                            r.notices.push(format!("`{name}`: {NOT_ON_ERRORS}"))
                        }
                        ("strategy" | "max_restarts_on_errors", other) => {
                            return Err(Refusal::new(
                                &name,
                                key.line,
                                format!(
                                    "is {}: give a strategy name, or a whole number of restarts",
                                    other.kind()
                                ),
                            ));
                        }
                        _ => {
                            return Err(Refusal::new(
                                &name,
                                key.line,
                                "not a key of `job_recovery` (strategy, max_restarts_on_errors)",
                            ));
                        }
                    }
                }
                requeue
            }
            other => {
                return Err(Refusal::new(
                    field,
                    value.line,
                    format!(
                        "is {}: give a strategy, or `{{strategy: FAILOVER}}`",
                        other.kind()
                    ),
                ));
            }
        };
    if requeue {
        r.given.push(Given::switch(field, value.line, "requeue"));
    }
    Ok(())
}

/// `infra: slurm`, `slurm/CLUSTER` or `slurm/CLUSTER/PARTITION` (SkyPilot's
/// `CLOUD/REGION/ZONE`, where a Slurm cluster is the region and its partition the zone; `*`
/// for any): the partition taken, the cluster checked. Another cloud is refused.
pub(super) fn infra(
    r: &mut Reading,
    field: &str,
    value: &Line<Node>,
) -> Result<Vec<Given>, Refusal> {
    let text = value.value.scalar_text().unwrap_or_default();
    let parts: Vec<&str> = text.trim().split('/').map(str::trim).collect();
    let named = |i: usize| {
        parts
            .get(i)
            .filter(|p| !p.is_empty() && **p != "*")
            .map(|p| (*p).to_owned())
    };
    if !parts[0].eq_ignore_ascii_case("slurm") {
        // Another cloud: launched here, the task runs on this cluster, as `sky launch --infra
        // slurm` runs it whatever the file names.
        r.notices
            .push(format!("`{field}: {text}` is not followed: {ELSEWHERE}"));
        return Ok(Vec::new());
    }
    if parts.len() > 3 {
        return Err(Refusal::new(
            field,
            value.line,
            format!(
                "`{text}` is not `slurm`, `slurm/CLUSTER` or `slurm/CLUSTER/PARTITION`: give one of them, or choose the partition with `rayslurm: {{partition: NAME}}`"
            ),
        ));
    }
    let mut given = Vec::new();
    if let Some(cluster) = named(1) {
        given.push(Given::one(field, value.line, SLURM_CLUSTER, cluster));
    }
    if let Some(partition) = named(2) {
        given.push(Given::one(field, value.line, "partition", partition));
    }
    Ok(given)
}

/// `ports: 8080`, `10052-10100`, or a list of them: each checked, as written.
pub(super) fn ports(field: &str, value: &Line<Node>) -> Result<Vec<String>, Refusal> {
    let items = match &value.value {
        Node::Seq(items) => items.iter().collect(),
        _ => vec![value],
    };
    items
        .into_iter()
        .map(|item| {
            let text = item.value.scalar_text().unwrap_or_default();
            if crate::sys::port_range::parse(&text).is_some() {
                Ok(text.replace(' ', ""))
            } else {
                Err(Refusal::new(
                    field,
                    item.line,
                    format!("`{text}` is not a port (1-65535) or a range of them (`10052-10100`)"),
                ))
            }
        })
        .collect()
}

/// `autostop: true | false | MINUTES | DURATION | {idle_minutes: N, down: ...}`: a cluster's
/// idle timeout (`up --idle-timeout`); `true` is SkyPilot's 5 minutes. A `launch` job ends with
/// its command, which stops it sooner (`commands::settings::task_file` leaves it to `up`).
pub(super) fn autostop(field: &str, value: &Line<Node>) -> Result<Vec<Given>, Refusal> {
    let minutes = |n: i64, line: u32| -> Result<Vec<Given>, Refusal> {
        if n < 0 {
            return Err(Refusal::new(field, line, "give idle minutes, 0 or more"));
        }
        Ok(vec![Given::one(
            field,
            line,
            "idle-timeout",
            format!("{n}m"),
        )])
    };
    match &value.value {
        Node::Null | Node::Bool(false) => Ok(Vec::new()),
        Node::Bool(true) => minutes(5, value.line),
        Node::Int(n) => minutes(*n, value.line),
        Node::Str(text) => Ok(vec![Given::one(
            field,
            value.line,
            "idle-timeout",
            text.clone(),
        )]),
        Node::Map(entries) => {
            let mut given = Vec::new();
            for (key, v) in entries {
                match (key.value.as_str(), &v.value) {
                    ("idle_minutes", Node::Int(n)) => given = minutes(*n, key.line)?,
                    // Slurm releases the nodes of a cluster that stops: there is nothing to keep.
                    ("down" | "wait_for", _) => {}
                    (other, _) => {
                        return Err(Refusal::new(
                            &format!("{field}.{other}"),
                            key.line,
                            "autostop has `idle_minutes` (and `down`)",
                        ));
                    }
                }
            }
            Ok(given)
        }
        other => Err(Refusal::new(
            field,
            value.line,
            format!("is {}: give minutes, true or false", other.kind()),
        )),
    }
}
