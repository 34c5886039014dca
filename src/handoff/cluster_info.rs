//! What every Ray head writes once its cluster is ready (`cluster.json` in the run's private
//! directory: a persistent cluster's and a `launch` run's alike) and the login node reads to
//! reach it: where Ray's dashboard and Jobs API listen, the nodes, and where the token is.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::handoff::run_files::NotPrivate;
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
    /// Whether the head has found the dashboard answering (and, with a token, requiring it):
    /// not with `--include-dashboard=false`. Files from before this field were a persistent
    /// cluster's, whose dashboard always answers.
    #[serde(default = "answering")]
    pub(crate) dashboard: bool,
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
    /// The attempt of the job (Slurm's restart count) that wrote it: after a requeue the
    /// head, its address and its token are another attempt's, and this file is stale until
    /// the new head writes its own.
    #[serde(default)]
    pub(crate) attempt: u32,
    /// `IP:port` of the head's GCS, which an elastic cluster's worker jobs join (absent from
    /// files of older versions).
    #[serde(default)]
    pub(crate) gcs_address: Option<String>,
}

fn answering() -> bool {
    true
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

    /// The info, if the cluster has become ready. The file must be the user's own private
    /// file (it names the program the login node runs through `srun` and where the token is
    /// sent): one that is not is refused, naming its owner and mode.
    pub(crate) fn read(run_dir: &Path) -> Result<Option<Self>> {
        let path = Self::path(run_dir);
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && NotPrivate::of(&meta).is_some()
        {
            use std::os::unix::fs::MetadataExt;
            anyhow::bail!(
                "`{}` is not your private file (owner {}, mode {:04o}{}): a cluster's info names the program run as you and where your token goes, so it is not used; remove it, and start the cluster again",
                path.display(),
                crate::sys::private_tree::owner_name(meta.uid()),
                meta.mode() & 0o7777,
                if meta.is_symlink() { ", a link" } else { "" }
            );
        }
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
            dashboard: true,
            nodes: vec!["n1".into(), "n2".into()],
            cpus_per_node: Some(2),
            gpus_per_node: 0,
            ready_at: "2026-11-22T10:00:00+00:00".into(),
            token_file: Some(dir.path().join("ray-auth-token")),
            rayslurm_bin: "/shared/.rayslurm/bin/rayslurm-x".into(),
            idle_timeout: Some(1800),
            attempt: 1,
            gcs_address: Some("[fd00::1]:12000".into()),
        };
        info.write(dir.path()).unwrap();
        assert_eq!(ClusterInfo::read(dir.path()).unwrap(), Some(info.clone()));
        assert_eq!(info.api_address(), "[fd00::1]:12001");
    }

    #[test]
    fn a_cluster_info_open_to_others_or_a_link_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = ClusterInfo::path(dir.path());
        std::fs::write(&path, "{}").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = ClusterInfo::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("mode 0644") && err.contains("not your private file"),
            "{err}"
        );
        std::fs::remove_file(&path).unwrap();
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(&elsewhere, "{}").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let err = ClusterInfo::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a link"), "{err}");
    }
}
