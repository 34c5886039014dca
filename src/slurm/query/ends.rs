//! When running jobs end at the latest, and whether Slurm is preempting them: `squeue -O`'s
//! `EndTime` (the time limit's end; once a job with one is preempted, its grace's end) and
//! `PreemptTime` (set when Slurm chose to preempt it, with its GraceTime to go). An elastic
//! cluster's head asks this of its worker jobs: under a GraceTime, Slurm signals every step of a
//! preempted job but its batch script, where a worker runs, so the worker learns nothing.

use chrono::NaiveDateTime;

use super::client::{QueryError, is_unknown_job, slurm_client};
use super::fields::{known, parse_submit_time};

/// `squeue -O`: each field ends with `|`.
const FORMAT: &str = "JobID:|,EndTime:|,PreemptTime:|,Partition:|";

/// One job's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobEnd {
    pub(crate) job_id: String,
    /// When it ends at the latest, in local time (`None`: no time limit, or unsaid).
    pub(crate) end: Option<NaiveDateTime>,
    /// When Slurm chose to preempt it, if it has.
    pub(crate) preempted_at: Option<NaiveDateTime>,
    /// Its partition, whose GraceTime a preemption gives it.
    pub(crate) partition: Option<String>,
}

/// Parses one line of `squeue -h -O FORMAT`.
fn parse(line: &str) -> Option<JobEnd> {
    let mut fields = line.trim().split('|').map(str::trim);
    let job_id = fields.next().filter(|i| !i.is_empty())?.to_owned();
    let end = fields.next().and_then(parse_submit_time);
    let preempted_at = fields.next().and_then(parse_submit_time);
    let partition = fields.next().and_then(known);
    Some(JobEnd {
        job_id,
        end,
        preempted_at,
        partition,
    })
}

/// The ends of these jobs; jobs slurmctld no longer knows are absent.
pub(crate) fn job_ends(job_ids: &[&str]) -> Result<Vec<JobEnd>, QueryError> {
    if job_ids.is_empty() {
        return Ok(Vec::new());
    }
    let cmd = slurm_client("squeue")
        .args(["--noheader", "--jobs"])
        .arg(job_ids.join(","))
        .args(["--Format", FORMAT]);
    match cmd.stdout() {
        Ok(out) => Ok(out.lines().filter_map(parse).collect()),
        Err(e) if is_unknown_job(&e) => Ok(Vec::new()),
        Err(e) => Err(QueryError::from_cmd(e)),
    }
}

/// A partition's `GraceTime` in seconds (`scontrol show partition`); `None` if Slurm does not
/// say.
pub(crate) fn partition_grace(partition: &str) -> Option<i64> {
    let out = slurm_client("scontrol")
        .args(["show", "partition", "--oneliner", partition])
        .stdout()
        .ok()?;
    out.split_whitespace()
        .find_map(|w| w.strip_prefix("GraceTime="))
        .and_then(|g| g.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_gives_the_end_and_the_preemption() {
        let at = |t| parse_submit_time(t);
        assert_eq!(
            parse("136|2026-11-27T11:24:54|2026-11-27T11:23:54|scavenger|"),
            Some(JobEnd {
                job_id: "136".into(),
                end: at("2026-11-27T11:24:54"),
                preempted_at: at("2026-11-27T11:23:54"),
                partition: Some("scavenger".into()),
            })
        );
        assert_eq!(
            parse("135|NONE|N/A|lab|"),
            Some(JobEnd {
                job_id: "135".into(),
                end: None,
                preempted_at: None,
                partition: Some("lab".into()),
            })
        );
        assert_eq!(parse(""), None);
    }
}
