//! Ray's cluster YAML (`ray up config.yaml`, the schema of Ray 2.60) read into `up`'s flags:
//! `rayslurm up config.yaml`. The file's `cluster_name` names the cluster; the head type's
//! `node_config` (Slurm options under `launch`'s long names), `provider: {type: slurm, ...}`
//! (site-wide options), the setup commands and `docker` become `up`'s own flags;
//! every other node type one `--worker-type 'NAME: ...'` ([`crate::launch::worker_type`]);
//! `max_workers` `--max-nodes` (the head's nodes and it). `commands/` puts these before the
//! flags typed, which win, as it does a task file's.
//!
//! A field with no meaning on Slurm is refused as `FILE:LINE: FIELD: why` with what to write
//! instead (a cloud provider, a cloud's `node_config`, `auth`, Ray's start commands, ...);
//! `file_mounts` are `up --file-mount`s, placed on every node as it starts; an
//! unknown key gets Ray's own answer (its schema forbids them) and the closest spelling; a
//! field that needs nothing here is one notice.

use std::path::{Path, PathBuf};

use crate::error::UsageError;
use crate::launch::task_file::node::{self, Line, Node};
use crate::launch::worker_type::{TypeOption, WorkerType};

mod fields;
mod node_types;
mod refused;
#[cfg(test)]
mod tests;

/// Ray's cluster YAML, read into `up`'s flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RayCluster {
    /// As the user named it.
    pub(crate) path: PathBuf,
    /// `cluster_name`: the cluster's name.
    pub(crate) name: String,
    /// `up`'s own flags, in order (a later one of the same option wins).
    pub(crate) flags: Vec<TypeOption>,
    /// Every node type but the head's, with the line of its name.
    pub(crate) worker_types: Vec<(u32, WorkerType)>,
    /// One line for each field that needs nothing here.
    pub(crate) notices: Vec<String>,
}

impl RayCluster {
    /// `up`'s words for the file: its own flags, then one `--worker-type` a node type.
    pub(crate) fn words(&self) -> Vec<String> {
        let mut words: Vec<String> = self.flags.iter().flat_map(TypeOption::words).collect();
        words.extend(
            self.worker_types
                .iter()
                .map(|(_, t)| format!("--worker-type={}", t.flag_value())),
        );
        words
    }
}

/// A field refused: `FILE:LINE: FIELD: why`, nothing submitted.
pub(crate) fn refusal(path: &Path, field: &str, line: u32, why: &str) -> UsageError {
    let place = match line {
        0 => path.display().to_string(),
        n => format!("{}:{n}", path.display()),
    };
    UsageError::new(format!("{place}: {field}: {why}")).hint(
        "fix or remove the field (docs/clusters.md, \"From `ray up`\", says what each becomes); nothing was submitted",
    )
}

/// Whether a word given where a cluster's name goes names Ray's cluster YAML instead: a name
/// ending in `.yaml` or `.yml`, or the path (a cluster's name holds no `/`) of a file that
/// exists, from `cwd`.
pub(crate) fn names_a_file(word: &str, cwd: &Path) -> bool {
    word.ends_with(".yaml")
        || word.ends_with(".yml")
        || (word.contains('/') && cwd.join(word).is_file())
}

/// The text of the file at `path` (relative to `cwd`), and its one YAML document.
fn document(path: &Path, cwd: &Path) -> Result<Line<Node>, UsageError> {
    let text = std::fs::read_to_string(cwd.join(path)).map_err(|e| {
        UsageError::new(format!(
            "cannot read Ray's cluster YAML `{}`: {e}",
            path.display()
        ))
        .hint("name a cluster YAML that exists (`rayslurm up cluster.yaml`); a cluster's name does not end in `.yaml`")
    })?;
    let mut documents = node::parse_all(&text).map_err(|e| {
        let place = format!("{}:{}:{}", path.display(), e.line, e.column);
        UsageError::new(format!("{place}: not valid YAML: {}", e.message))
            .hint("fix the YAML there; nothing was submitted")
    })?;
    match documents.len() {
        1 => Ok(documents.remove(0)),
        0 => Err(refusal(
            path,
            "(file)",
            0,
            "is empty: give `cluster_name`, `provider: {type: slurm}` and the node types",
        )),
        n => Err(refusal(
            path,
            "(file)",
            documents[1].line,
            &format!("holds {n} YAML documents: a cluster YAML is one"),
        )),
    }
}

/// Whether the file at `path` reads as Ray's cluster YAML (a mapping with `cluster_name` or
/// `provider` or `available_node_types` at its top), not as a task file.
pub(crate) fn is_ray_cluster_file(path: &Path, cwd: &Path) -> bool {
    let Ok(Line {
        value: Node::Map(entries),
        ..
    }) = document(path, cwd)
    else {
        return false;
    };
    entries.iter().any(|(k, _)| {
        ["cluster_name", "provider", "available_node_types"].contains(&k.value.as_str())
    })
}

/// Reads Ray's cluster YAML at `path` (relative to `cwd`).
pub(crate) fn read(path: &Path, cwd: &Path) -> Result<RayCluster, UsageError> {
    let root = document(path, cwd)?;
    let entries = match root.value {
        Node::Map(entries) => entries,
        other => {
            return Err(refusal(
                path,
                "(file)",
                root.line,
                &format!(
                    "is {}: Ray's cluster YAML is a mapping of fields",
                    other.kind()
                ),
            ));
        }
    };
    let top = fields::read_top(&entries)
        .map_err(|(field, line, why)| refusal(path, &field, line, &why))?;
    let mut cluster =
        node_types::resolve(top).map_err(|(field, line, why)| refusal(path, &field, line, &why))?;
    cluster.path = path.to_owned();
    cluster.notices = cluster
        .notices
        .into_iter()
        .map(|n| format!("{}: {n}", path.display()))
        .collect();
    Ok(cluster)
}

/// The `cluster_name` of Ray's cluster YAML at `path` (relative to `cwd`): the cluster that
/// `down`, `exec`, `dashboard`, ... name by the file. Only that field is read.
pub(crate) fn cluster_name_of(path: &Path, cwd: &Path) -> Result<String, UsageError> {
    let root = document(path, cwd)?;
    let Node::Map(entries) = &root.value else {
        return Err(refusal(
            path,
            "(file)",
            root.line,
            "is not Ray's cluster YAML (a mapping with `cluster_name`)",
        ));
    };
    let Some((_, value)) = entries.iter().find(|(k, _)| k.value == "cluster_name") else {
        return Err(refusal(
            path,
            "cluster_name",
            0,
            "is missing: the cluster a YAML started is named by its `cluster_name`",
        ));
    };
    fields::text("cluster_name", value)
        .map_err(|(field, line, why)| refusal(path, &field, line, &why))
}
