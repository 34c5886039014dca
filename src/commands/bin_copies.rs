//! The copies of rayslurm in the private tree's `bin/` that runs still need: each launch
//! removes those no kept run record names (a copy named by a record stays, whether its run is
//! queued, running or over, so `launch --again` can run it once more). Shared by `launch`,
//! `up` and `launch --again`.

use std::path::Path;

use crate::launch::node_binary::{self, NodeBinary, PRUNE_GRACE};
use crate::printer::Printer;
use crate::runs::store::{RunStore, StoredRun};
use crate::state_dir::private_root;

/// Removes the copies no run record names, except `current` (this launch's); says what it
/// removed. Never fails a launch: a copy left costs disk space only.
pub(crate) fn prune_copies(current: &NodeBinary, printer: &Printer) {
    // Damaged records were warned about where they were loaded; here they name nothing.
    let pruned = RunStore::from_env()
        .map_err(anyhow::Error::from)
        .and_then(|store| store.load())
        .and_then(|loaded| {
            let runs = loaded.runs;
            let Some(keep) = Kept::of(&runs) else {
                return Ok(Vec::new());
            };
            let root = private_root()?;
            let current = current.path.file_name().map(|n| n.to_string_lossy());
            let keep = |name: &str| current.as_deref() == Some(name) || keep.names(name);
            node_binary::prune(root.path(), &keep, PRUNE_GRACE)
        });
    match pruned {
        Ok(removed) if !removed.is_empty() => printer.info(&format!(
            "removed {} copies of rayslurm that no recorded run names any more",
            removed.len()
        )),
        Ok(_) => {}
        Err(e) => printer.warn(&format!("could not prune old copies of rayslurm: {e:#}")),
    }
}

/// What the records name: their copies' file names, or (records written before they kept it)
/// their scripts' text, which names it.
struct Kept {
    names: Vec<String>,
    scripts: Vec<String>,
}

impl Kept {
    /// `None` when a run that may still be going names no copy and its script cannot be read:
    /// then nothing is removed.
    fn of(runs: &[StoredRun]) -> Option<Self> {
        let mut kept = Self {
            names: Vec::new(),
            scripts: Vec::new(),
        };
        for run in runs {
            let record = &run.record;
            if let Some(name) = record.binary.as_deref().and_then(Path::file_name) {
                kept.names.push(name.to_string_lossy().into_owned());
            } else if let Ok(text) = std::fs::read_to_string(&record.script) {
                kept.scripts.push(text);
            } else if record.ended.is_none() {
                return None;
            }
        }
        Some(kept)
    }

    fn names(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name) || self.scripts.iter().any(|s| s.contains(name))
    }
}
