//! `sinfo`: the GPUs of the site, node by node and partition by partition, with how many are
//! in use now, from one call (`sinfo -N -O NodeHost,Partition,StateLong,Gres,GresUsed`). What
//! launches resolve GPU names against and `rayslurm gpus` shows.
//!
//! A GRES string is a comma-separated list of `NAME[:TYPE]:COUNT`, each count perhaps followed
//! by a place in parentheses (`gpu:a100_80gb:4(S:0-1)`, `gpu:h100:2(IDX:0-1)`, `gpu:0`);
//! only `gpu` is read. The TRES spellings (`gres/gpu:a100=2`) are read too.

use super::client::{QueryError, slurm_client};

/// `sinfo -O` fields: node, partition (`*` after the default one), state, GRES configured,
/// GRES in use. Each ends in `|` and has no width limit (`:0`), so nothing is cut short.
pub(crate) const SINFO_GPU_FORMAT: &str =
    "NodeHost:0|,Partition:0|,StateLong:0|,Gres:0|,GresUsed:0|";

/// GPUs of one type (or of none: `kind` is `None` for `gpu:4`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GpuCount {
    pub(crate) kind: Option<String>,
    pub(crate) count: u32,
}

/// One node in one partition, as sinfo shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeGpus {
    pub(crate) node: String,
    pub(crate) partition: String,
    /// The partition is the site's default (sinfo's `*`).
    pub(crate) default_partition: bool,
    /// sinfo's long state: `idle`, `mixed`, `allocated`, `drained`, `down*`, ...
    pub(crate) state: String,
    pub(crate) gpus: Vec<GpuCount>,
    pub(crate) used: Vec<GpuCount>,
}

impl NodeGpus {
    /// Whether a job may start on the node now: idle or mixed, responding, not draining.
    pub(crate) fn takes_jobs(&self) -> bool {
        let state = self.state.to_ascii_lowercase();
        let base = state.trim_end_matches(|c: char| !c.is_ascii_alphabetic());
        (base == "idle" || base == "mixed") && !state.contains('*')
    }

    /// Whether no job runs on the node: free for a job that takes the whole node.
    pub(crate) fn is_idle(&self) -> bool {
        self.takes_jobs() && self.state.to_ascii_lowercase().starts_with("idle")
    }

    /// GPUs of `kind` the node has (of any type for `None`: an untyped request takes any).
    pub(crate) fn total(&self, kind: Option<&str>) -> u32 {
        sum(&self.gpus, kind)
    }

    /// GPUs of `kind` free now: none on a node that takes no jobs.
    pub(crate) fn free(&self, kind: Option<&str>) -> u32 {
        if !self.takes_jobs() {
            return 0;
        }
        self.total(kind).saturating_sub(sum(&self.used, kind))
    }
}

fn sum(counts: &[GpuCount], kind: Option<&str>) -> u32 {
    counts
        .iter()
        .filter(|c| kind.is_none() || c.kind.as_deref() == kind)
        .map(|c| c.count)
        .sum()
}

/// Every node's GPUs, each node once a partition: one `sinfo` call.
pub(crate) fn sinfo_gpus() -> Result<Vec<NodeGpus>, QueryError> {
    let text = slurm_client("sinfo")
        .args(["-h", "-N", "-O", SINFO_GPU_FORMAT])
        .stdout()
        .map_err(QueryError::from_cmd)?;
    Ok(parse_sinfo_gpus(&text))
}

/// The lines of `sinfo -h -N -O SINFO_GPU_FORMAT`; a line of another shape is skipped.
pub(crate) fn parse_sinfo_gpus(text: &str) -> Vec<NodeGpus> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split('|').map(str::trim).collect();
            let [node, partition, state, gres, used, ..] = fields[..] else {
                return None;
            };
            if node.is_empty() {
                return None;
            }
            let default_partition = partition.ends_with('*');
            Some(NodeGpus {
                node: node.to_owned(),
                partition: partition.trim_end_matches('*').to_owned(),
                default_partition,
                state: state.to_owned(),
                gpus: parse_gres(gres),
                used: parse_gres(used),
            })
        })
        .collect()
}

/// The GPUs of a GRES (or TRES) string: `gpu:a100_80gb:4(S:0),gpu:l4:4`, `gpu:4`, `(null)`,
/// `gres/gpu:h100=8`.
pub(crate) fn parse_gres(text: &str) -> Vec<GpuCount> {
    top_level_items(text)
        .into_iter()
        .filter_map(|item| {
            let item = item.trim();
            let item = item
                .strip_prefix("gres/")
                .or_else(|| item.strip_prefix("gres:"))
                .unwrap_or(item);
            // The place after the count: `(S:0-1)`, `(IDX:0,2)`.
            let item = item.split('(').next().unwrap_or_default();
            let rest = item.strip_prefix("gpu")?;
            let (kind, count) = match rest.rsplit_once(['=', ':']) {
                Some((kind, count)) => (kind.strip_prefix(':').unwrap_or(kind), count),
                None => return None,
            };
            if !kind.is_empty() && !rest.starts_with(':') {
                return None; // `gpux:1` is another GRES
            }
            let count = count.trim().parse().ok()?;
            Some(GpuCount {
                kind: (!kind.is_empty()).then(|| kind.to_owned()),
                count,
            })
        })
        .collect()
}

