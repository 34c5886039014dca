//! The name of a run's pyxis container (`srun --container-name=NAME`): one container a node
//! for an attempt, `rayslurm-JOB.ATTEMPT-RANDOM`. The random part is chosen once by the
//! attempt's head (or by an elastic worker job, a job of its own) and reaches every node in
//! the bootstrap's arguments, so that every step of the attempt on a node uses the same name.
//! A name without it could be known before the job starts (job ids are sequential), and pyxis
//! runs in a container that already has the name instead of making one.

use std::fmt;
use std::str::FromStr;

/// What every name starts with.
const PREFIX: &str = "rayslurm-";

/// The longest name taken back (pyxis takes names of up to 128 bytes with its prefix).
const MAX_LEN: usize = 100;

/// A run's pyxis container's name for one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PyxisName(String);

impl PyxisName {
    /// `rayslurm-JOB.RESTART-RANDOM`; `random` is hex digits from the kernel.
    pub(crate) fn new(job_id: &str, restart: u32, random: &str) -> Self {
        Self(format!("{PREFIX}{job_id}.{restart}-{random}"))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The names pyxis gives the container in enroot: `pyxis_NAME`, or `pyxis_JOB_NAME` on a
    /// site that scopes named containers to their job (`container_scope=job`).
    pub(crate) fn in_enroot(&self, job_id: &str) -> [String; 2] {
        [
            format!("pyxis_{}", self.0),
            format!("pyxis_{job_id}_{}", self.0),
        ]
    }
}

impl FromStr for PyxisName {
    type Err = String;

    /// A name as the head passes it: ours, and nothing that pyxis's `NAME:FLAGS` syntax or a
    /// path would read otherwise.
    fn from_str(text: &str) -> Result<Self, String> {
        let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
        if !text.starts_with(PREFIX) || text.len() > MAX_LEN || !text.chars().all(safe) {
            return Err(format!(
                "`{text}` is not a container name of rayslurm's (`{PREFIX}JOB.ATTEMPT-RANDOM`, letters, digits, `.`, `-` and `_`)"
            ));
        }
        Ok(Self(text.to_owned()))
    }
}

impl fmt::Display for PyxisName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_has_the_job_the_attempt_and_the_random_part_and_parses_back() {
        let name = PyxisName::new("42", 1, "0123456789abcdef");
        assert_eq!(name.as_str(), "rayslurm-42.1-0123456789abcdef");
        assert_eq!(name.to_string().parse::<PyxisName>(), Ok(name.clone()));
        assert_eq!(
            name.in_enroot("42"),
            [
                "pyxis_rayslurm-42.1-0123456789abcdef",
                "pyxis_42_rayslurm-42.1-0123456789abcdef"
            ]
        );
    }

    #[test]
    fn a_name_that_is_not_ours_or_that_pyxis_would_read_otherwise_is_refused() {
        for bad in [
            "other-42.0",
            "rayslurm-42.0:exec",
            "rayslurm-42.0,x",
            "rayslurm-../x",
            "rayslurm-42 0",
            &format!("rayslurm-{}", "a".repeat(100)),
        ] {
            let err = bad.parse::<PyxisName>().unwrap_err();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
    }
}
