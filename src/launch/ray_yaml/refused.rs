//! What Ray's cluster YAML holds that means nothing on Slurm: refused with why and what to
//! write instead, or noted once. Ray's schema forbids unknown keys; so does this reading, with
//! Ray's own words and the closest spelling.

use crate::launch::task_file::node::{Line, Node};

/// A refusal: the field, its line and why.
pub(super) type Refused = (String, u32, String);

/// The top-level keys of Ray 2.60's schema (`ray/autoscaler/ray-schema.json`).
pub(super) const TOP_KEYS: &[&str] = &[
    "cluster_name",
    "max_workers",
    "upscaling_speed",
    "idle_timeout_minutes",
    "provider",
    "auth",
    "docker",
    "head_node_type",
    "file_mounts",
    "cluster_synced_files",
    "file_mounts_sync_continuously",
    "rsync_exclude",
    "rsync_filter",
    "metadata",
    "initialization_commands",
    "setup_commands",
    "head_setup_commands",
    "worker_setup_commands",
    "head_start_ray_commands",
    "worker_start_ray_commands",
    "no_restart",
    "available_node_types",
];

/// The keys of a node type in Ray 2.60's schema.
pub(super) const NODE_TYPE_KEYS: &[&str] = &[
    "node_config",
    "min_workers",
    "max_workers",
    "idle_timeout_s",
    "priority",
    "resources",
    "labels",
    "initialization_commands",
    "worker_setup_commands",
    "docker",
];

/// `upscaling_speed`'s notice.
pub(super) const UPSCALING: &str = "`upscaling_speed` needs nothing here: the head submits a worker job as soon as Ray has work no node can take (at most --max-pending-workers waiting at once)";

/// Why a provider other than Slurm is refused.
pub(super) fn cloud_provider(kind: &str) -> String {
    format!(
        "rayslurm runs Ray on Slurm, not on `{kind}`'s machines; write `provider: {{type: slurm}}` (site-wide options such as `account:`, `partition:` or `qos:` may go beside it)"
    )
}

/// A top-level field other than those read: refused (with what to write instead) or noted.
pub(super) fn top_field(
    notices: &mut Vec<String>,
    key: &str,
    line: u32,
    value: &Line<Node>,
) -> Result<(), Refused> {
    let empty = matches!(&value.value, Node::Null)
        || matches!(&value.value, Node::Seq(items) if items.is_empty());
    let refuse = |why: &str| Err((key.to_owned(), line, why.to_owned()));
    match key {
        "auth" => refuse(
            "rayslurm logs in to no node: Slurm starts every node of the cluster; remove `auth`",
        ),
        "initialization_commands" if !empty => refuse(
            "there is no step before the setup here, outside the container: put these commands first in `setup_commands`",
        ),
        "head_start_ray_commands" | "worker_start_ray_commands" if !empty => refuse(
            "rayslurm starts Ray itself (with the node's address, ports, token and resources); give `ray start`'s own options with `rayslurm up --ray-args \"...\"` (every node) or `--ray-head-args`, and resources under the node type's `resources:`",
        ),
        "initialization_commands" | "head_start_ray_commands" | "worker_start_ray_commands" => {
            Ok(())
        }
        "no_restart" => refuse(
            "set by `ray up --no-restart`, never in a file: a cluster of rayslurm starts once; remove it",
        ),
        "head_node" | "worker_nodes" => refuse(
            "the format of Ray before 1.0: write `available_node_types` (one entry a node type, each with `resources:` and `node_config:`) and `head_node_type`",
        ),
        "rsync_exclude" | "rsync_filter" => {
            notices.push(format!("`{key}` needs nothing here: `rayslurm rsync-up` copies what you name, all of it; name a smaller SRC to leave files out"));
            Ok(())
        }
        "cluster_synced_files" | "file_mounts_sync_continuously" => {
            notices.push(format!("`{key}` needs nothing here: every node sees the shared filesystem and the cluster's run directory (`rsync-up` copies there), so nothing is synced"));
            Ok(())
        }
        other => Err((
            other.to_owned(),
            line,
            unknown(other, TOP_KEYS, "the top level"),
        )),
    }
}

/// A key of `docker:` other than its images.
pub(super) fn docker_key(
    notices: &mut Vec<String>,
    field: &str,
    key: &str,
    line: u32,
) -> Result<(), Refused> {
    match key {
        "run_options" | "head_run_options" | "worker_run_options" => Err((
            field.to_owned(),
            line,
            "rayslurm runs the image with the site's container runtime, not `docker run`: give mounts with `rayslurm up --container-mounts SRC:DST`, and the runtime with --container-runtime".into(),
        )),
        "container_name" | "pull_before_run" | "disable_automatic_runtime_detection"
        | "disable_shm_size_detection" | "use_podman" => {
            notices.push(format!("`{field}` needs nothing here: the site's container runtime runs the image on each node (docs/containers.md)"));
            Ok(())
        }
        other => Err((
            field.to_owned(),
            line,
            unknown(other, &["image", "head_image", "worker_image", "container_name", "pull_before_run", "run_options", "head_run_options", "worker_run_options", "disable_automatic_runtime_detection", "disable_shm_size_detection", "use_podman"], "`docker`"),
        )),
    }
}

/// A cloud's `node_config` key, with what to write instead; `None` for a key of no cloud
/// rayslurm knows.
pub(super) fn cloud_node_config(key: &str) -> Option<&'static str> {
    Some(match key {
        "InstanceType"
        | "machineType"
        | "vmSize"
        | "azure_arm_parameters"
        | "InstanceTypeId"
        | "CPU"
        | "Memory"
        | "NumCPUs"
        | "MemoryMB" => {
            "a cloud's machine type: give the node's Slurm resources instead: `cpus_per_task`, `mem`, `num_gpus` (e.g. `l4:1`), or a `partition` whose nodes have them"
        }
        "ImageId" | "sourceImage" | "imageId" | "image" | "disks" | "BlockDeviceMappings" => {
            "a cloud's machine image or disk: the nodes run the site's system; give a container with `container_image` (or `docker: {image: ...}`)"
        }
        "InstanceMarketOptions" | "scheduling" | "priority" | "spot" | "preemptible_instance" => {
            "a cloud's spot market: give a preemptible partition or QOS (`partition: scavenger`) and `preemptible: true`"
        }
        "SubnetIds" | "SubnetId" | "SecurityGroupIds" | "KeyName" | "IamInstanceProfile"
        | "networkInterfaces" | "serviceAccounts" | "TagSpecifications" | "Placement"
        | "metadata" | "guestAccelerators" | "LaunchTemplate" | "UserData" | "tags"
        | "accelerators" | "zone" | "region" | "availability_zone" | "labels" => {
            "a cloud's setting: Slurm places the nodes; give Slurm options (`partition`, `account`, `qos`, `constraint`, `num_gpus`, ...)"
        }
        _ => return None,
    })
}

/// Ray's own answer for a key its schema does not have, where it is, and the closest key.
pub(super) fn unknown(key: &str, known: &[&str], place: &str) -> String {
    let mut why = format!(
        "not a field of Ray's cluster YAML at {place} (Ray's schema says: Additional properties are not allowed ('{key}' was unexpected))"
    );
    if let Some(near) = closest(key, known) {
        why.push_str(&format!("; did you mean `{near}`?"));
    }
    why
}

/// The known key nearest `key` in spelling, if one is near enough.
pub(super) fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(&key.to_lowercase(), k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}
