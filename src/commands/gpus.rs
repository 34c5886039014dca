//! `rayslurm gpus [--json]`: the site's GPUs, partition by partition and type by type, with
//! how many nodes have them, how many each, and how many are free now (on nodes that take
//! jobs), as `sky show-gpus` shows a cluster's: from one `sinfo` call. The types are the
//! names `--num-gpus` and a task file's `accelerators` are matched to.

use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::error::WithHint;
use crate::printer::Printer;
use crate::slurm::query::{NodeGpus, sinfo_gpus};

/// One type of GPU in one partition.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct GpuRow {
    pub(crate) partition: String,
    /// The partition is the site's default.
    pub(crate) default: bool,
    /// The GRES type; `None` for GPUs without one (`gpu:4`).
    pub(crate) gpu: Option<String>,
    /// Nodes with GPUs of this type.
    pub(crate) nodes: usize,
    /// The counts a node has, each once (`[4]`, or `[4, 8]` where nodes differ).
    pub(crate) per_node: Vec<u32>,
    pub(crate) total: u32,
    /// Not in use, on nodes that take jobs now (idle or mixed).
    pub(crate) free: u32,
}

pub(crate) fn run(json: bool, printer: &Printer) -> Result<ExitCode> {
    let nodes = sinfo_gpus().hint("run on a Slurm login node; `sinfo` must reach the cluster")?;
    let rows = rows(&nodes);
    if json {
        printer.result(&serde_json::to_string_pretty(&rows)?);
    } else if rows.is_empty() {
        printer.info("no GPUs: no node of this site has a `gpu` GRES (sinfo -o %G)");
    } else {
        printer.result(&table(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

/// The rows: the default partition first, then the others by name; in each, the types by
/// name, GPUs without one last.
pub(crate) fn rows(nodes: &[NodeGpus]) -> Vec<GpuRow> {
    let mut rows: Vec<GpuRow> = Vec::new();
    for node in nodes {
        for gpus in node.gpus.iter().filter(|g| g.count > 0) {
            let used: u32 = node
                .used
                .iter()
                .filter(|u| u.kind == gpus.kind)
                .map(|u| u.count)
                .sum();
            let free = if node.takes_jobs() {
                gpus.count.saturating_sub(used)
            } else {
                0
            };
            let at = rows
                .iter()
                .position(|r| r.partition == node.partition && r.gpu == gpus.kind);
            let row = match at {
                Some(i) => &mut rows[i],
                None => {
                    rows.push(GpuRow {
                        partition: node.partition.clone(),
                        default: node.default_partition,
                        gpu: gpus.kind.clone(),
                        nodes: 0,
                        per_node: vec![],
                        total: 0,
                        free: 0,
                    });
                    rows.last_mut().expect("just pushed")
                }
            };
            row.nodes += 1;
            if !row.per_node.contains(&gpus.count) {
                row.per_node.push(gpus.count);
                row.per_node.sort_unstable();
            }
            row.total += gpus.count;
            row.free += free;
        }
    }
    rows.sort_by(|a, b| {
        (!a.default, &a.partition, a.gpu.is_none(), &a.gpu).cmp(&(
            !b.default,
            &b.partition,
            b.gpu.is_none(),
            &b.gpu,
        ))
    });
    rows
}

/// The rows as a table with a header, columns aligned.
fn table(rows: &[GpuRow]) -> String {
    let mut cells =
        vec![["PARTITION", "GPU", "NODES", "PER NODE", "TOTAL", "FREE"].map(String::from)];
    for r in rows {
        let per_node: Vec<String> = r.per_node.iter().map(u32::to_string).collect();
        cells.push([
            format!("{}{}", r.partition, if r.default { "*" } else { "" }),
            r.gpu.clone().unwrap_or_else(|| "(no type)".to_owned()),
            r.nodes.to_string(),
            per_node.join(","),
            r.total.to_string(),
            r.free.to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|i| cells.iter().map(|c| c[i].len()).max().unwrap_or(0))
        .collect();
    cells
        .iter()
        .map(|c| {
            let line: Vec<String> = c
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect();
            line.join("  ").trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::query::parse_sinfo_gpus;

    /// The lab with a job holding 2 a100_80gb on node1 and node3 drained.
    const LAB: &str = "node1|lab*|mixed|gpu:a100_80gb:4,gpu:l4:4|gpu:a100_80gb:2(IDX:0-1),gpu:l4:0(IDX:N/A)|\n\
                       node2|lab*|idle|gpu:a100_80gb:4,gpu:l4:4|gpu:a100_80gb:0(IDX:N/A),gpu:l4:0(IDX:N/A)|\n\
                       node3|lab*|drained|gpu:h100:8|gpu:h100:0(IDX:N/A)|\n\
                       node4|lab*|idle|gpu:h100:8|gpu:h100:0(IDX:N/A)|\n\
                       node5|lab*|idle|gpu:4|gpu:0|\n\
                       node5|labgpu|idle|gpu:4|gpu:0|\n\
                       node7|lab*|idle|(null)|gpu:0|\n";

    #[test]
    fn each_partition_and_type_with_its_counts() {
        let text = table(&rows(&parse_sinfo_gpus(LAB)));
        assert_eq!(
            text,
            "PARTITION  GPU        NODES  PER NODE  TOTAL  FREE\n\
             lab*       a100_80gb  2      4         8      6\n\
             lab*       h100       2      8         16     8\n\
             lab*       l4         2      4         8      8\n\
             lab*       (no type)  1      4         4      4\n\
             labgpu     (no type)  1      4         4      4"
        );
    }

    #[test]
    fn json_names_each_field() {
        let rows = rows(&parse_sinfo_gpus(LAB));
        let v = serde_json::to_value(&rows[0]).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"partition": "lab", "default": true, "gpu": "a100_80gb",
                "nodes": 2, "per_node": [4], "total": 8, "free": 6})
        );
        assert_eq!(
            serde_json::to_value(&rows[4]).unwrap()["gpu"],
            serde_json::Value::Null
        );
    }
}
