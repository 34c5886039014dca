//! How a run ended, as its record keeps it once learned, and where that was learned.

use serde::{Deserialize, Serialize};

/// Where a run's state came from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Source {
    /// slurmctld still knows the job (`squeue`; the exit code may come from `scontrol`).
    Squeue,
    /// The bootstrap's final state file.
    FinalState,
    /// Slurm's accounting.
    Sacct,
    /// The run's own record of an end learned earlier.
    Record,
    /// Nothing: the job left Slurm unseen, or Slurm could not be asked (also what a record
    /// written by another version says where it names a source this one does not know).
    #[serde(other)]
    None,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Squeue => "squeue",
            Self::FinalState => "final-state",
            Self::Sacct => "sacct",
            Self::Record => "record",
            Self::None => "none",
        }
    }
}

/// The end of a run as last learned from Slurm or the final state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RecordedEnd {
    /// A Slurm state name (`COMPLETED`, `CANCELLED`, ...), or `ENDED` when the job had left
    /// Slurm and nothing said how it ended.
    pub(crate) state: String,
    pub(crate) exit_code: Option<i32>,
    pub(crate) elapsed_seconds: Option<u64>,
    pub(crate) nodelist: Option<String>,
    /// Where the state was learned.
    pub(crate) source: Source,
}
