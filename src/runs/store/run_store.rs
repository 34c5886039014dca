//! The directory of run records: adding one under a name no other launch takes, rewriting
//! one in place, and loading them all, newest first, past damaged files.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::RunRecord;
use crate::error::UsageError;
use crate::printer::Printer;
use crate::state_dir::{private_root, tree_error};
use crate::sys::staged_file::Staged;

/// A record together with the file it lives in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredRun {
    pub(crate) path: PathBuf,
    pub(crate) record: RunRecord,
}

/// What loading the store found.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// Newest first.
    pub(crate) runs: Vec<StoredRun>,
    /// Files that could not be read, with the reason.
    pub(crate) damaged: Vec<(PathBuf, String)>,
}

/// The directory of run records.
#[derive(Debug, Clone)]
pub(crate) struct RunStore {
    dir: PathBuf,
}

impl RunStore {
    pub(crate) fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The store the environment points at, in the user's private tree (checked, and made
    /// if missing: a record names the files commands act on, so no one else may plant one).
    pub(crate) fn from_env() -> Result<Self, UsageError> {
        let runs = private_root()?.dir("runs").map_err(tree_error)?;
        Ok(Self::at(runs.path()))
    }

    /// The store the environment points at and every run it records, newest first (a damaged
    /// record costs a warning): how every command on recorded runs starts.
    pub(crate) fn open(printer: &Printer) -> Result<(Self, Vec<StoredRun>)> {
        let store = Self::from_env()?;
        let runs = load_warning(&store, printer)?;
        Ok((store, runs))
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds a record under a new file name; never replaces another run's record.
    pub(crate) fn add(&self, record: &RunRecord) -> Result<StoredRun> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create the run store `{}`", self.dir.display()))?;
        let stamp = record.submitted().map_or_else(
            || "unknown".to_owned(),
            |t| t.format("%Y%m%dT%H%M%S").to_string(),
        );
        for n in 0..1000u32 {
            let name = match n {
                0 => format!("{}-{}.json", stamp, record.job_id),
                n => format!("{}-{}-{}.json", stamp, record.job_id, n + 1),
            };
            let path = self.dir.join(name);
            // `Some`: another launch took the name first; try the next.
            if self.staged(record)?.place_new(&path)?.is_none() {
                return Ok(StoredRun {
                    path,
                    record: record.clone(),
                });
            }
        }
        anyhow::bail!(
            "no free record name for job {} in `{}`",
            record.job_id,
            self.dir.display()
        )
    }

    /// Rewrites a run's record in place (atomically: readers see the old or the new one).
    pub(crate) fn update(&self, run: &StoredRun) -> Result<()> {
        self.staged(&run.record)?.replace(&run.path)
    }

    /// A record written to a temporary file in the store, not yet in place.
    fn staged(&self, record: &RunRecord) -> Result<Staged> {
        let mut file = Staged::new(&self.dir, "run", 0o600)
            .with_context(|| format!("cannot write in the run store `{}`", self.dir.display()))?;
        file.write_json(record)?;
        Ok(file)
    }

    /// Every readable record, newest first; unreadable ones are listed in `damaged`.
    pub(crate) fn load(&self) -> Result<Loaded> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot read the run store `{}`", self.dir.display())
                });
            }
        };
        let mut loaded = Loaded::default();
        for entry in entries {
            let path = match entry {
                Ok(entry) => entry.path(),
                Err(e) => {
                    loaded.damaged.push((self.dir.clone(), e.to_string()));
                    continue;
                }
            };
            let is_record = path.extension().is_some_and(|e| e == "json")
                && path
                    .file_name()
                    .is_some_and(|n| !n.to_string_lossy().starts_with('.'));
            if !is_record {
                continue;
            }
            match read_record(&path) {
                Ok(record) => loaded.runs.push(StoredRun { path, record }),
                Err(why) => loaded.damaged.push((path, why)),
            }
        }
        loaded
            .runs
            .sort_by(|a, b| newest_first(&a.record, &b.record));
        Ok(loaded)
    }
}

