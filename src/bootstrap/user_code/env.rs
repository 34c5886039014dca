//! The rank environment every node and task of a run gets (README, "The rank environment"):
//! ranks from Slurm (the node's place in the job's node list, `SLURM_PROCID`, `SLURM_NTASKS`,
//! `SLURM_LOCALID`), never from matching IPs; every node's IP; the head's address and a port
//! from the job's own block for frameworks' rendezvous; and SkyPilot's names for the same.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;

use super::skypilot;
use crate::bootstrap::allocation::Allocation;
use crate::handoff::job_env::{self, RankValue};
use crate::slurm::env as slurm_env;

/// Where one process stands in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ranks {
    /// The node's place in the job's node list (0: the head).
    pub(crate) node_rank: u32,
    pub(crate) num_nodes: u32,
    /// The task's rank among all tasks (`SLURM_PROCID` of the per-node step).
    pub(crate) rank: u32,
    pub(crate) world_size: u32,
    /// The task's rank on its node.
    pub(crate) local_rank: u32,
}

impl Ranks {
    /// The ranks of the one process that runs the command on the head (Ray jobs, `--no-ray`).
    pub(crate) fn head_only(num_nodes: u32) -> Self {
        Self {
            node_rank: 0,
            num_nodes,
            rank: 0,
            world_size: 1,
            local_rank: 0,
        }
    }

    /// A node's ranks for its setup in a Ray (or `--no-ray`) run: one process per node.
    pub(crate) fn node_setup(alloc: &Allocation) -> Self {
        let node_rank = alloc
            .nodes
            .iter()
            .position(|n| *n == alloc.node)
            .unwrap_or(0) as u32;
        let num_nodes = alloc.nodes.len() as u32;
        Self {
            node_rank,
            num_nodes,
            rank: node_rank,
            world_size: num_nodes,
            local_rank: 0,
        }
    }

    /// A task's ranks, from the environment Slurm gave its step.
    pub(crate) fn of_task(alloc: &Allocation, env: &HashMap<String, String>) -> Self {
        let number = |k: &str| env.get(k).and_then(|v| v.trim().parse::<u32>().ok());
        let node_rank = alloc
            .nodes
            .iter()
            .position(|n| *n == alloc.node)
            .unwrap_or(0) as u32;
        Self {
            node_rank,
            num_nodes: alloc.nodes.len() as u32,
            rank: number(slurm_env::SLURM_PROCID).unwrap_or(node_rank),
            world_size: number(slurm_env::SLURM_NTASKS).unwrap_or(alloc.nodes.len() as u32),
            local_rank: number(slurm_env::SLURM_LOCALID).unwrap_or(0),
        }
    }
}

/// The most bytes Linux takes in one variable (`NAME=VALUE` and its NUL: `MAX_ARG_STRLEN`,
/// 32 pages); a longer one fails the program's start (`E2BIG`).
const MAX_VARIABLE: usize = 32 * 4096;

/// Why the node IPs are left out of the rank environment, if they are: at thousands of nodes
/// (about 3,300 IPv6 or 8,000 IPv4 addresses) one variable holding them all is longer than
/// Linux lets a program start with.
pub(crate) fn node_ips_left_out(ips: &[IpAddr]) -> Option<String> {
    let bytes: usize = ips.iter().map(|ip| ip.to_string().len() + 1).sum();
    too_long_for_a_variable(bytes).then(|| {
        format!(
            "warning: {} and {} are left out: the IPs of {} nodes ({bytes} bytes) are more than Linux lets one variable hold ({MAX_VARIABLE} bytes); read the nodes from `scontrol show hostnames \"$SLURM_JOB_NODELIST\"` or Ray's `ray.nodes()`",
            job_env::NODE_IPS,
            job_env::SKYPILOT_NODE_IPS,
            ips.len()
        )
    })
}

/// Whether the node IPs' variables, with `bytes` of value (and its NUL), are longer than Linux
/// lets one variable be.
fn too_long_for_a_variable(bytes: usize) -> bool {
    job_env::SKYPILOT_NODE_IPS
        .len()
        .max(job_env::NODE_IPS.len())
        + 1
        + bytes
        > MAX_VARIABLE
}

