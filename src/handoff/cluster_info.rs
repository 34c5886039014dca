//! What a persistent cluster's head writes once its cluster is ready (`cluster.json` in the
//! run's private directory) and the login node reads to reach it: where Ray's Jobs API
//! listens, the nodes, and where the token is.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::sys::staged_file::Staged;

/// The file's name in the run's directory.
const FILE: &str = "cluster.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClusterInfo {
    pub(crate) job_id: String,
    pub(crate) head_node: String,
    pub(crate) head_ip: IpAddr,
    /// The dashboard's port on the head, where Ray's Jobs API is.
    pub(crate) dashboard_port: u16,
    pub(crate) nodes: Vec<String>,
    /// CPUs and GPUs of each node (the head's; Slurm gives every node of a job the same).
    pub(crate) cpus_per_node: Option<u32>,
    pub(crate) gpus_per_node: u32,
    /// RFC 3339.
    pub(crate) ready_at: String,
    /// The token every call must carry (none with `--no-ray-auth`).
    pub(crate) token_file: Option<PathBuf>,
    /// The cluster's own rayslurm on the nodes (it serves as the relay).
    pub(crate) rayslurm_bin: PathBuf,
    /// Seconds without a running or pending job after which the cluster releases itself.
    pub(crate) idle_timeout: Option<u32>,
}

impl ClusterInfo {
    pub(crate) fn path(run_dir: &Path) -> PathBuf {
        run_dir.join(FILE)
    }

    pub(crate) fn write(&self, run_dir: &Path) -> Result<()> {
        let mut file = Staged::new(run_dir, "cluster", 0o600)?;
        file.write_json(self)?;
        file.replace(&Self::path(run_dir))
    }

    /// The info, if the cluster has become ready.
    pub(crate) fn read(run_dir: &Path) -> Result<Option<Self>> {
        let path = Self::path(run_dir);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .with_context(|| format!("cannot read `{}`", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read `{}`", path.display())),
        }
    }

    /// `host:port` of the Jobs API on the head (IPv6 bracketed).
    pub(crate) fn api_address(&self) -> String {
        match self.head_ip {
            IpAddr::V4(ip) => format!("{ip}:{}", self.dashboard_port),
            IpAddr::V6(ip) => format!("[{ip}]:{}", self.dashboard_port),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_then_read() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ClusterInfo::read(dir.path()).unwrap(), None);
        let info = ClusterInfo {
            job_id: "7".into(),
            head_node: "n1".into(),
            head_ip: "fd00::1".parse().unwrap(),
            dashboard_port: 12001,
            nodes: vec!["n1".into(), "n2".into()],
            cpus_per_node: Some(2),
            gpus_per_node: 0,
            ready_at: "2026-11-22T10:00:00+00:00".into(),
            token_file: Some(dir.path().join("ray-auth-token")),
            rayslurm_bin: "/shared/.rayslurm/bin/rayslurm-x".into(),
            idle_timeout: Some(1800),
        };
        info.write(dir.path()).unwrap();
        assert_eq!(ClusterInfo::read(dir.path()).unwrap(), Some(info.clone()));
        assert_eq!(info.api_address(), "[fd00::1]:12001");
    }
}
