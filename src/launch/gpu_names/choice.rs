//! The choice among what was asked: each candidate looked up among the site's GPUs (or the
//! config's `gpu_partitions`), counted in nodes that have enough of it and nodes that have
//! enough free now, and one chosen. Pure: the site's nodes are given (`sinfo`, in `mod.rs`).

use std::collections::BTreeMap;

use super::ask::{GpuAsk, Pick, Show};
use super::matching::{Found, find, normalise};
use crate::launch::gpu_directive::GpuRequest;
use crate::slurm::query::NodeGpus;

/// What the job asks of Slurm instead of what was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chosen {
    /// In the site's spelling (no type where a partition stands for it).
    pub(crate) request: GpuRequest,
    /// The partition `gpu_partitions` names for the type.
    pub(crate) partition: Option<String>,
    /// The line that says what was chosen (none where nothing changed).
    pub(crate) note: Option<String>,
}

/// Why nothing asked can be had here, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) why: String,
    pub(crate) hint: String,
}

/// The job's side of the choice.
pub(crate) struct Job<'a> {
    /// `accelerators` or `--num-gpus`: how the notes name the request.
    pub(crate) label: &'a str,
    pub(crate) partition: Option<&'a str>,
    pub(crate) num_nodes: u32,
    /// A whole node a job: only an idle node is free for it.
    pub(crate) exclusive: bool,
    /// The config's `gpu_partitions`: type -> partition.
    pub(crate) gpu_partitions: &'a BTreeMap<String, String>,
}

/// Why a candidate cannot be had: in full, and in a few words for the choice's line.
#[derive(Debug)]
struct Unfit {
    short: &'static str,
    why: String,
}

impl Unfit {
    fn new(short: &'static str, why: String) -> Self {
        Self { short, why }
    }
}

/// One candidate the site can give.
#[derive(Debug)]
struct Fit {
    written: GpuRequest,
    request: GpuRequest,
    partition: Option<String>,
    free_nodes: usize,
}

impl Fit {
    /// `a100_80gb:4`, or `V100:2 as partition labgpu's GPUs`.
    fn target(&self) -> String {
        match &self.partition {
            Some(p) => format!("{} in partition {p}", Show(&self.written)),
            None => Show(&self.request).to_string(),
        }
    }
}

/// The candidate of `ask` to ask Slurm for, given the site's `nodes`.
pub(crate) fn choose(ask: &GpuAsk, nodes: &[NodeGpus], job: &Job) -> Result<Chosen, Refused> {
    let tried: Vec<(GpuRequest, Result<Fit, Unfit>)> = ask
        .candidates
        .iter()
        .map(|c| (c.clone(), fit(c, nodes, job)))
        .collect();
    let fits: Vec<&Fit> = tried.iter().filter_map(|(_, f)| f.as_ref().ok()).collect();
    let enough = |f: &Fit| f.free_nodes >= job.num_nodes as usize;
    let picked = match ask.pick {
        Pick::InOrder => fits.iter().find(|f| enough(f)).or(fits.first()),
        // The most nodes free, the first written on a tie.
        Pick::MostFree => fits.iter().rev().max_by_key(|f| (enough(f), f.free_nodes)),
    };
    let Some(picked) = picked else {
        let why = match &tried[..] {
            [(_, Err(unfit))] => unfit.why.clone(),
            _ => {
                let each: Vec<String> = (tried.iter())
                    .filter_map(|(w, f)| {
                        f.as_ref()
                            .err()
                            .map(|u| format!("{} ({})", Show(w), u.short))
                    })
                    .collect();
                let here = scope(nodes, job.partition);
                format!(
                    "none of the candidates can be had here: {}; this site's GPU types are {}",
                    each.join(", "),
                    listing(&types_of(&here), &here)
                )
            }
        };
        return Err(Refused {
            why,
            hint: hint(nodes, job),
        });
    };
    let note = if tried.len() > 1 {
        let others: Vec<String> = tried
            .iter()
            .filter(|(w, _)| *w != picked.written)
            .map(|(w, f)| match f {
                Ok(f) => format!("{} ({})", f.target(), free(f.free_nodes)),
                Err(unfit) => format!("{} ({})", Show(w), unfit.short),
            })
            .collect();
        let mut said = vec![];
        if Show(&picked.written).to_string() != picked.target() {
            said.push(Show(&picked.written).to_string());
        }
        let mut free_now = free(picked.free_nodes);
        if !enough(picked) {
            free_now.push_str(&format!(", {} needed: it waits", job.num_nodes));
        }
        said.push(free_now);
        Some(format!(
            "{}: chose {} ({}), over {}",
            job.label,
            picked.target(),
            said.join("; "),
            others.join(", ")
        ))
    } else {
        single_note(picked, job.label)
    };
    Ok(Chosen {
        request: picked.request.clone(),
        partition: picked.partition.clone(),
        note,
    })
}

