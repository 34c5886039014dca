//! What a command that takes a cluster or a run (`cancel`, `dashboard`) is pointed at: a
//! cluster's name names that cluster; anything else, the run `select` resolves (the latest of
//! an experiment). Each such command opens its target here, so they all read a name alike.

use std::path::Path;

use anyhow::Result;

use super::cluster::Cluster;
use crate::error::UsageError;
use crate::printer::Printer;
use crate::runs::select;
use crate::runs::store::{RunStore, StoredRun};

/// A recorded cluster, or a recorded run that is none.
#[derive(Debug)]
pub(crate) enum Target {
    Cluster(Cluster),
    Run(StoredRun),
}

impl Target {
    /// What `target` names in the user's run store (a damaged record costs a warning), with the
    /// store, which keeps what becomes of it.
    pub(crate) fn open(target: &str, printer: &Printer) -> Result<(RunStore, Self)> {
        let (store, runs) = RunStore::open(printer)?;
        let found = Self::find(&runs, target, store.dir())?;
        Ok((store, found))
    }

    /// What `target` names among the recorded runs: a cluster of that name first (a cluster
    /// and an experiment never share a name), else the run it names.
    fn find(runs: &[StoredRun], target: &str, store_dir: &Path) -> Result<Self, UsageError> {
        if let Ok(cluster) = Cluster::find(runs, target) {
            return Ok(Self::Cluster(cluster));
        }
        let run = select::resolve(runs, target, store_dir)?.latest();
        Ok(Self::Run(run.clone()))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use chrono::{FixedOffset, TimeZone};

    use super::*;
    use crate::handoff::run_files::RunFiles;
    use crate::runs::store::RunRecord;

    fn run(exp: &str, job: &str, cluster: bool) -> StoredRun {
        let at = FixedOffset::east_opt(0)
            .unwrap()
            .with_ymd_and_hms(2026, 11, 22, 9, 0, 0)
            .unwrap();
        let files = RunFiles::for_stem(Path::new("/logs"), exp);
        let mut record = RunRecord::new(exp, job, &files, at, Path::new("/w"), "true", 1);
        record.cluster = cluster;
        StoredRun {
            path: PathBuf::from(format!("/store/{job}.json")),
            record,
        }
    }

    fn find(target: &str) -> Result<Target, UsageError> {
        let runs = [run("train", "12", false), run("pool", "11", true)];
        Target::find(&runs, target, Path::new("/store"))
    }

    #[test]
    fn a_cluster_name_names_the_cluster_and_any_other_target_a_run() {
        let Ok(Target::Cluster(cluster)) = find("pool") else {
            panic!("`pool` is a cluster");
        };
        assert_eq!(cluster.run.record.job_id, "11");
        assert_eq!(cluster.run_dir, Path::new("/logs/pool.d"));
        let Ok(Target::Run(run)) = find("train") else {
            panic!("`train` is a run");
        };
        assert_eq!(run.record.job_id, "12");
        // A cluster's job id names the run, as `select` reads it.
        assert!(matches!(find("11"), Ok(Target::Run(r)) if r.record.cluster));
        assert_eq!(
            find("nothing").unwrap_err().to_string(),
            "no run has the experiment name or job id `nothing`"
        );
    }
}
