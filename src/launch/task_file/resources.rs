//! SkyPilot's `resources:` on Slurm: `accelerators` (GPUs of a type per node, or candidates
//! with `any_of`/`ordered`: `accelerators.rs`), `cpus` and
//! `memory` (per node) map to the job's request, `image_id: docker:IMAGE` to the run's image;
//! placement in clouds is refused, and what needs nothing on a cluster gets a notice.

use super::accelerators::Accelerators;
use super::given::{Given, Value};
use super::node::{Line, Node};
use super::{Reading, Refusal};

mod placement;
#[cfg(test)]
mod tests;

pub(crate) use placement::{SLURM_CLUSTER, USE_SPOT};

/// The fields refused, and why.
const REFUSED: &[(&str, &str)] = &[
    (
        "instance_type",
        "Slurm allocates nodes, not instance types: ask for `accelerators`, `cpus`, `memory`, or `rayslurm: {constraint: FEATURES}`",
    ),
    ("accelerator_args", "TPU settings mean nothing on Slurm"),
];

/// A cloud's placement: not followed, said once each ([`placement::ELSEWHERE`]).
const ELSEWHERE: &[&str] = &["cloud", "region", "zone"];

/// The fields that need nothing on a Slurm cluster, and why.
const NO_ACTION: &[(&str, &str)] = &[
    (
        "disk_size",
        "nodes use their own disks and the shared filesystem",
    ),
    (
        "disk_tier",
        "nodes use their own disks and the shared filesystem",
    ),
    ("labels", "Slurm jobs carry no labels"),
    ("network_tier", "the cluster's network is what it is"),
];

/// `resources:` into flags.
pub(super) fn read(r: &mut Reading, value: &Line<Node>) -> Result<(), Refusal> {
    let Node::Map(entries) = &value.value else {
        return Err(Refusal::new(
            "resources",
            value.line,
            format!(
                "is {}: give one mapping (several candidate resources are not supported)",
                value.value.kind()
            ),
        ));
    };
    // Less than a whole node asked for: the node is shared, as SkyPilot's Slurm jobs share it
    // (`rayslurm: {exclusive: true}`, after this, takes it whole again).
    let partial = ["cpus", "memory", "accelerators", "any_of", "ordered"];
    if entries
        .iter()
        .any(|(k, _)| partial.contains(&k.value.as_str()))
    {
        r.given.push(Given {
            field: "resources".to_owned(),
            line: value.line,
            long: "exclusive".to_owned(),
            value: Value::Switch(false),
        });
    }
    let mut gpus = Accelerators::default();
    for (key, value) in entries {
        let field = format!("resources.{}", key.value);
        let line = key.line;
        match key.value.as_str() {
            "accelerators" | "any_of" | "ordered" => gpus.take(r, key, value)?,
            "cpus" => r.given.push(Given::one(
                &field,
                line,
                "cpus-per-task",
                cpus(&field, value)?,
            )),
            "memory" => r
                .given
                .push(Given::one(&field, line, "mem", memory(&field, value)?)),
            "infra" => {
                let given = placement::infra(r, &field, value)?;
                r.given.extend(given);
            }
            place if ELSEWHERE.contains(&place) => r.notices.push(format!(
                "`{field}: {}` is not followed: {}",
                value.value.scalar_text().unwrap_or_default(),
                placement::ELSEWHERE
            )),
            "job_recovery" => placement::job_recovery(r, &field, value)?,
            "ports" => r.ports.extend(placement::ports(&field, value)?),
            "image_id" => {
                let image = image_id(r, &field, value)?;
                r.given
                    .push(Given::one(&field, line, "container-image", image));
            }
            "use_spot" => r.given.extend(placement::use_spot(&field, value)?),
            "autostop" => {
                r.given.extend(placement::autostop(&field, value)?);
                r.notices.push(format!(
                    "`{field}` is a cluster's idle timeout (`rayslurm up`): a `launch` job ends with its command"
                ));
            }
            other => {
                if let Some((_, why)) = REFUSED.iter().find(|(k, _)| *k == other) {
                    return Err(Refusal::new(&field, line, *why));
                }
                if let Some((_, why)) = NO_ACTION.iter().find(|(k, _)| *k == other) {
                    r.notice(&field, why);
                    continue;
                }
                return Err(Refusal::new(
                    &field,
                    line,
                    "not a resource rayslurm knows (see docs/task-files.md)",
                ));
            }
        }
    }
    r.given.extend(gpus.given()?);
    Ok(())
}

/// A number, or a number with `+` ("at least"; Slurm gives at least what is asked).
fn at_least(field: &str, value: &Line<Node>, unit: &str) -> Result<f64, Refusal> {
    let text = value.value.scalar_text().unwrap_or_default();
    text.trim()
        .trim_end_matches('+')
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n > 0.0)
        .ok_or_else(|| {
            Refusal::new(
                field,
                value.line,
                format!("`{text}` is not a number of {unit} (for example `8` or `8+`)"),
            )
        })
}