fn free(n: usize) -> String {
    format!("{} free", nodes_word(n as u32))
}

fn nodes_word(n: u32) -> String {
    format!("{n} node{}", if n == 1 { "" } else { "s" })
}

/// The line for one request whose name changed.
fn single_note(fit: &Fit, label: &str) -> Option<String> {
    let written = Show(&fit.written).to_string();
    if let Some(p) = &fit.partition {
        return Some(format!(
            "{label}: {written} is partition {p}'s GPUs (gpu_partitions): --partition {p}, {} GPUs a node without a type",
            fit.request.per_node
        ));
    }
    let site = Show(&fit.request).to_string();
    (written != site).then(|| format!("{label}: {written} is the site's {site}"))
}

/// The nodes a request may go to: those of the job's partition(s), else of the default
/// partition, else all; each node once.
fn scope<'a>(nodes: &'a [NodeGpus], partition: Option<&str>) -> Vec<&'a NodeGpus> {
    let named: Vec<&NodeGpus> = match partition {
        Some(p) => {
            let names: Vec<&str> = p.split(',').map(str::trim).collect();
            nodes
                .iter()
                .filter(|n| names.contains(&n.partition.as_str()))
                .collect()
        }
        None => nodes.iter().filter(|n| n.default_partition).collect(),
    };
    let mut chosen = if named.is_empty() {
        nodes.iter().collect()
    } else {
        named
    };
    let mut seen = std::collections::HashSet::new();
    chosen.retain(|n| seen.insert(n.node.as_str()));
    chosen
}

/// The GPU types among `nodes`, each once, sorted.
fn types_of(nodes: &[&NodeGpus]) -> Vec<String> {
    let mut types: Vec<String> = nodes
        .iter()
        .flat_map(|n| n.gpus.iter().filter(|g| g.count > 0))
        .filter_map(|g| g.kind.clone())
        .collect();
    types.sort();
    types.dedup();
    types
}

/// `c` on this site, or why not.
fn fit(c: &GpuRequest, nodes: &[NodeGpus], job: &Job) -> Result<Fit, Unfit> {
    let Some(written) = c.kind.as_deref() else {
        // Untyped: any GPU of the job's partition.
        return count(c, c.clone(), None, &scope(nodes, job.partition), job);
    };
    if let Some((_, p)) =
        (job.gpu_partitions.iter()).find(|(k, _)| normalise(k) == normalise(written))
    {
        let in_p: Vec<&NodeGpus> = scope(nodes, Some(p));
        if !in_p.iter().any(|n| n.partition == *p) {
            return Err(Unfit::new(
                "not on this site",
                format!(
                    "`{written}` is partition `{p}` in the config's gpu_partitions, but Slurm has no partition `{p}`"
                ),
            ));
        }
        let untyped = GpuRequest {
            kind: None,
            per_node: c.per_node,
        };
        return count(c, untyped, Some(p.clone()), &in_p, job);
    }
    let here = scope(nodes, job.partition);
    let types = types_of(&here);
    let site = match find(written, &types) {
        Found::Same(t) | Found::OnlyOfFamily(t) => t,
        Found::Several(all) => {
            return Err(Unfit::new(
                "several types of that name",
                format!(
                    "`{written}` is any of this site's {}: name one",
                    all.join(", ")
                ),
            ));
        }
        Found::Missing { family } => {
            let memory = match &family[..] {
                [] => String::new(),
                some => format!(
                    " (its {} {} not say the memory `{written}` names)",
                    some.join(", "),
                    if some.len() == 1 { "does" } else { "do" }
                ),
            };
            return Err(Unfit::new(
                "not on this site",
                format!(
                    "`{written}` is not a GPU type of this site{memory}: its types are {}",
                    listing(&types, &here)
                ),
            ));
        }
    };
    let typed = GpuRequest {
        kind: Some(site),
        per_node: c.per_node,
    };
    count(c, typed, None, &here, job)
}

