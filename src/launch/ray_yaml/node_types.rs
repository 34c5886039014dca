//! `available_node_types` and `head_node_type` into `up`'s flags: the head type's `node_config`
//! and `resources` are the head's own (`up`'s flags, `--ray-head-args`); every other type is a
//! worker type, with Ray's merge of the setup commands (head: `setup_commands` then
//! `head_setup_commands`; worker: `setup_commands` then `worker_setup_commands`, or the type's
//! own `worker_setup_commands` instead) and `provider:`'s site-wide options under its own.

use super::RayCluster;
use super::fields::{
    Commands, Top, commands, count, image_of, is_slurm_option, mapping, number, text,
};
use super::refused::{self, NODE_TYPE_KEYS, Refused};
use crate::launch::task_file::node::{Line, Node};
use crate::launch::worker_type::{
    CLUSTER_ONLY, SLURM_OPTIONS, TypeOption, WorkerType, check_name, option_of, ray_start_words,
};
use crate::sys::quote::shell_quote;

/// Ray's `max_workers` when the file gives none (`fill_node_type_min_max_workers`).
const RAY_DEFAULT_MAX_WORKERS: u32 = 2;

/// One node type, read.
#[derive(Debug, Default)]
struct NodeType {
    name: String,
    line: u32,
    /// Its `node_config`'s Slurm options.
    slurm: Vec<TypeOption>,
    /// `resources:` as (name, number as written), with its line.
    resources: Vec<(String, String)>,
    resources_line: u32,
    labels: Option<TypeOption>,
    min_workers: Option<(u32, u32)>,
    max_workers: Option<(u32, u32)>,
    idle_timeout: Option<TypeOption>,
    /// Its own `worker_setup_commands`, instead of the cluster's.
    worker_setup: Option<Commands>,
    /// `docker: {worker_image: ...}`.
    image: Option<(u32, String)>,
}

/// The cluster the top level and its node types give.
pub(super) fn resolve(top: Top) -> Result<RayCluster, Refused> {
    let mut notices = top.notices.clone();
    let mut flags = top.provider.clone();
    let head_setup = merged(&top.setup, &top.head_setup);
    if let Some((line, image)) = top.docker.head_image.as_ref().or(top.docker.image.as_ref()) {
        flags.push(TypeOption::new(
            "docker",
            *line,
            "container-image",
            Some(image.clone()),
        ));
    }
    let mut types = Vec::new();
    for (key, value) in &top.node_types {
        types.push(node_type(key, value, &mut notices)?);
    }
    let head = head_index(&top, &types)?;
    let mut setup = head_setup.clone();
    let mut worker_types = Vec::new();
    if let Some(at) = head {
        let head = types.remove(at);
        flags.extend(head.slurm.iter().filter(|o| o.long != "setup").cloned());
        setup.extend(
            head.slurm
                .iter()
                .filter(|o| o.long == "setup")
                .filter_map(|o| o.value.clone()),
        );
        flags.extend(ray_head_args(&head));
        // More nodes of the head's type, as Ray's head type's `max_workers` asks.
        if head.max_workers.is_some_and(|(_, n)| n > 0) {
            worker_types.push(worker_type(&head, &top, &head_setup, true)?);
        }
    }
    if !setup.is_empty() {
        flags.push(TypeOption::new(
            "setup_commands",
            top.setup.line.max(top.head_setup.line),
            "setup",
            Some(script(&setup)),
        ));
    }
    for t in &types {
        worker_types.push(worker_type(t, &top, &head_setup, false)?);
    }
    flags.extend(top.file_mounts.iter().cloned());
    scaling(&top, &worker_types, &mut flags, &mut notices);
    Ok(RayCluster {
        path: std::path::PathBuf::new(),
        name: top.name,
        flags,
        worker_types,
        notices,
    })
}