/// `text` split at the commas outside parentheses (`gpu:a:2(IDX:0,3),gpu:b:1`).
fn top_level_items(text: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(kind: Option<&str>, count: u32) -> GpuCount {
        GpuCount {
            kind: kind.map(str::to_owned),
            count,
        }
    }

    #[test]
    fn gres_strings_in_every_form_sinfo_prints() {
        assert_eq!(
            parse_gres("gpu:a100_80gb:4(S:0),gpu:l4:4"),
            [gpu(Some("a100_80gb"), 4), gpu(Some("l4"), 4)]
        );
        assert_eq!(parse_gres("gpu:4"), [gpu(None, 4)]);
        assert_eq!(parse_gres("gpu:0"), [gpu(None, 0)]);
        assert_eq!(parse_gres("(null)"), []);
        assert_eq!(parse_gres(""), []);
        // GresUsed: a count and the devices' indexes, which may hold commas.
        assert_eq!(
            parse_gres("gpu:a100_80gb:2(IDX:0,3),gpu:l4:0(IDX:N/A)"),
            [gpu(Some("a100_80gb"), 2), gpu(Some("l4"), 0)]
        );
        assert_eq!(
            parse_gres("gpu:h100:8(S:0-1),shard:h100:64,mps:100"),
            [gpu(Some("h100"), 8)]
        );
        // TRES spellings (`scontrol`'s CfgTRES, sacct's AllocTRES).
        assert_eq!(
            parse_gres("gres/gpu:h100=8,gres/gpu=8"),
            [gpu(Some("h100"), 8), gpu(None, 8)]
        );
        assert_eq!(parse_gres("gres:gpu:v100:2"), [gpu(Some("v100"), 2)]);
        // Another GRES whose name starts with `gpu`, and nonsense.
        assert_eq!(parse_gres("gpux:2,gpu:a:b,gpu"), []);
    }

    /// The lab's answer (tests/cluster/cluster.sh), as Slurm 22.05 prints it.
    #[test]
    fn sinfo_lines_give_each_node_in_each_partition() {
        let text = "node1|labhigh|idle|gpu:a100_80gb:4,gpu:l4:4|gpu:a100_80gb:0(IDX:N/A),gpu:l4:0(IDX:N/A)|\n\
                    node1|lab*|mixed|gpu:a100_80gb:4,gpu:l4:4|gpu:a100_80gb:2(IDX:0-1),gpu:l4:0(IDX:N/A)|\n\
                    node5|labgpu|idle|gpu:4|gpu:0|\n\
                    node7|lab*|allocated|(null)|gpu:0|\n\
                    node9 | crash | down* | gpu:2 | gpu:0 |\n\
                    garbage\n";
        let nodes = parse_sinfo_gpus(text);
        assert_eq!(nodes.len(), 5, "{nodes:?}");
        let lab1 = &nodes[1];
        assert_eq!(
            (
                lab1.node.as_str(),
                lab1.partition.as_str(),
                lab1.default_partition
            ),
            ("node1", "lab", true)
        );
        assert_eq!(lab1.total(Some("a100_80gb")), 4);
        assert_eq!(lab1.free(Some("a100_80gb")), 2);
        assert_eq!(lab1.free(Some("l4")), 4);
        // An untyped request takes GPUs of any type.
        assert_eq!(lab1.free(None), 6);
        assert_eq!(nodes[2].free(None), 4);
        assert_eq!(nodes[3].total(None), 0);
        // Padded fields are trimmed; a node that does not respond has nothing free.
        assert_eq!(nodes[4].partition, "crash");
        assert_eq!((nodes[4].total(None), nodes[4].free(None)), (2, 0));
    }

    #[test]
    fn only_idle_and_mixed_nodes_take_jobs() {
        let node = |state: &str| NodeGpus {
            node: "n".into(),
            partition: "p".into(),
            default_partition: false,
            state: state.into(),
            gpus: vec![gpu(Some("h100"), 8)],
            used: vec![],
        };
        for (state, takes) in [
            ("idle", true),
            ("mixed", true),
            ("MIXED", true),
            ("idle~", true),
            ("idle*", false),
            ("allocated", false),
            ("drained", false),
            ("draining", false),
            ("down*", false),
            ("reserved", false),
        ] {
            assert_eq!(node(state).takes_jobs(), takes, "{state}");
            assert_eq!(
                node(state).is_idle(),
                takes && !state.eq_ignore_ascii_case("mixed"),
                "{state}"
            );
        }
    }
}
