//! The jobs of a persistent cluster, kept in the cluster's run directory (`jobs/N.json`, with
//! the job's output in `jobs/N.log`, on the shared filesystem, so it outlives the cluster).
//! Each job gets the next short id (1, 2, ...), taken by creating its record file: two
//! `exec`s at once never get the same id.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

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
}

fn jobs_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("jobs")
}

impl JobRecord {
    /// Takes the next free id in `run_dir` and writes the record under it.
    pub(crate) fn create(
        run_dir: &Path,
        cluster_job: &str,
        name: Option<&str>,
        command: &str,
        workdir: &Path,
        submitted_at: String,
    ) -> Result<Self> {
        let dir = jobs_dir(run_dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
        let mut id = all(run_dir)?.iter().map(|j| j.id).max().unwrap_or(0) + 1;
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

    /// Forgets a job Ray never took.
    pub(crate) fn remove(&self, run_dir: &Path) {
        let _ = std::fs::remove_file(jobs_dir(run_dir).join(format!("{}.json", self.id)));
    }

    /// What Ray runs: the command through bash in the directory `exec` ran in, its output
    /// appended to the job's log on the shared filesystem.
    pub(crate) fn entrypoint(&self) -> String {
        let path = |p: &Path| shell_quote(&p.display().to_string());
        format!(
            "cd {} && exec bash -c {} >> {} 2>&1",
            path(&self.workdir),
            shell_quote(&self.command),
            path(&self.log)
        )
    }
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

/// The job `id` of the cluster.
pub(crate) fn one(run_dir: &Path, id: u32) -> Result<Option<JobRecord>> {
    Ok(all(run_dir)?.into_iter().find(|j| j.id == id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_and_never_shared() {
        let dir = tempfile::tempdir().unwrap();
        let ids: Vec<u32> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        JobRecord::create(
                            dir.path(),
                            "42",
                            None,
                            "true",
                            Path::new("/w"),
                            "t".into(),
                        )
                        .unwrap()
                        .id
                    })
                })
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
    fn the_entrypoint_runs_the_command_where_exec_ran_and_keeps_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let job = JobRecord::create(
            dir.path(),
            "42",
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
}