/// Where the head's type is among `types`: `head_node_type`'s, which must be one of them
/// (none without node types).
fn head_index(top: &Top, types: &[NodeType]) -> Result<Option<usize>, Refused> {
    Ok(match (&top.head_node_type, types.is_empty()) {
        (None, true) => None,
        (None, false) => {
            return Err((
                "head_node_type".into(),
                0,
                "is missing: name the node type of the head, one of `available_node_types`".into(),
            ));
        }
        (Some(name), _) => Some(types.iter().position(|t| t.name == name.value).ok_or_else(
            || {
                let names: Vec<&str> = types.iter().map(|t| t.name.as_str()).collect();
                (
                    "head_node_type".to_owned(),
                    name.line,
                    format!(
                        "`{}` is not one of `available_node_types` ({})",
                        name.value,
                        names.join(", ")
                    ),
                )
            },
        )?),
    })
}

/// `max_workers` and `idle_timeout_minutes`: the elastic cluster's flags when it has worker
/// types, else noted.
fn scaling(
    top: &Top,
    worker_types: &[(u32, WorkerType)],
    flags: &mut Vec<TypeOption>,
    notices: &mut Vec<String>,
) {
    if !worker_types.is_empty() {
        flags.extend(top.idle_timeout.clone());
        let head_nodes = flags
            .iter()
            .rev()
            .find(|o| o.long == "num-nodes")
            .and_then(|o| o.value.as_deref()?.parse::<u32>().ok())
            .unwrap_or(1);
        let (line, max) = top.max_workers.unwrap_or((0, RAY_DEFAULT_MAX_WORKERS));
        flags.push(TypeOption::new(
            "max_workers",
            line,
            "max-nodes",
            Some((head_nodes + max).to_string()),
        ));
    } else if top.idle_timeout.is_some() || top.max_workers.is_some_and(|(_, n)| n > 0) {
        notices.push("`max_workers` and `idle_timeout_minutes` need nothing here: no node type but the head's, so the cluster is the head's nodes alone".into());
    }
}

/// `setup_commands` and a side's own, as Ray merges them.
fn merged(common: &Commands, own: &Commands) -> Vec<String> {
    common
        .commands
        .iter()
        .chain(&own.commands)
        .cloned()
        .collect()
}

/// Commands as one `--setup`: each in turn, the first to fail failing the setup (as Ray runs
/// them).
fn script(commands: &[String]) -> String {
    match commands {
        [one] => one.clone(),
        many => format!("set -e\n{}", many.join("\n")),
    }
}

/// Reads the node type `key`.
fn node_type(
    key: &Line<String>,
    value: &Line<Node>,
    notices: &mut Vec<String>,
) -> Result<NodeType, Refused> {
    let at = |k: &str| format!("available_node_types.{}.{k}", key.value);
    let mut t = NodeType {
        name: key.value.clone(),
        line: key.line,
        ..NodeType::default()
    };
    let entries = mapping(&at(""), value)?;
    for required in ["resources", "node_config"] {
        if !entries.iter().any(|(k, _)| k.value == required) {
            return Err((
                format!("available_node_types.{}", key.value),
                key.line,
                format!("has no `{required}` (Ray's schema needs it; `{required}: {{}}` for none)"),
            ));
        }
    }
    for (k, v) in entries {
        let field = at(&k.value);
        match k.value.as_str() {
            "node_config" => t.slurm = node_config(&field, v)?,
            "resources" => {
                t.resources_line = k.line;
                for (r, n) in mapping(&field, v)? {
                    let amount = count(&format!("{field}.{}", r.value), n)?;
                    t.resources.push((r.value.clone(), amount.to_string()));
                }
            }
            "labels" => t.labels = option_of(&field, k, v, &["labels"]).map_err(|(l, why)| (field.clone(), l, why))?.pop(),
            "min_workers" => t.min_workers = Some((k.line, count(&field, v)?)),
            "max_workers" => t.max_workers = Some((k.line, count(&field, v)?)),
            "idle_timeout_s" if matches!(v.value, Node::Null) => {}
            "idle_timeout_s" => {
                let secs = number(&field, v)?.ceil().max(1.0);
                t.idle_timeout = Some(TypeOption::new(&field, k.line, "idle-timeout", Some(format!("{secs:.0}"))));
            }
            "priority" => {
                count(&field, v)?;
                notices.push(format!("`{field}` needs nothing here: the head picks, for each piece of Ray's demand, a type that can hold it"));
            }
            "worker_setup_commands" => t.worker_setup = Some(commands(&field, v)?),
            "initialization_commands" if commands(&field, v)?.commands.is_empty() => {}
            "initialization_commands" => return Err((field, k.line, "there is no step before the setup here, outside the container: put these commands first in `worker_setup_commands`".into())),
            "docker" => t.image = type_docker(&field, v, notices)?,
            other => return Err((field, k.line, refused::unknown(other, NODE_TYPE_KEYS, "a node type"))),
        }
    }
    if let (Some((_, min)), Some((line, max))) = (t.min_workers, t.max_workers)
        && min > max
    {
        return Err((
            at("max_workers"),
            line,
            format!("{max} is less than min_workers {min}"),
        ));
    }
    Ok(t)
}

