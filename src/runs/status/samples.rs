//! What the status tests are made of: squeue lines, final states and a run's record.

use chrono::DateTime;

use crate::handoff::final_state::{Attempt, Ending, FinalState};
use crate::runs::store::RunRecord;
use crate::slurm::query::{self, QueueEntry};

/// squeue's line, parsed.
pub(super) fn entry(line: &str) -> QueueEntry {
    query::parse_squeue_line(line).unwrap()
}

/// One attempt of job 7 that ran 65 s, on `node1`.
pub(super) fn attempt(code: i32, ending: Ending) -> Attempt {
    Attempt {
        restart: 0,
        started_at: "2026-11-22T01:00:00+00:00".into(),
        ended_at: "2026-11-22T01:01:05+00:00".into(),
        ending,
        exit_code: code,
        requeued: false,
        message: None,
    }
}

/// The final state of job 7 after its one [`attempt`].
pub(super) fn final_state(code: i32, ending: Ending) -> FinalState {
    FinalState::after_attempt(None, "7", "node1", attempt(code, ending))
}

/// The record of run `x`, job 7.
pub(super) fn record() -> RunRecord {
    let files = crate::handoff::run_files::RunFiles::for_stem(
        std::path::Path::new("/nonexistent"),
        "x_1122-090000",
    );
    let at = DateTime::parse_from_rfc3339("2026-11-22T09:00:00+00:00").unwrap();
    RunRecord::new("x", "7", &files, at, std::path::Path::new("/w"), "true", 1)
}