/// `a100_80gb, h100, l4` (and whether GPUs without a type are there too).
fn listing(types: &[String], nodes: &[&NodeGpus]) -> String {
    let mut text = if types.is_empty() {
        "none".to_owned()
    } else {
        types.join(", ")
    };
    let untyped = nodes
        .iter()
        .any(|n| n.gpus.iter().any(|g| g.kind.is_none() && g.count > 0));
    if untyped {
        text.push_str(" (and GPUs without a type)");
    }
    text
}

/// `request` counted on `nodes`: enough nodes with that many, and how many have them free.
fn count(
    written: &GpuRequest,
    request: GpuRequest,
    partition: Option<String>,
    nodes: &[&NodeGpus],
    job: &Job,
) -> Result<Fit, Unfit> {
    let kind = request.kind.as_deref();
    let have: Vec<&&NodeGpus> = nodes
        .iter()
        .filter(|n| n.total(kind) >= request.per_node)
        .collect();
    if have.len() < job.num_nodes as usize {
        let most = nodes.iter().map(|n| n.total(kind)).max().unwrap_or(0);
        return Err(Unfit::new(
            "too few nodes with that many",
            format!(
                "`{}` needs {} with {} each, and this site has {} (the most on a node: {most})",
                Show(written),
                nodes_word(job.num_nodes),
                Show(&request),
                nodes_word(have.len() as u32),
            ),
        ));
    }
    let free_nodes = have
        .iter()
        .filter(|n| n.free(kind) >= request.per_node && (!job.exclusive || n.is_idle()))
        .count();
    Ok(Fit {
        written: written.clone(),
        request,
        partition,
        free_nodes,
    })
}