/// A node type's `node_config`: Slurm options under `launch`'s long names (`_` or `-`); a
/// cloud's keys refused with what to write instead.
fn node_config(field: &str, value: &Line<Node>) -> Result<Vec<TypeOption>, Refused> {
    let allowed: Vec<&str> = SLURM_OPTIONS
        .iter()
        .copied()
        .chain(["preemptible", "rollover"])
        .collect();
    let mut options = Vec::new();
    for (k, v) in mapping(field, value)? {
        let key_field = format!("{field}.{}", k.value);
        if let Some(why) = refused::cloud_node_config(&k.value) {
            return Err((key_field, k.line, why.to_owned()));
        }
        let read = option_of(&key_field, k, v, &allowed)
            .map_err(|(line, why)| (key_field.clone(), line, why))?;
        options.extend(read);
    }
    Ok(options)
}

/// A node type's `docker:`: its `worker_image`; the rest noted or refused as the top level's.
fn type_docker(
    field: &str,
    value: &Line<Node>,
    notices: &mut Vec<String>,
) -> Result<Option<(u32, String)>, Refused> {
    let mut image = None;
    for (k, v) in mapping(field, value)? {
        let key_field = format!("{field}.{}", k.value);
        match k.value.as_str() {
            "worker_image" => image = Some((k.line, image_of(&text(&key_field, v)?))),
            other => refused::docker_key(notices, &key_field, other, k.line)?,
        }
    }
    Ok(image)
}

/// The head type's `resources` and `labels` as `--ray-head-args` (what Ray is told of the
/// head: `--num-cpus`, `--num-gpus`, `--memory`, `--object-store-memory`, `--resources`,
/// `--labels`).
fn ray_head_args(head: &NodeType) -> Option<TypeOption> {
    // `count` read each amount: whole numbers.
    let resources = head
        .resources
        .iter()
        .map(|(name, amount)| (name.clone(), amount.parse::<f64>().unwrap_or(0.0)))
        .collect();
    let labels = head.labels.as_ref().and_then(|l| l.value.as_deref());
    let words = ray_start_words(&resources, labels);
    if words.is_empty() {
        return None;
    }
    let text: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
    let field = format!("available_node_types.{}.resources", head.name);
    Some(TypeOption::new(
        &field,
        head.resources_line,
        "ray-head-args",
        Some(text.join(" ")),
    ))
}

