//! The top level of Ray's cluster YAML: each field read, refused or noted; the node types are
//! kept for `node_types`.

use super::refused::{self, Refused};
use crate::launch::task_file::node::{Line, Node};
use crate::launch::validate;
use crate::launch::worker_type::{SLURM_OPTIONS, TypeOption, option_of};

/// A mapping's entries, each key and value with its line.
pub(super) type Entries = [(Line<String>, Line<Node>)];

/// What the top level gives.
#[derive(Debug, Default)]
pub(super) struct Top {
    pub(super) name: String,
    /// `max_workers` and its line.
    pub(super) max_workers: Option<(u32, u32)>,
    /// `idle_timeout_minutes`, as `--worker-idle-timeout` (of an elastic cluster only).
    pub(super) idle_timeout: Option<TypeOption>,
    /// `provider:`'s site-wide Slurm options, for the head and every type.
    pub(super) provider: Vec<TypeOption>,
    pub(super) docker: Docker,
    pub(super) head_node_type: Option<Line<String>>,
    pub(super) node_types: Vec<(Line<String>, Line<Node>)>,
    pub(super) setup: Commands,
    pub(super) head_setup: Commands,
    pub(super) worker_setup: Commands,
    /// `file_mounts`, as `--file-mount DEST=SRC` each.
    pub(super) file_mounts: Vec<TypeOption>,
    pub(super) notices: Vec<String>,
}

/// A list of shell commands and the line of its field.
#[derive(Debug, Default, Clone)]
pub(super) struct Commands {
    pub(super) line: u32,
    pub(super) commands: Vec<String>,
}

/// `docker:`'s images (each with its line): `image` for every node, `head_image` and
/// `worker_image` for one side.
#[derive(Debug, Default)]
pub(super) struct Docker {
    pub(super) image: Option<(u32, String)>,
    pub(super) head_image: Option<(u32, String)>,
    pub(super) worker_image: Option<(u32, String)>,
}

/// The Slurm options `provider:` takes for the whole cluster (by long name).
const PROVIDER_OPTIONS: &[&str] = &[
    "partition",
    "account",
    "qos",
    "time",
    "constraint",
    "exclusive",
    "sbatch-arg",
    "container-image",
    "load-env",
    "gpu-directive",
];

/// Reads the top level's `entries`.
pub(super) fn read_top(entries: &[(Line<String>, Line<Node>)]) -> Result<Top, Refused> {
    let mut top = Top::default();
    let mut named = false;
    let mut provided = false;
    for (key, value) in entries {
        let (field, line) = (key.value.as_str(), key.line);
        match field {
            "cluster_name" => {
                let name = text(field, value)?;
                validate::cluster_name(&name).map_err(|e| {
                    (
                        field.to_owned(),
                        value.line,
                        format!("{} ({})", e.message, e.hint.unwrap_or_default()),
                    )
                })?;
                (top.name, named) = (name, true);
            }
            "max_workers" => top.max_workers = Some((line, count(field, value)?)),
            "idle_timeout_minutes" => {
                let minutes = number(field, value)?;
                let secs = (minutes * 60.0).ceil().max(1.0);
                top.idle_timeout = Some(TypeOption::new(
                    field,
                    line,
                    "worker-idle-timeout",
                    Some(format!("{secs:.0}")),
                ));
            }
            "upscaling_speed" => {
                number(field, value)?;
                top.notices.push(refused::UPSCALING.to_owned());
            }
            "provider" => {
                provider(&mut top, value)?;
                provided = true;
            }
            "docker" => docker(&mut top, value)?,
            "head_node_type" => {
                top.head_node_type = Some(Line {
                    value: text(field, value)?,
                    line: value.line,
                });
            }
            "available_node_types" => top.node_types = mapping(field, value)?.to_vec(),
            "file_mounts" => top.file_mounts = file_mounts(value)?,
            "setup_commands" => top.setup = commands(field, value)?,
            "head_setup_commands" => top.head_setup = commands(field, value)?,
            "worker_setup_commands" => top.worker_setup = commands(field, value)?,
            "metadata" => {}
            other => refused::top_field(&mut top.notices, other, line, value)?,
        }
    }
    if !named {
        return Err(("cluster_name".into(), 0, "is missing: Ray's cluster YAML names its cluster (`cluster_name: mycluster`), and rayslurm's commands take that name".into()));
    }
    if !provided {
        return Err(("provider".into(), 0, "is missing: write `provider: {type: slurm}` (with site-wide options such as `account:` if you like)".into()));
    }
    Ok(top)
}

/// A field's text.
pub(super) fn text(field: &str, value: &Line<Node>) -> Result<String, Refused> {
    value.value.scalar_text().ok_or_else(|| {
        (
            field.to_owned(),
            value.line,
            format!("is {}: give text", value.value.kind()),
        )
    })
}

/// A whole number of at least 0.
pub(super) fn count(field: &str, value: &Line<Node>) -> Result<u32, Refused> {
    match value.value {
        Node::Int(n) if n >= 0 => u32::try_from(n)
            .map_err(|_| (field.to_owned(), value.line, format!("{n} is too large"))),
        _ => Err((
            field.to_owned(),
            value.line,
            "give a whole number of at least 0".into(),
        )),
    }
}

