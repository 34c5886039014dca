//! The top level of a task file: SkyPilot's fields and the `rayslurm:` section, each into
//! flags or a refusal.

use std::path::PathBuf;

use super::given::{Given, Value};
use super::node::{Line, Node};
use super::{Reading, Refusal, apply_workdir, mounts, resources};
use crate::launch::validate;

/// Top-level fields refused, and why.
const REFUSED: &[(&str, &str)] = &[
    ("pool", "worker pools are SkyPilot's"),
    (
        "depends_on",
        "a graph of tasks goes in a pipeline's first document, beside its `name` (docs/task-files.md, Pipelines)",
    ),
    (
        "dependencies",
        "a graph of tasks goes in a pipeline's first document, beside its `name` (docs/task-files.md, Pipelines)",
    ),
    (
        "execution",
        "tasks run side by side are not run here: launch each task file of its own, or write them as a pipeline",
    ),
    (
        "volumes",
        "the nodes see the shared filesystem: name its paths in `run`",
    ),
    (
        "event_callback",
        "not supported: run the callback at the end of `run`",
    ),
    (
        "experimental",
        "SkyPilot's experimental settings mean nothing here",
    ),
    (
        "docker",
        "not a task field: give the image as `resources: {image_id: docker:IMAGE}` or `rayslurm: {container_image: IMAGE}`",
    ),
    (
        "image_id",
        "it goes under `resources:` (`resources: {image_id: docker:IMAGE}`), or give `rayslurm: {container_image: IMAGE}`",
    ),
];

/// Top-level fields that are not followed here, each said once, and why.
const NOTICED: &[(&str, &str)] = &[
    (
        "config",
        "SkyPilot's own settings (its clouds', Kubernetes pods', ...) are not followed: put rayslurm's under `rayslurm:`",
    ),
    // As `sky launch` runs a service's file: the task once, without SkyServe.
    (
        "service",
        "`launch` runs the task once, as `sky launch` does; SkyServe's replicas, readiness probe and load balancer are not made",
    ),
];

/// The key of rayslurm's own, in `rayslurm:`, that asks for a Ray job.
const RAY_JOB: &str = "ray_job";

/// The flag a file without `workdir:` gives (`launch` only: see `commands::settings::task_file`).
pub(crate) const EMPTY_WORKDIR: &str = "empty-workdir";

/// Reads one YAML document of the file (the file, or one stage of a pipeline) into `r`;
/// `stem` names the job when `name` does not.
pub(super) fn read_document(r: &mut Reading, root: Line<Node>, stem: &str) -> Result<(), Refusal> {
    let entries = match root.value {
        Node::Map(entries) => entries,
        Node::Null => Vec::new(),
        other => {
            return Err(Refusal::new(
                "(file)",
                root.line,
                format!("is {}: a task file is a mapping of fields", other.kind()),
            ));
        }
    };
    let mut named = false;
    let mut own = Vec::new();
    let mut mounts = None;
    for (key, value) in &entries {
        let (field, line) = (key.value.as_str(), key.line);
        match field {
            "name" => {
                named = true;
                let name = text_of(field, value)?;
                validate::exp_name(&name).map_err(|e| Refusal::new(field, line, e.to_string()))?;
                r.given.push(Given::one(field, line, "exp-name", name));
            }
            "num_nodes" => num_nodes(r, field, value)?,
            "resources" => resources::read(r, value)?,
            "envs" | "secrets" => envs(r, field, value)?,
            "workdir" => workdir(r, field, value)?,
            "setup" => r
                .given
                .push(Given::one(field, line, "setup", text_of(field, value)?)),
            "run" => r
                .given
                .push(Given::one(field, line, "command", text_of(field, value)?)),
            // Read last: `$VAR` in it are the task's `envs`, wherever they are in the file.
            "file_mounts" => mounts = Some(value),
            "rayslurm" => own = section(value)?,
            other if NOTICED.iter().any(|(k, _)| *k == other) => {
                let (_, why) = NOTICED
                    .iter()
                    .find(|(k, _)| *k == other)
                    .unwrap_or(&("", ""));
                r.notice(other, why);
            }
            other => {
                let why = REFUSED
                    .iter()
                    .find(|(k, _)| *k == other)
                    .map(|(_, why)| (*why).to_owned())
                    .unwrap_or_else(|| {
                        "not a task field rayslurm knows (see docs/task-files.md)".to_owned()
                    });
                return Err(Refusal::new(other, line, why));
            }
        }
    }
    if let Some(value) = mounts {
        file_mounts(r, value)?;
    }
    if !named && validate::exp_name(stem).is_ok() {
        r.given.push(Given::one("name", 0, "exp-name", stem));
    }
    let has = |field: &str| entries.iter().any(|(k, _)| k.value == field);
    if has("setup") && !has("run") {
        setup_alone(r);
    }
    as_skypilot_runs(r, has("workdir"), &own);
    r.given.extend(
        own.into_iter()
            .filter(|g| g.long != RAY_JOB.replace('_', "-")),
    );
    Ok(())
}

/// A task of `setup` alone, as SkyPilot runs one: every node's setup, then the run ends.
fn setup_alone(r: &mut Reading) {
    r.given.push(Given::one("setup", 0, "command", "true"));
    r.notice(
        "run",
        "there is none: the run ends once every node's setup has succeeded",
    );
}