/// The variables, for `ranks` on a run whose nodes have `ips` (node-rank order, head first);
/// the node IPs are left out where they are too long ([`node_ips_left_out`]).
pub(crate) fn rank_env(
    ranks: Ranks,
    ips: &[IpAddr],
    gpus_per_node: u32,
    master_port: u16,
) -> Vec<(String, String)> {
    let ip_lines: Vec<String> = ips.iter().map(ToString::to_string).collect();
    let head = ip_lines.first().cloned().unwrap_or_default();
    let node_ips = ip_lines.join("\n");
    let too_long = too_long_for_a_variable(node_ips.len() + 1);
    job_env::RANK_VARIABLES
        .iter()
        .filter(|(_, value)| !(too_long && *value == RankValue::NodeIps))
        .map(|&(name, value)| {
            let value = match value {
                RankValue::NodeRank => ranks.node_rank.to_string(),
                RankValue::NumNodes => ranks.num_nodes.to_string(),
                RankValue::NodeIps => node_ips.clone(),
                RankValue::HeadIp | RankValue::MasterAddr => head.clone(),
                RankValue::GpusPerNode => gpus_per_node.to_string(),
                RankValue::MasterPort => master_port.to_string(),
                RankValue::Rank => ranks.rank.to_string(),
                RankValue::WorldSize => ranks.world_size.to_string(),
                RankValue::LocalRank => ranks.local_rank.to_string(),
                RankValue::Unbuffered => "1".to_owned(),
            };
            (name.to_owned(), value)
        })
        .collect()
}

/// A node's own rank variables, for its Ray in a persistent cluster: a job's entrypoint may land
/// on any node, and inherits them from that node's Ray. (The other nodes' IPs are not known
/// when a node's Ray starts, so `RAYSLURM_NODE_IPS` is not among them.)
pub(crate) fn node_env(alloc: &Allocation, head_ip: IpAddr) -> Vec<(&'static str, String)> {
    let ranks = Ranks::node_setup(alloc);
    vec![
        (job_env::NODE_RANK, ranks.node_rank.to_string()),
        (job_env::NUM_NODES, ranks.num_nodes.to_string()),
        (job_env::HEAD_IP, head_ip.to_string()),
        (job_env::NUM_GPUS_PER_NODE, alloc.gpus_on_node.to_string()),
        (job_env::SKYPILOT_NODE_RANK, ranks.node_rank.to_string()),
        (job_env::SKYPILOT_NUM_NODES, ranks.num_nodes.to_string()),
        (
            job_env::SKYPILOT_NUM_GPUS_PER_NODE,
            alloc.gpus_on_node.to_string(),
        ),
    ]
}

/// What the command (and setup) learns of the run's attempts: how many came before, the run's
/// private directory, the same for every attempt, for its checkpoints, and SkyPilot's task
/// variables (the task's ID is the same for every attempt too).
pub(crate) fn attempt_env(alloc: &Allocation, run_dir: Option<&Path>) -> Vec<(String, String)> {
    let mut env = vec![(
        job_env::RESTART_COUNT.to_owned(),
        alloc.restart_count.to_string(),
    )];
    if let Some(dir) = run_dir {
        env.push((job_env::RUN_DIR.to_owned(), dir.display().to_string()));
    }
    env.extend(skypilot::task_env(alloc, run_dir, &|k| {
        std::env::var(k).ok()
    }));
    env
}