/// Loads every record, warning once per damaged file (which is skipped).
pub(crate) fn load_warning(store: &RunStore, printer: &Printer) -> Result<Vec<StoredRun>> {
    let loaded = store.load()?;
    for (path, why) in &loaded.damaged {
        printer.warn(&format!(
            "skipping the damaged run record `{}`: {why}",
            path.display()
        ));
    }
    Ok(loaded.runs)
}

fn read_record(path: &Path) -> Result<RunRecord, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let record: RunRecord = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    match record.defect() {
        Some(why) => Err(why),
        None => Ok(record),
    }
}

fn newest_first(a: &RunRecord, b: &RunRecord) -> std::cmp::Ordering {
    let job_number = |r: &RunRecord| {
        r.job_id
            .split('_')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // An array's tasks (`JOBID_TASK`), submitted together, in the order of their ids.
    let task = |r: &RunRecord| {
        r.job_id
            .split_once('_')
            .and_then(|(_, t)| t.parse::<u64>().ok())
    };
    b.submitted()
        .cmp(&a.submitted())
        .then_with(|| job_number(b).cmp(&job_number(a)))
        .then_with(|| task(a).cmp(&task(b)))
        .then_with(|| b.job_id.cmp(&a.job_id))
}

#[cfg(test)]
mod tests {
    use super::super::samples::record;
    use super::*;
    use crate::runs::store::{RecordedEnd, Source};

    /// The job ids of the loaded runs, in their order.
    fn job_ids(loaded: &Loaded) -> Vec<&str> {
        loaded
            .runs
            .iter()
            .map(|r| r.record.job_id.as_str())
            .collect()
    }

    #[test]
    fn add_then_load_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::at(dir.path().join("runs"));
        assert!(store.load().unwrap().runs.is_empty());
        store.add(&record("a", "10", 1)).unwrap();
        store.add(&record("b", "12", 3)).unwrap();
        store.add(&record("a", "11", 2)).unwrap();
        let loaded = store.load().unwrap();
        let ids = job_ids(&loaded);
        assert_eq!(ids, ["12", "11", "10"]);
        assert!(loaded.damaged.is_empty());
        assert_eq!(loaded.runs[0].record, record("b", "12", 3));
    }

    #[test]
    fn damaged_entry_is_skipped_and_nothing_else_lost() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::at(dir.path());
        store.add(&record("a", "10", 1)).unwrap();
        std::fs::write(dir.path().join("broken.json"), "{\"exp_name\": ").unwrap();
        let mut bad_id = serde_json::to_value(record("a", "11", 2)).unwrap();
        bad_id["job_id"] = "11; rm -rf /".into();
        std::fs::write(dir.path().join("bad-id.json"), bad_id.to_string()).unwrap();
        std::fs::write(dir.path().join(".run-x.tmp"), "half").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a record").unwrap();
        store.add(&record("a", "12", 3)).unwrap();
        let loaded = store.load().unwrap();
        let ids = job_ids(&loaded);
        assert_eq!(ids, ["12", "10"]);
        let mut damaged: Vec<String> = loaded
            .damaged
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        damaged.sort();
        assert_eq!(damaged, ["bad-id.json", "broken.json"]);
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::at(dir.path().join("runs"));
        std::thread::scope(|s| {
            for i in 0..32 {
                let store = store.clone();
                // Same submit second and some repeated job ids: names must still not collide.
                s.spawn(move || {
                    store
                        .add(&record("x", &format!("{}", 100 + i % 8), 0))
                        .unwrap()
                });
            }
        });
        let loaded = store.load().unwrap();
        assert_eq!(loaded.runs.len(), 32);
        assert!(loaded.damaged.is_empty());
    }

    #[test]
    fn update_keeps_the_file_and_adds_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::at(dir.path());
        let mut run = store.add(&record("a", "10", 1)).unwrap();
        run.record.ended = Some(RecordedEnd {
            state: "CANCELLED".into(),
            exit_code: Some(143),
            elapsed_seconds: Some(4),
            nodelist: Some("node1".into()),
            source: Source::Squeue,
        });
        store.update(&run).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.runs, vec![run]);
    }
}
