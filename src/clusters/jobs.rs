//! The jobs of a persistent cluster, kept in the cluster's run directory (`jobs/N.json`, with
//! the job's output in `jobs/N.log`, on the shared filesystem, so it outlives the cluster).
//! Each job gets the next short id (1, 2, ...), taken by creating its record file: two
//! `exec`s at once never get the same id.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::handoff::run_files::create_private_dir;
use crate::launch::snapshot::SnapshotInfo;
use crate::sys::quote::shell_quote;
use crate::sys::staged_file::Staged;

/// One job submitted to a cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobRecord {
    pub(crate) id: u32,
    pub(crate) name: String,
    /// Ray's id for it.
    pub(crate) submission_id: String,
    pub(crate) command: String,
    pub(crate) workdir: PathBuf,
    /// RFC 3339.
    pub(crate) submitted_at: String,
    pub(crate) log: PathBuf,
    /// The CPUs and GPUs it asked for (Ray's entrypoint resources).
    #[serde(default)]
    pub(crate) num_cpus: Option<f64>,
    #[serde(default)]
    pub(crate) num_gpus: Option<f64>,
    /// `exec --per-node`: its number of ranks, one a node (then the resources are each rank's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nodes: Option<u32>,
    /// `exec --snapshot`: the copy of the workdir the job starts in, with its git commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) snapshot: Option<SnapshotInfo>,
    /// `exec --secret`: the job's shell reads its secrets from [`Self::secrets_file`] first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) secrets: bool,
}

fn jobs_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("jobs")
}

impl JobRecord {
    /// Takes the next free id in `run_dir`, above `ray_highest` (an id Ray already has, when
    /// it said so), and writes the record under it.
    pub(crate) fn create(
        run_dir: &Path,
        cluster_job: &str,
        ray_highest: u32,
        name: Option<&str>,
        command: &str,
        workdir: &Path,
        submitted_at: String,
    ) -> Result<Self> {
        let dir = jobs_dir(run_dir);
        create_private_dir(&dir)?;
        let recorded = highest_recorded(&dir)?;
        let mut id = recorded.max(ray_highest) + 1;
        loop {
            let record = Self {
                id,
                name: name.map_or_else(|| format!("job{id}"), str::to_owned),
                submission_id: format!("rayslurm-{cluster_job}-{id}"),
                command: command.to_owned(),
                workdir: workdir.to_owned(),
                submitted_at: submitted_at.clone(),
                log: dir.join(format!("{id}.log")),
                num_cpus: None,
                num_gpus: None,
                nodes: None,
                snapshot: None,
                secrets: false,
            };
            let mut file = Staged::new(&dir, "job", 0o600)?;
            file.write_json(&record)?;
            // `Some`: another exec took this id first.
            if file.place_new(&dir.join(format!("{id}.json")))?.is_none() {
                return Ok(record);
            }
            id += 1;
        }
    }

    /// Rewrites the record (with what was learned after it was created).
    pub(crate) fn save(&self, run_dir: &Path) -> Result<()> {
        let dir = jobs_dir(run_dir);
        let mut file = Staged::new(&dir, "job", 0o600)?;
        file.write_json(self)?;
        file.replace(&dir.join(format!("{}.json", self.id)))
    }

    /// Forgets a job Ray never took, and its snapshot (whole or in part) if it has one.
    pub(crate) fn remove(&self, run_dir: &Path) {
        let _ = std::fs::remove_file(jobs_dir(run_dir).join(format!("{}.json", self.id)));
        let _ = std::fs::remove_file(self.secrets_file());
        // A link there is removed, not followed.
        let _ = std::fs::remove_dir_all(self.snapshot_dir());
    }

    /// Where `exec --snapshot` copies the workdir: beside the job's log (`jobs/N.snapshot`),
    /// in the cluster's private directory.
    pub(crate) fn snapshot_dir(&self) -> PathBuf {
        self.log.with_extension("snapshot")
    }

    /// The directory the job starts in: its snapshot, or the one `exec` ran in.
    pub(crate) fn start_dir(&self) -> &Path {
        self.snapshot.as_ref().map_or(&self.workdir, |s| &s.path)
    }

    /// Where `exec --secret` keeps the job's secrets: beside its log (`jobs/N.secrets`), in the
    /// cluster's private directory, readable by the user alone.
    pub(crate) fn secrets_file(&self) -> PathBuf {
        self.log.with_extension("secrets")
    }

    /// Writes `secrets` as `export KEY='VALUE'` lines (mode 0600) for the job's shell to read
    /// before its command: their values never reach Ray, which keeps a job's `runtime_env` in
    /// its job table and its logs, nor a command line.
    pub(crate) fn write_secrets(
        &mut self,
        secrets: &std::collections::BTreeMap<String, String>,
    ) -> Result<()> {
        if secrets.is_empty() {
            return Ok(());
        }
        let dir = self.log.parent().unwrap_or(Path::new("."));
        let mut file = Staged::new(dir, "secrets", 0o600)?;
        let lines: String = secrets
            .iter()
            .map(|(k, v)| format!("export {k}={}\n", shell_quote(v)))
            .collect();
        file.write_all(lines.as_bytes())?;
        file.replace(&self.secrets_file())?;
        self.secrets = true;
        Ok(())
    }