/// What to write instead.
fn hint(nodes: &[NodeGpus], job: &Job) -> String {
    let types = types_of(&scope(nodes, job.partition));
    let example = types.first().map_or("TYPE".to_owned(), Clone::clone);
    format!(
        "name one of the site's types (`rayslurm gpus` lists them with their counts), e.g. `{example}:1`; where a partition stands for a GPU type, map it in the config file: `gpu_partitions = {{ v100 = \"PARTITION\" }}`; nothing was submitted"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::query::parse_sinfo_gpus;

    /// The lab (tests/cluster/cluster.sh): node3 busy with 8 h100, node4 with 2.
    const LAB: &str = "node1|lab*|idle|gpu:a100_80gb:4,gpu:l4:4|gpu:a100_80gb:0,gpu:l4:0|\n\
                       node2|lab*|mixed|gpu:a100_80gb:4,gpu:l4:4|gpu:a100_80gb:2,gpu:l4:0|\n\
                       node3|lab*|allocated|gpu:h100:8|gpu:h100:8|\n\
                       node4|lab*|mixed|gpu:h100:8|gpu:h100:2|\n\
                       node5|lab*|idle|gpu:4|gpu:0|\n\
                       node5|labgpu|idle|gpu:4|gpu:0|\n\
                       node6|labgpu|idle|gpu:4|gpu:0|\n";

    fn chose(ask: &str, num_nodes: u32, map: &[(&str, &str)]) -> Result<Chosen, Refused> {
        chose_on(ask, num_nodes, map, false)
    }

    fn chose_on(
        ask: &str,
        num_nodes: u32,
        map: &[(&str, &str)],
        exclusive: bool,
    ) -> Result<Chosen, Refused> {
        let map: BTreeMap<String, String> = map
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let job = Job {
            label: "accelerators",
            partition: None,
            num_nodes,
            exclusive,
            gpu_partitions: &map,
        };
        choose(&ask.parse().unwrap(), &parse_sinfo_gpus(LAB), &job)
    }

    fn req(kind: Option<&str>, per_node: u32) -> GpuRequest {
        GpuRequest {
            kind: kind.map(str::to_owned),
            per_node,
        }
    }

    #[test]
    fn one_name_is_the_sites_spelling_and_says_so() {
        let c = chose("A100-80GB:2", 2, &[]).unwrap();
        assert_eq!(c.request, req(Some("a100_80gb"), 2));
        assert_eq!(
            c.note.as_deref(),
            Some("accelerators: A100-80GB:2 is the site's a100_80gb:2")
        );
        assert_eq!(chose("h100:8", 1, &[]).unwrap().note, None);
        let c = chose("A100:1", 1, &[]).unwrap();
        assert_eq!(c.request, req(Some("a100_80gb"), 1));
    }

    #[test]
    fn an_unknown_name_or_too_many_is_refused_with_the_sites_types() {
        let e = chose("V100:2", 1, &[]).unwrap_err();
        assert_eq!(
            e.why,
            "`V100` is not a GPU type of this site: its types are a100_80gb, h100, l4 (and GPUs without a type)"
        );
        assert!(e.hint.contains("gpu_partitions"), "{}", e.hint);
        let e = chose("H100-80GB:8", 1, &[]).unwrap_err();
        assert!(
            e.why.contains("its h100 does not say the memory"),
            "{}",
            e.why
        );
        let e = chose("a100_80gb:8", 1, &[]).unwrap_err();
        assert!(
            e.why.contains("needs 1 node with a100_80gb:8 each, and this site has 0 nodes (the most on a node: 4)"),
            "{}",
            e.why
        );
        let e = chose("h100:8", 3, &[]).unwrap_err();
        assert!(e.why.contains("has 2 nodes"), "{}", e.why);
    }

    /// node3's h100 are all in use: a set takes the a100_80gb, free on node1 (node2 has 2).
    #[test]
    fn a_set_takes_the_candidate_with_free_nodes() {
        let c = chose("{H100:8,A100-80GB:4}", 1, &[]).unwrap();
        assert_eq!(c.request, req(Some("a100_80gb"), 4));
        assert_eq!(
            c.note.as_deref(),
            Some(
                "accelerators: chose a100_80gb:4 (A100-80GB:4; 1 node free), over h100:8 (0 nodes free)"
            )
        );
        let c = chose("{A100-80GB:4,L4:8,A100-40GB:1}", 1, &[]).unwrap();
        assert!(
            c.note.unwrap().ends_with(
                "over L4:8 (too few nodes with that many), A100-40GB:1 (not on this site)"
            )
        );
        // Two h100 nodes exist, none of them free for 8: the other one.
        let c = chose("{H100:4,L4:4,V100:1}", 2, &[]).unwrap();
        assert_eq!(c.request, req(Some("l4"), 4));
        assert!(
            c.note
                .unwrap()
                .ends_with("over h100:4 (1 node free), V100:1 (not on this site)")
        );
    }

    #[test]
    fn a_list_takes_the_first_with_free_nodes_else_the_first() {
        let c = chose("[H100:4,L4:1]", 1, &[]).unwrap();
        assert_eq!(c.request, req(Some("h100"), 4));
        let c = chose("[H100:8,L4:1]", 1, &[]).unwrap();
        assert_eq!(c.request, req(Some("l4"), 1));
        // A whole-node job: node4 (mixed) is not free for it, node1 (idle) is.
        let c = chose_on("[H100:4,L4:1]", 1, &[], true).unwrap();
        assert_eq!(c.request, req(Some("l4"), 1));
        // None free for 2 nodes of 8 h100: the first, which waits.
        let c = chose("[H100:8,A100-80GB:4]", 2, &[]).unwrap();
        assert_eq!(c.request, req(Some("h100"), 8));
        assert!(c.note.unwrap().contains("it waits"));
        let e = chose("[V100:1,T4:1]", 1, &[]).unwrap_err();
        assert_eq!(
            e.why,
            "none of the candidates can be had here: V100:1 (not on this site), T4:1 (not on this site); this site's GPU types are a100_80gb, h100, l4 (and GPUs without a type)"
        );
    }

    #[test]
    fn gpu_partitions_give_the_partition_and_an_untyped_request() {
        let c = chose("V100:2", 2, &[("v100", "labgpu")]).unwrap();
        assert_eq!(c.request, req(None, 2));
        assert_eq!(c.partition.as_deref(), Some("labgpu"));
        assert!(c.note.unwrap().contains("--partition labgpu"));
        let e = chose("V100:2", 1, &[("v100", "nosuch")]).unwrap_err();
        assert!(e.why.contains("no partition `nosuch`"), "{}", e.why);
        let e = chose("V100:8", 1, &[("V100", "labgpu")]).unwrap_err();
        assert!(e.why.contains("the most on a node: 4"), "{}", e.why);
    }
}
