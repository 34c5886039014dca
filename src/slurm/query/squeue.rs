//! `squeue`: what slurmctld knows of jobs now (`--states=all` also shows jobs that ended less
//! than MinJobAge ago), and the time a running job has left.

use std::path::PathBuf;

use chrono::NaiveDateTime;

use super::client::{QueryError, is_unknown_job, slurm_client};
use super::fields::{known, parse_submit_time};
use super::job_state::SlurmState;
use super::submission::{Submission, same_submission};
use crate::slurm::duration;

/// `squeue -o` fields: id, long state, reason, time used, node count, submit time, node list,
/// batch script. The script's path stays last: it is the only free-form field, so whatever
/// follows the seventh `|` belongs to it.
pub(crate) const SQUEUE_FORMAT: &str = "%i|%T|%r|%M|%D|%V|%N|%o";

/// One line of `squeue -o SQUEUE_FORMAT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueEntry {
    pub(crate) job_id: String,
    pub(crate) state: SlurmState,
    /// Why a job pends (`Resources`, `Priority`, `BeginTime`, ...); `None` when Slurm says `None`.
    pub(crate) reason: Option<String>,
    pub(crate) elapsed: Option<u64>,
    pub(crate) nodes: Option<u32>,
    /// When the job was submitted, in local time; `None` when squeue did not say.
    pub(crate) submitted: Option<NaiveDateTime>,
    pub(crate) nodelist: Option<String>,
    /// The batch script the job runs; `None` when squeue did not say.
    pub(crate) script: Option<PathBuf>,
}

impl QueueEntry {
    /// Whether this is the job of the run submitted as `run`, not a later job that was given
    /// the same id: it runs the run's script (a requeued job keeps its script but gets a new
    /// submit time), or it was submitted when the run was ([`same_submission`]; a script path
    /// Slurm spells differently falls back to this).
    pub(crate) fn is_job_of(&self, run: &Submission) -> bool {
        self.script.as_deref() == Some(run.script.as_path())
            || same_submission(self.submitted, run.at)
    }
}

/// Whether squeue's line for `line_id` speaks of job `job_id`: its own line, or one of an array
/// job's elements (`42_1`, `42_[2-5]`).
pub(crate) fn is_of_job(line_id: &str, job_id: &str) -> bool {
    line_id
        .strip_prefix(job_id)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'))
}

/// The job's own line among squeue's answer for it; an array job has no line of its own id,
/// and its first element speaks for it.
pub(crate) fn own_line<'a>(entries: &'a [QueueEntry], job_id: &str) -> Option<&'a QueueEntry> {
    entries
        .iter()
        .find(|e| e.job_id == job_id)
        .or_else(|| entries.first())
}

/// Parses one line of `squeue -h -o SQUEUE_FORMAT`. Lines of fewer fields (no script, no
/// submit time) are read as the format was before those were added, with them unknown.
pub(crate) fn parse_squeue_line(line: &str) -> Option<QueueEntry> {
    let fields: Vec<&str> = line.trim().splitn(8, '|').map(str::trim).collect();
    let (submitted, nodelist, script) = match fields.len() {
        8 => (parse_submit_time(fields[5]), fields[6], known(fields[7])),
        7 => (parse_submit_time(fields[5]), fields[6], None),
        6 => (None, fields[5], None),
        5 => (None, "", None),
        _ => return None,
    };
    let (job_id, state) = (fields[0], fields[1]);
    if job_id.is_empty() || state.is_empty() {
        return None;
    }
    Some(QueueEntry {
        job_id: job_id.to_owned(),
        state: SlurmState::new(state),
        reason: known(fields[2]),
        elapsed: duration::parse(fields[3]),
        nodes: fields[4].parse().ok(),
        submitted,
        nodelist: known(nodelist),
        script: script.map(PathBuf::from),
    })
}

/// What squeue says of these jobs; jobs slurmctld no longer knows are simply absent.
pub(crate) fn squeue(job_ids: &[&str]) -> Result<Vec<QueueEntry>, QueryError> {
    if job_ids.is_empty() {
        return Ok(Vec::new());
    }
    // `--array`: one line an array's task, pending ones too (without it, tasks that have not
    // started share one line, `42_[0-3%2]`, which names no task's job id).
    let cmd = slurm_client("squeue")
        .args(["--noheader", "--states=all", "--array", "--jobs"])
        .arg(job_ids.join(","))
        .args(["--format", SQUEUE_FORMAT]);
    match cmd.stdout() {
        Ok(out) => Ok(out.lines().filter_map(parse_squeue_line).collect()),
        Err(e) if is_unknown_job(&e) => Ok(Vec::new()),
        Err(e) => Err(QueryError::from_cmd(e)),
    }
}

/// The time left before a running job's limit, as squeue's `%L` says it (`1:59:30`,
/// `UNLIMITED`); `None` if squeue does not answer or no longer has the job.
pub(crate) fn time_left(job_id: &str) -> Option<String> {
    let out = slurm_client("squeue")
        .args(["--noheader", "--jobs", job_id, "--format", "%L"])
        .stdout()
        .ok()?;
    let line = out.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.to_owned())
}

#[cfg(test)]
mod tests {
    use super::super::samples::{at, recorded};
    use super::*;
    use crate::slurm::query::Phase;

