//! The record of runs: one JSON file per submitted job, under the user's state directory
//! (`$RAYSLURM_STATE_DIR`, else `$XDG_STATE_HOME/rayslurm`, else `~/.local/state/rayslurm`).
//!
//! One file a run, each written to a temporary file and renamed into place, means concurrent
//! launches from several shells never see or damage each other's records, and no lock is needed.
//! A damaged file is skipped with a warning and costs nothing but itself. Once a run's end is
//! known it is kept in its record, so `status` can still say how a job ended after Slurm has
//! forgotten it (there may be no accounting).

mod recorded_end;
mod run_record;
mod run_store;
#[cfg(test)]
mod samples;

pub(crate) use self::recorded_end::{RecordedEnd, Source};
pub(crate) use self::run_record::RunRecord;
pub(crate) use self::run_store::{RunStore, StoredRun, load_warning};