/// A number of at least 0.
pub(super) fn number(field: &str, value: &Line<Node>) -> Result<f64, Refused> {
    match value.value {
        #[allow(clippy::cast_precision_loss)]
        Node::Int(n) if n >= 0 => Ok(n as f64),
        Node::Float(f) if f >= 0.0 && f.is_finite() => Ok(f),
        _ => Err((
            field.to_owned(),
            value.line,
            "give a number of at least 0".into(),
        )),
    }
}

/// A mapping's entries.
pub(super) fn mapping<'a>(field: &str, value: &'a Line<Node>) -> Result<&'a Entries, Refused> {
    match &value.value {
        Node::Map(entries) => Ok(entries),
        Node::Null => Ok(&[]),
        other => Err((
            field.to_owned(),
            value.line,
            format!("is {}: give a mapping (`key: value` lines)", other.kind()),
        )),
    }
}

/// A list of shell commands (a single text is one command).
pub(super) fn commands(field: &str, value: &Line<Node>) -> Result<Commands, Refused> {
    let commands = match &value.value {
        Node::Seq(items) => items
            .iter()
            .map(|i| {
                i.value.scalar_text().ok_or_else(|| {
                    (
                        field.to_owned(),
                        i.line,
                        "give a list of shell commands".to_owned(),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Node::Null => Vec::new(),
        Node::Str(one) => vec![one.clone()],
        other => {
            return Err((
                field.to_owned(),
                value.line,
                format!("is {}: give a list of shell commands", other.kind()),
            ));
        }
    };
    Ok(Commands {
        line: value.line,
        commands,
    })
}

/// `provider:`: `type: slurm` (any other provider refused at its line) and site-wide Slurm
/// options, each as `launch` names it.
fn provider(top: &mut Top, value: &Line<Node>) -> Result<(), Refused> {
    let entries = mapping("provider", value)?;
    let kind = entries.iter().find(|(k, _)| k.value == "type");
    match kind {
        None => {
            return Err((
                "provider".into(),
                value.line,
                "has no `type`: write `provider: {type: slurm}`".into(),
            ));
        }
        Some((_, v)) => {
            let kind = text("provider.type", v)?;
            if kind != "slurm" {
                return Err((
                    format!("provider.type: {kind}"),
                    v.line,
                    refused::cloud_provider(&kind),
                ));
            }
        }
    }
    for (key, v) in entries.iter().filter(|(k, _)| k.value != "type") {
        let field = format!("provider.{}", key.value);
        let options = option_of(&field, key, v, PROVIDER_OPTIONS)
            .map_err(|(line, why)| (field.clone(), line, why))?;
        top.provider.extend(options);
    }
    Ok(())
}

/// `docker:`: its images; run options refused (rayslurm runs the image with its container
/// runtime, not `docker run`); the rest noted.
fn docker(top: &mut Top, value: &Line<Node>) -> Result<(), Refused> {
    for (key, v) in mapping("docker", value)? {
        let field = format!("docker.{}", key.value);
        let image = || text(&field, v).map(|t| Some((key.line, image_of(&t))));
        match key.value.as_str() {
            "image" => top.docker.image = image()?,
            "head_image" => top.docker.head_image = image()?,
            "worker_image" => top.docker.worker_image = image()?,
            other => refused::docker_key(&mut top.notices, &field, other, key.line)?,
        }
    }
    Ok(())
}

/// Ray's image (a Docker registry's name) as `--container-image` takes it: `docker://NAME`;
/// a path or a name with its scheme as it is.
pub(super) fn image_of(image: &str) -> String {
    if image.contains("://") || image.starts_with('/') || image.starts_with('.') {
        image.to_owned()
    } else {
        format!("docker://{image}")
    }
}

/// `file_mounts: {REMOTE: LOCAL}`: each `--file-mount REMOTE=LOCAL`, copied at `up` and
/// placed on every node as it starts (workers that join later too). REMOTE is a path on the
/// nodes, absolute or `~/...` as Ray has it: one relative to nothing is refused here, at its
/// line, as are the forms no node can make; the rest (a node's system directory, a LOCAL that
/// is not there) when `up` resolves `--file-mount`.
fn file_mounts(value: &Line<Node>) -> Result<Vec<TypeOption>, Refused> {
    let mut mounts = Vec::new();
    for (dest, source) in mapping("file_mounts", value)? {
        let field = format!("file_mounts.{}", dest.value);
        let src = text(&field, source)?;
        let place = crate::launch::file_mounts::destination(&dest.value, true)
            .map_err(|why| (field.clone(), dest.line, why))?;
        if let crate::launch::file_mounts::MountTo::Workdir(rel) = place {
            return Err((
                field,
                dest.line,
                format!(
                    "`{}` is relative, and Ray's remote paths are not: write `~/{0}` (under your home on each node) or an absolute path such as `/tmp/{0}` or `/{0}`",
                    rel.display()
                ),
            ));
        }
        mounts.push(TypeOption::new(
            &field,
            dest.line,
            "file-mount",
            Some(format!("{}={src}", dest.value)),
        ));
    }
    Ok(mounts)
}

/// Whether `long` is a Slurm option a node type's `node_config` takes.
pub(super) fn is_slurm_option(long: &str) -> bool {
    SLURM_OPTIONS.contains(&long)
}