/// The rank environment of a node's setup in a Ray (or `--no-ray`) run. Each node starts as
/// soon as its own setup is done, so the other nodes' IPs are not known yet: the head's is.
pub(crate) fn setup_env_before_ray(
    alloc: &Allocation,
    head_ip: IpAddr,
    master_port: u16,
) -> Vec<(String, String)> {
    rank_env(
        Ranks::node_setup(alloc),
        &[head_ip],
        alloc.gpus_on_node,
        master_port,
    )
    .into_iter()
    .filter(|(k, _)| k != job_env::NODE_IPS && k != job_env::SKYPILOT_NODE_IPS)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4,096 IPv6 nodes' global addresses (38 characters each) do not fit one variable: they
    /// are left out, and said why; 4,096 IPv4 nodes' fit.
    #[test]
    fn node_ips_too_long_for_one_variable_are_left_out_and_said_why() {
        let v6: Vec<IpAddr> = (0..4096u32)
            .map(|k| {
                format!("2001:db8:85a3:1234:5678:8a2e:ac10:{:x}", 0x1000 + k)
                    .parse()
                    .unwrap()
            })
            .collect();
        let v4: Vec<IpAddr> = (0..4096u32)
            .map(|k| {
                format!("10.{}.{}.{}", k >> 16, (k >> 8) & 255, k & 255)
                    .parse()
                    .unwrap()
            })
            .collect();
        let ranks = Ranks {
            node_rank: 0,
            num_nodes: 4096,
            rank: 0,
            world_size: 4096,
            local_rank: 0,
        };
        let names = |ips: &[IpAddr]| -> Vec<String> {
            rank_env(ranks, ips, 0, 1)
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert!(!names(&v6).iter().any(|k| k.ends_with("NODE_IPS")));
        assert!(names(&v6).contains(&job_env::NODE_RANK.to_owned()));
        let why = node_ips_left_out(&v6).unwrap();
        assert!(why.contains("the IPs of 4096 nodes"), "{why}");
        assert_eq!(node_ips_left_out(&v4), None);
        assert!(names(&v4).contains(&job_env::SKYPILOT_NODE_IPS.to_owned()));
    }

    fn alloc(node: &str) -> Allocation {
        Allocation {
            job_id: "7".into(),
            node: node.into(),
            nodes: vec!["n1".into(), "n2".into(), "n3".into()],
            cpus_on_node: Some(2),
            gpus_on_node: 0,
            memory_on_node: None,
            restart_count: 0,
        }
    }

    #[test]
    fn a_clusters_node_carries_its_own_rank() {
        let env = node_env(&alloc("n3"), "10.0.0.1".parse().unwrap());
        let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("RAYSLURM_NODE_RANK"), Some("2"));
        assert_eq!(get("SKYPILOT_NODE_RANK"), Some("2"));
        assert_eq!(get("RAYSLURM_NUM_NODES"), Some("3"));
        assert_eq!(get("RAYSLURM_HEAD_IP"), Some("10.0.0.1"));
    }

    #[test]
    fn every_attempt_sees_its_restart_count_and_the_runs_directory() {
        let mut a = alloc("n1");
        a.restart_count = 2;
        let env = attempt_env(&a, Some(Path::new("/shared/x_1122-093005.d")));
        assert_eq!(
            env[..2],
            [
                ("RAYSLURM_RESTART_COUNT".to_owned(), "2".to_owned()),
                (
                    "RAYSLURM_RUN_DIR".to_owned(),
                    "/shared/x_1122-093005.d".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn ranks_come_from_slurm() {
        let env: HashMap<String, String> = [
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "6"),
            ("SLURM_LOCALID", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let r = Ranks::of_task(&alloc("n3"), &env);
        assert_eq!(
            r,
            Ranks {
                node_rank: 2,
                num_nodes: 3,
                rank: 5,
                world_size: 6,
                local_rank: 1
            }
        );
    }

    #[test]
    fn every_name_of_the_contract_is_set() {
        let ips: Vec<IpAddr> = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
            .iter()
            .map(|i| i.parse().unwrap())
            .collect();
        let r = Ranks::of_task(&alloc("n2"), &HashMap::new());
        let env: HashMap<String, String> = rank_env(r, &ips, 4, 12009).into_iter().collect();
        let expect = [
            ("RAYSLURM_NODE_RANK", "1"),
            ("RAYSLURM_NUM_NODES", "3"),
            ("RAYSLURM_NODE_IPS", "10.0.0.1\n10.0.0.2\n10.0.0.3"),
            ("RAYSLURM_HEAD_IP", "10.0.0.1"),
            ("RAYSLURM_NUM_GPUS_PER_NODE", "4"),
            ("MASTER_ADDR", "10.0.0.1"),
            ("MASTER_PORT", "12009"),
            ("RANK", "1"),
            ("WORLD_SIZE", "3"),
            ("LOCAL_RANK", "0"),
            ("SKYPILOT_NODE_RANK", "1"),
            ("SKYPILOT_NODE_IPS", "10.0.0.1\n10.0.0.2\n10.0.0.3"),
            ("SKYPILOT_NUM_NODES", "3"),
            ("SKYPILOT_NUM_GPUS_PER_NODE", "4"),
        ];
        for (k, v) in expect {
            assert_eq!(env.get(k).map(String::as_str), Some(v), "{k}");
        }
    }
}