    #[test]
    fn squeue_pending_line() {
        let e = parse_squeue_line("11|PENDING|Resources|0:00|2|\n").unwrap();
        assert_eq!(e.job_id, "11");
        assert_eq!(e.state.as_str(), "PENDING");
        assert_eq!(e.state.phase(), Phase::Pending);
        assert_eq!(e.reason.as_deref(), Some("Resources"));
        assert_eq!(e.elapsed, Some(0));
        assert_eq!(e.nodes, Some(2));
        assert_eq!(e.nodelist, None);
    }

    #[test]
    fn squeue_running_and_ended_lines() {
        let e = parse_squeue_line("12|RUNNING|None|1:02:03|3|node[1-3]").unwrap();
        assert_eq!(e.state.phase(), Phase::Running);
        assert_eq!(e.reason, None);
        assert_eq!(e.elapsed, Some(3723));
        assert_eq!(e.nodelist.as_deref(), Some("node[1-3]"));
        let e = parse_squeue_line("11|FAILED|NonZeroExitCode|0:03|1|node1").unwrap();
        assert_eq!(e.state.phase(), Phase::Ended);
        let e = parse_squeue_line("13|COMPLETING|None|0:09|1|node2").unwrap();
        assert_eq!(e.state.phase(), Phase::Ending);
    }

    #[test]
    fn squeue_submit_time() {
        let e = parse_squeue_line("12|RUNNING|None|0:07|2|2026-11-22T03:16:18|node[1-2]").unwrap();
        assert_eq!(e.submitted, Some(at(2026, 11, 22, 3, 16, 18)));
        assert_eq!(e.nodelist.as_deref(), Some("node[1-2]"));
        assert_eq!(e.nodes, Some(2));
        let e = parse_squeue_line("11|PENDING|Priority|0:00|1|2026-11-22T03:16:18|").unwrap();
        assert_eq!(e.submitted, Some(at(2026, 11, 22, 3, 16, 18)));
        assert_eq!(e.nodelist, None);
    }

    #[test]
    fn squeue_submit_time_unknown() {
        for line in [
            "12|RUNNING|None|0:07|2|N/A|node1",
            "12|RUNNING|None|0:07|2||node1",
            "12|RUNNING|None|0:07|2|Ystday 03:16|node1",
        ] {
            let e = parse_squeue_line(line).unwrap();
            assert_eq!(e.submitted, None, "{line}");
            assert_eq!(e.nodelist.as_deref(), Some("node1"), "{line}");
        }
    }

    #[test]
    fn squeue_line_without_submit_time() {
        let e = parse_squeue_line("12|RUNNING|None|0:07|2|node[1-2]").unwrap();
        assert_eq!(e.submitted, None);
        assert_eq!(e.nodelist.as_deref(), Some("node[1-2]"));
        assert!(e.is_job_of(&Submission {
            script: PathBuf::from("/x.sh"),
            at: Some(recorded("2026-11-22T03:16:19+00:00"))
        }));
    }

    #[test]
    fn own_line_or_an_array_jobs_first() {
        let line = |s| parse_squeue_line(s).unwrap();
        let entries = vec![
            line("8|RUNNING|None|0:01|1|n"),
            line("7|PENDING|None|0:00|1|"),
        ];
        assert_eq!(own_line(&entries, "7").unwrap().job_id, "7");
        let array = vec![
            line("9_1|RUNNING|None|0:01|1|n"),
            line("9_2|RUNNING|None|0:01|1|n"),
        ];
        assert_eq!(own_line(&array, "9").unwrap().job_id, "9_1");
        assert_eq!(own_line(&[], "7"), None);
        assert!(is_of_job("9_1", "9") && is_of_job("9_[2-5]", "9") && is_of_job("9", "9"));
        assert!(!is_of_job("91", "9") && !is_of_job("8", "9"));
    }

    #[test]
    fn a_job_is_the_runs_by_its_script_or_its_submit_time() {
        let e = parse_squeue_line(
            "12|PENDING|BeginTime|0:00|2|2026-11-25T03:16:18||/shared/runs/exp_1122-031618.sh",
        )
        .unwrap();
        assert_eq!(
            e.script.as_deref(),
            Some(std::path::Path::new("/shared/runs/exp_1122-031618.sh"))
        );
        assert_eq!(e.nodelist, None);
        let run = |script: &str, at: &str| Submission {
            script: PathBuf::from(script),
            at: Some(recorded(at)),
        };
        // Requeued: a new submit time, the same script.
        assert!(e.is_job_of(&run(
            "/shared/runs/exp_1122-031618.sh",
            "2026-11-22T03:16:18+00:00"
        )));
        // Another script and another time: a later job given the id.
        assert!(!e.is_job_of(&run(
            "/shared/runs/exp_1122-031500.sh",
            "2026-11-22T03:15:00+00:00"
        )));
        // A script path with `|` in it stays whole.
        let e = parse_squeue_line("12|RUNNING|None|0:07|1|N/A|node1|/a|b/x.sh").unwrap();
        assert_eq!(e.script.as_deref(), Some(std::path::Path::new("/a|b/x.sh")));
        assert_eq!(e.nodelist.as_deref(), Some("node1"));
    }

    #[test]
    fn squeue_garbage_is_skipped() {
        assert_eq!(parse_squeue_line(""), None);
        assert_eq!(parse_squeue_line("slurm_load_jobs error"), None);
        assert_eq!(parse_squeue_line("|RUNNING|None|0:01|1|n"), None);
    }
}