/// How and where SkyPilot runs a task, unless the file's own section says otherwise: `run`
/// on every node (not on the head of a Ray cluster, as `ray_job: true` asks), and, as a
/// SkyPilot node starts in a directory of its own disk, each node in a new, empty one when the
/// file names no workdir.
fn as_skypilot_runs(r: &mut Reading, has_workdir: bool, own: &[Given]) {
    let sets = |longs: &[&str]| own.iter().any(|g| longs.contains(&g.long.as_str()));
    let ray_job = own
        .iter()
        .any(|g| g.long == RAY_JOB.replace('_', "-") && g.value == Value::Switch(true));
    if !ray_job && !sets(&["per-node", "no-ray"]) {
        r.given.push(Given::switch("run", 0, "per-node"));
    }
    if !has_workdir && !sets(&["workdir", "snapshot", EMPTY_WORKDIR]) {
        r.given.push(Given::switch("workdir", 0, EMPTY_WORKDIR));
    }
}

/// A field's text (a scalar; numbers as written).
fn text_of(field: &str, value: &Line<Node>) -> Result<String, Refusal> {
    value.value.scalar_text().ok_or_else(|| {
        Refusal::new(
            field,
            value.line,
            format!("is {}: give text", value.value.kind()),
        )
    })
}

/// `num_nodes: N`: `--num-nodes N`.
fn num_nodes(r: &mut Reading, field: &str, value: &Line<Node>) -> Result<(), Refusal> {
    match value.value {
        Node::Int(n) if n >= 1 => {
            r.given
                .push(Given::one(field, value.line, "num-nodes", n.to_string()));
            Ok(())
        }
        _ => Err(Refusal::new(
            field,
            value.line,
            "give a whole number of nodes, at least 1",
        )),
    }
}

/// `envs:` or `secrets:`: `--env KEY=VALUE` each; a key without a value must come from the
/// command line.
fn envs(r: &mut Reading, field: &str, value: &Line<Node>) -> Result<(), Refusal> {
    let Node::Map(entries) = &value.value else {
        return Err(Refusal::new(
            field,
            value.line,
            format!("is {}: give `KEY: VALUE` lines", value.value.kind()),
        ));
    };
    for (key, v) in entries {
        let name = format!("{field}.{}", key.value);
        match &v.value {
            Node::Null => r.needed_env.push((name.clone(), key.line)),
            other => {
                let text = other.scalar_text().ok_or_else(|| {
                    Refusal::new(
                        &name,
                        key.line,
                        format!("is {}: give one value", other.kind()),
                    )
                })?;
                // A secret's value is never shown (`--secret`, where the command has it).
                let long = if field == "secrets" { "secret" } else { "env" };
                r.given.push(Given::one(
                    &name,
                    key.line,
                    long,
                    format!("{}={text}", key.value),
                ));
            }
        }
    }
    Ok(())
}

/// `workdir: DIR` (relative to the working directory, as SkyPilot takes it).
fn workdir(r: &mut Reading, field: &str, value: &Line<Node>) -> Result<(), Refusal> {
    let dir = match &value.value {
        Node::Str(dir) => dir,
        Node::Map(entries) => return mounts::git_workdir(r, field, value, entries),
        _ => {
            return Err(Refusal::new(
                field,
                value.line,
                "give a local directory, or a git repository as `{url: URL, ref: REF}`",
            ));
        }
    };
    let dir = r.cwd.join(home_expanded(dir));
    let dir = dir
        .canonicalize()
        .map_err(|e| Refusal::new(field, value.line, format!("`{}`: {e}", dir.display())))?;
    if !dir.is_dir() {
        return Err(Refusal::new(
            field,
            value.line,
            format!("`{}` is not a directory", dir.display()),
        ));
    }
    r.given.push(apply_workdir(field, value.line, &dir));
    Ok(())
}

/// `~` and `~/...` as a shell (and SkyPilot) reads them: under your home directory.
fn home_expanded(path: &str) -> PathBuf {
    let home = || std::env::home_dir().unwrap_or_default();
    match path.strip_prefix('~') {
        Some("") => home(),
        Some(rest) if rest.starts_with('/') => home().join(&rest[1..]),
        _ => PathBuf::from(path),
    }
}

/// `file_mounts:`: local sources copied at submission and placed on each node.
fn file_mounts(r: &mut Reading, value: &Line<Node>) -> Result<(), Refusal> {
    mounts::file_mounts(r, value)
}

/// `rayslurm:`: each key a flag of the command by its own name (`exp_name`, `time`, ...).
fn section(value: &Line<Node>) -> Result<Vec<Given>, Refusal> {
    let Node::Map(entries) = &value.value else {
        return Err(Refusal::new(
            "rayslurm",
            value.line,
            "give `option: value` lines, e.g. `partition: gpu`",
        ));
    };
    let mut given = Vec::new();
    for (key, v) in entries {
        let field = format!("rayslurm.{}", key.value);
        if key.value == "worker_types" {
            given.extend(super::worker_types::read(&field, v)?);
            continue;
        }
        let value = match &v.value {
            Node::Bool(b) => Value::Switch(*b),
            Node::Seq(items) => Value::Values(
                items
                    .iter()
                    .map(|i| {
                        i.value
                            .scalar_text()
                            .ok_or_else(|| Refusal::new(&field, i.line, "give a list of values"))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            other => Value::Values(vec![other.scalar_text().ok_or_else(|| {
                Refusal::new(
                    &field,
                    key.line,
                    format!(
                        "is {}: give a value, a list of values or true/false",
                        other.kind()
                    ),
                )
            })?]),
        };
        given.push(Given {
            long: key.value.replace('_', "-"),
            field,
            line: key.line,
            value,
        });
    }
    Ok(given)
}
