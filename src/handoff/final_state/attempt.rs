//! One attempt of a run: one time its job ran, until it ended or Slurm put it back in its
//! queue. A run that is never requeued has one.

use serde::{Deserialize, Serialize};

use super::Ending;

/// One attempt of a run: one time the job ran, until it ended or was requeued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Attempt {
    /// Slurm's restart count when it ran (0 for the first attempt).
    pub(crate) restart: u32,
    /// RFC 3339.
    pub(crate) started_at: String,
    /// RFC 3339.
    pub(crate) ended_at: String,
    pub(crate) ending: Ending,
    pub(crate) exit_code: i32,
    pub(crate) requeued: bool,
    pub(crate) message: Option<String>,
}

impl Attempt {
    /// Whether the command ended well: it completed, with exit code 0.
    pub(crate) fn succeeded(&self) -> bool {
        self.ending == Ending::Completed && self.exit_code == 0
    }
}