/// `cpus: 8` or `8+`: CPUs per node (one task a node), as `--cpus-per-task`.
fn cpus(field: &str, value: &Line<Node>) -> Result<String, Refusal> {
    Ok((at_least(field, value, "CPUs")?.ceil() as u64).to_string())
}

/// `memory: 64`, `64+`, `64GB`, `1024MB+` (SkyPilot's units: B, K(B), M(B), G(B), T(B), P(B),
/// any case; GB without one): per node, as `--mem` in whole GB, else in MB (rounded up).
fn memory(field: &str, value: &Line<Node>) -> Result<String, Refusal> {
    const UNITS: &[(&str, f64)] = &[
        ("kb", 1.0 / (1024.0 * 1024.0)),
        ("k", 1.0 / (1024.0 * 1024.0)),
        ("mb", 1.0 / 1024.0),
        ("m", 1.0 / 1024.0),
        ("gb", 1.0),
        ("g", 1.0),
        ("tb", 1024.0),
        ("t", 1024.0),
        ("pb", 1024.0 * 1024.0),
        ("p", 1024.0 * 1024.0),
        ("b", 1.0 / (1024.0 * 1024.0 * 1024.0)),
    ];
    let text = value.value.scalar_text().unwrap_or_default();
    let lower = text
        .trim()
        .trim_end_matches('+')
        .trim()
        .to_ascii_lowercase();
    let (number, per_gb) = UNITS
        .iter()
        .find_map(|(unit, per_gb)| lower.strip_suffix(unit).map(|n| (n.trim(), *per_gb)))
        .unwrap_or((lower.as_str(), 1.0));
    let gb = number
        .parse::<f64>()
        .ok()
        .map(|n| n * per_gb)
        .filter(|n| n.is_finite() && *n > 0.0)
        .ok_or_else(|| {
            Refusal::new(
                field,
                value.line,
                format!(
                    "`{text}` is not an amount of memory (for example `32`, `32+` or `64GB`; units KB, MB, GB, TB, PB)"
                ),
            )
        })?;
    Ok(if gb.fract() == 0.0 {
        format!("{}G", gb as u64)
    } else {
        format!("{}M", (gb * 1024.0).ceil() as u64)
    })
}

/// `image_id: docker:IMAGE` into `--container-image docker://IMAGE`, which resolution gives
/// each runtime in its own spelling (pyxis's is `IMAGE`); a cloud's machine image is refused.
fn image_id(r: &mut Reading, field: &str, value: &Line<Node>) -> Result<String, Refusal> {
    let text = match &value.value {
        Node::Str(s) => s.trim().to_owned(),
        // Images per region, and perhaps a container's: the container's is what runs here.
        Node::Map(entries) => match entries.iter().find(|(k, _)| k.value == "docker") {
            Some((_, image)) => {
                r.notices.push(format!(
                    "`{field}`: its `docker` image is taken; the cloud's machine images beside it are not followed"
                ));
                format!("docker:{}", image.value.scalar_text().unwrap_or_default())
            }
            None => {
                return Err(Refusal::new(
                    field,
                    value.line,
                    "holds a cloud's machine images, one a region, and no `docker` image: give one `docker:IMAGE`",
                ));
            }
        },
        other => {
            return Err(Refusal::new(
                field,
                value.line,
                format!("is {}: give one `docker:IMAGE`", other.kind()),
            ));
        }
    };
    let text = text.as_str();
    // A name of a registry's image without `docker:` (`rocm/pytorch:latest`), as Kubernetes
    // tasks write it; a cloud's machine image (`ami-...`, `skypilot:...`, `projects/...`) is not.
    let plain_image = !text.starts_with("ami-")
        && !text.starts_with("skypilot:")
        && !text.starts_with("projects/")
        && !text.contains("://")
        && !text.contains(char::is_whitespace)
        && (text.contains('/') || text.contains(':'))
        && !text.starts_with("docker:");
    if plain_image {
        r.notices.push(format!(
            "`{field}: {text}` is taken as a container image (`docker:{text}`)"
        ));
        return Ok(format!("docker://{text}"));
    }
    match text.strip_prefix("docker:").map(str::trim) {
        Some(image) if !image.is_empty() => Ok(format!("docker://{image}")),
        _ => Err(Refusal::new(
            field,
            value.line,
            format!(
                "`{text}` is not `docker:IMAGE`: a cloud's machine image means nothing on Slurm; for an image file give `rayslurm: {{container_image: /shared/IMAGE.sqsh}}`"
            ),
        )),
    }
}