/// A worker type: `provider:`'s options it does not set, its own Slurm options, its setup,
/// image, resources, labels and scaling. `of_head`: the head's own type, grown as workers.
fn worker_type(
    t: &NodeType,
    top: &Top,
    head_setup: &[String],
    of_head: bool,
) -> Result<(u32, WorkerType), Refused> {
    check_name(&t.name).map_err(|why| (format!("available_node_types.{}", t.name), t.line, why))?;
    let field = |k: &str| format!("available_node_types.{}.{k}", t.name);
    let mut options: Vec<TypeOption> = top
        .provider
        .iter()
        .filter(|p| !CLUSTER_ONLY.contains(&p.long.as_str()))
        .filter(|p| p.long == "sbatch-arg" || !t.slurm.iter().any(|o| o.long == p.long))
        .cloned()
        .collect();
    options.extend(t.slurm.iter().filter(|o| o.long != "setup").cloned());
    options.extend(type_setup(t, top, head_setup));
    let image = t.image.as_ref().or(top.docker.worker_image.as_ref()).or(top
        .docker
        .image
        .as_ref()
        .filter(|_| top.docker.head_image.is_some()));
    if let Some((line, image)) = image {
        options.push(TypeOption::new(
            &field("docker"),
            *line,
            "container-image",
            Some(image.clone()),
        ));
    }
    options.extend(ray_and_scaling(t, top));
    options.extend(t.idle_timeout.clone());
    if of_head {
        // Its node_config is the head's, which a worker type has already.
        options.retain(|o| {
            !is_slurm_option(&o.long) || o.long == "setup" || o.long == "container-image"
        });
    }
    Ok((
        t.line,
        WorkerType {
            name: t.name.clone(),
            options,
        },
    ))
}

/// A worker type's `--setup`: its own `worker_setup_commands` (else the cluster's merged with
/// `setup_commands`), then its `node_config`'s `setup`; `true` where it has none but the head
/// has one (a worker type is the head's job with its options on top).
fn type_setup(t: &NodeType, top: &Top, head_setup: &[String]) -> Option<TypeOption> {
    let field = |k: &str| format!("available_node_types.{}.{k}", t.name);
    let mut options = Vec::new();
    let mut setup = match &t.worker_setup {
        Some(own) => own.commands.clone(),
        None => merged(&top.setup, &top.worker_setup),
    };
    setup.extend(
        t.slurm
            .iter()
            .filter(|o| o.long == "setup")
            .filter_map(|o| o.value.clone()),
    );
    if !setup.is_empty() {
        options.push(TypeOption::new(
            &field("worker_setup_commands"),
            top.worker_setup.line,
            "setup",
            Some(script(&setup)),
        ));
    } else if !head_setup.is_empty() {
        // A worker type is the head's job with its options on top: not the head's setup.
        options.push(TypeOption::new(
            &field("worker_setup_commands"),
            t.line,
            "setup",
            Some("true".into()),
        ));
    }
    options.pop()
}

/// What Ray is told of a worker type (`--resources`, `--labels`) and its bounds.
fn ray_and_scaling(t: &NodeType, top: &Top) -> Vec<TypeOption> {
    let field = |k: &str| format!("available_node_types.{}.{k}", t.name);
    let mut options = Vec::new();
    if !t.resources.is_empty() {
        let object: serde_json::Map<String, serde_json::Value> = t
            .resources
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.parse::<u64>()
                        .map_or(serde_json::Value::Null, serde_json::Value::from),
                )
            })
            .collect();
        options.push(TypeOption::new(
            &field("resources"),
            t.resources_line,
            "resources",
            Some(serde_json::Value::Object(object).to_string()),
        ));
    }
    options.extend(t.labels.clone());
    if let Some((line, min)) = t.min_workers.filter(|(_, n)| *n > 0) {
        options.push(TypeOption::new(
            &field("min_workers"),
            line,
            "min-workers",
            Some(min.to_string()),
        ));
    }
    let (line, max) = t.max_workers.unwrap_or((
        t.line,
        top.max_workers.map_or(RAY_DEFAULT_MAX_WORKERS, |(_, n)| n),
    ));
    options.push(TypeOption::new(
        &field("max_workers"),
        line,
        "max-workers",
        Some(max.to_string()),
    ));
    options
}
