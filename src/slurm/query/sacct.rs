//! `sacct`: what accounting says of jobs, only ever a last resort (many sites disable it).

use chrono::{DateTime, FixedOffset, NaiveDateTime};

use super::client::slurm_client;
use super::fields::parse_submit_time;
use super::job_state::{SlurmExit, SlurmState};
use super::submission::same_submission;

/// `sacct -o` fields, in the order [`parse_sacct_line`] reads them.
const SACCT_FORMAT: &str = "JobID,State,ExitCode,ElapsedRaw,Submit";

/// One line of `sacct -n -P -X -o SACCT_FORMAT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SacctEntry {
    pub(crate) job_id: String,
    pub(crate) state: SlurmState,
    pub(crate) exit: Option<SlurmExit>,
    pub(crate) elapsed: Option<u64>,
    /// When the job was submitted, in local time; `None` when sacct did not say.
    pub(crate) submitted: Option<NaiveDateTime>,
}

impl SacctEntry {
    /// Whether this is the job a run recorded as submitted at `recorded` ([`same_submission`]):
    /// for a reused id, sacct describes the newest job that had it.
    pub(crate) fn is_submitted_at(&self, recorded: Option<DateTime<FixedOffset>>) -> bool {
        same_submission(self.submitted, recorded)
    }
}

pub(crate) fn parse_sacct_line(line: &str) -> Option<SacctEntry> {
    let mut fields = line.trim().split('|');
    let job_id = fields.next()?.trim();
    let state = fields.next()?.trim();
    if job_id.is_empty() || state.is_empty() {
        return None;
    }
    Some(SacctEntry {
        job_id: job_id.to_owned(),
        state: SlurmState::new(state),
        exit: fields.next().and_then(SlurmExit::parse),
        elapsed: fields.next().and_then(|e| e.trim().parse().ok()),
        submitted: fields.next().and_then(parse_submit_time),
    })
}

/// What accounting says of these jobs, or nothing at all where `sacct` is missing, disabled
/// ("Slurm accounting storage is disabled") or failing: it is only ever a last resort.
pub(crate) fn sacct(job_ids: &[&str]) -> Vec<SacctEntry> {
    if job_ids.is_empty() || which::which("sacct").is_err() {
        return Vec::new();
    }
    let cmd = slurm_client("sacct")
        .args(["--noheader", "--parsable2", "--allocations", "--jobs"])
        .arg(job_ids.join(","))
        .args(["--format", SACCT_FORMAT]);
    match cmd.stdout() {
        Ok(out) => out.lines().filter_map(parse_sacct_line).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::samples::at;
    use super::*;

    #[test]
    fn sacct_lines() {
        let e = parse_sacct_line("42|CANCELLED by 1000|0:15|7").unwrap();
        assert_eq!(e.state.as_str(), "CANCELLED");
        assert_eq!(e.exit.map(SlurmExit::shell_code), Some(143));
        assert_eq!(e.elapsed, Some(7));
        assert_eq!(e.submitted, None);
        let e = parse_sacct_line("42|COMPLETED|0:0|7|2026-11-22T03:16:18").unwrap();
        assert_eq!(e.submitted, Some(at(2026, 11, 22, 3, 16, 18)));
        let e = parse_sacct_line("42|PENDING|0:0|0|Unknown").unwrap();
        assert_eq!(e.submitted, None);
        assert_eq!(parse_sacct_line(""), None);
    }
}