    /// `command` as bash runs it for this job: with `exec --secret`, its secrets' file read
    /// first (by its path: a value is never on a command line), the job failing if it cannot.
    pub(crate) fn with_secrets(&self, command: &str) -> String {
        if !self.secrets {
            return command.to_owned();
        }
        let file = shell_quote(&self.secrets_file().display().to_string());
        format!(". {file} || exit 1\n{command}")
    }

    /// What Ray runs: the command through bash in its start directory, its output appended
    /// to the job's log on the shared filesystem.
    pub(crate) fn entrypoint(&self) -> String {
        let path = |p: &Path| shell_quote(&p.display().to_string());
        let program = match self.nodes {
            Some(_) => super::ranks::program(&self.log),
            None => format!("bash -c {}", shell_quote(&self.with_secrets(&self.command))),
        };
        format!(
            "cd {} && exec {program} >> {} 2>&1",
            path(self.start_dir()),
            path(&self.log)
        )
    }
}

/// The highest id recorded in `dir` (`jobs/`), from the records' names alone: a new job's
/// cost must not grow with the records' contents.
fn highest_recorded(dir: &Path) -> Result<u32> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read `{}`", dir.display()))?;
    Ok(entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse().ok())
        .max()
        .unwrap_or(0))
}

/// Every job of the cluster whose run directory this is, by id.
pub(crate) fn all(run_dir: &Path) -> Result<Vec<JobRecord>> {
    let dir = jobs_dir(run_dir);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", dir.display())),
    };
    let mut jobs: Vec<JobRecord> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok())
        .collect();
    jobs.sort_by_key(|j| j.id);
    Ok(jobs)
}

/// The job `id` of the cluster (its record alone is read).
pub(crate) fn one(run_dir: &Path, id: u32) -> Result<Option<JobRecord>> {
    let path = jobs_dir(run_dir).join(format!("{id}.json"));
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(serde_json::from_str(&text).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job `true` of cluster 42 recorded in `dir`, above `ray_highest`.
    fn plain_job(dir: &Path, ray_highest: u32) -> Result<JobRecord> {
        JobRecord::create(
            dir,
            "42",
            ray_highest,
            None,
            "true",
            Path::new("/w"),
            "t".into(),
        )
    }

    #[test]
    fn ids_are_short_and_never_shared() {
        let dir = tempfile::tempdir().unwrap();
        let ids: Vec<u32> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| plain_job(dir.path(), 0).unwrap().id))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=8).collect::<Vec<_>>());
        let jobs = all(dir.path()).unwrap();
        assert_eq!(jobs.len(), 8);
        assert_eq!(jobs[2].name, "job3");
        assert_eq!(jobs[2].submission_id, "rayslurm-42-3");
    }

    #[test]
    fn an_id_ray_already_has_is_never_given_again() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(plain_job(dir.path(), 0).unwrap().id, 1);
        // Ray said it has 4: the next is above it, and above every record.
        assert_eq!(plain_job(dir.path(), 4).unwrap().id, 5);
        assert_eq!(plain_job(dir.path(), 0).unwrap().id, 6);
        assert_eq!(one(dir.path(), 5).unwrap().unwrap().id, 5);
        assert!(one(dir.path(), 2).unwrap().is_none());
    }

    #[test]
    fn the_entrypoint_runs_the_command_where_exec_ran_and_keeps_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let job = JobRecord::create(
            dir.path(),
            "42",
            0,
            Some("trial"),
            "python t.py --lr 'a b'",
            Path::new("/shared/my proj"),
            "t".into(),
        )
        .unwrap();
        let e = job.entrypoint();
        assert!(
            e.starts_with("cd '/shared/my proj' && exec bash -c 'python t.py --lr '\\''a b'\\'''"),
            "{e}"
        );
        assert!(
            e.ends_with(&format!(">> {} 2>&1", job.log.display())),
            "{e}"
        );
    }

    #[test]
    fn a_job_with_a_snapshot_starts_in_it_whatever_its_path_holds() {
        let dir = tempfile::tempdir().unwrap();
        let mut job = plain_job(dir.path(), 0).unwrap();
        assert_eq!(job.snapshot_dir(), dir.path().join("jobs/1.snapshot"));
        job.snapshot = Some(SnapshotInfo {
            path: PathBuf::from("/s/it's $(here)"),
            workdir: PathBuf::from("/w"),
            commit: None,
            dirty: None,
            files: 1,
            bytes: 1,
        });
        assert!(
            job.entrypoint()
                .starts_with("cd '/s/it'\\''s $(here)' && exec bash -c true"),
            "{}",
            job.entrypoint()
        );
    }
}
