//! Asking Slurm what became of jobs: `squeue` while slurmctld knows a job (`--states=all` also
//! shows jobs that ended less than MinJobAge ago), `scontrol show job` for an exit code, and
//! `sacct` only where accounting answers (many sites disable it).
//!
//! Each command's machine-readable output is parsed by a small tested function. A failing
//! `squeue` (a controller restart, a timeout) is [`QueryError::Unavailable`]: callers retry and
//! never take it to mean the job has ended. "Invalid job id specified" means "not in the queue".
//!
//! Job ids are not unique forever: a rebuilt cluster starts again at 1 and real clusters wrap
//! around. A job Slurm reports under a run's id is that run's job only if it runs the run's
//! script (kept when Slurm requeues the job, which gives it a new submit time) or was submitted
//! when the run was ([`same_submission`]); otherwise it is somebody else's, and the run's own
//! job is gone.

use std::collections::HashMap;
use std::path::PathBuf;

use chrono::{DateTime, FixedOffset, Local, LocalResult, NaiveDateTime, TimeDelta, TimeZone};

use crate::slurm::duration;
use crate::slurm::env as slurm_env;
use crate::sys::process::{Cmd, CmdError};

/// `squeue -o` fields: id, long state, reason, time used, node count, submit time, node list,
/// batch script. The script's path stays last: it is the only free-form field, so whatever
/// follows the seventh `|` belongs to it.
pub(crate) const SQUEUE_FORMAT: &str = "%i|%T|%r|%M|%D|%V|%N|%o";

/// `sacct -o` fields, in the order [`parse_sacct_line`] reads them.
const SACCT_FORMAT: &str = "JobID,State,ExitCode,ElapsedRaw,Submit";

/// A Slurm client command that prints times the way [`parse_submit_time`] reads them
/// (`2026-11-22T03:16:18`), whatever `SLURM_TIME_FORMAT` the user has set (`relative` would
/// print `Ystday 03:16`).
fn slurm_client(program: &str) -> Cmd {
    Cmd::new(program).env(slurm_env::SLURM_TIME_FORMAT, "standard")
}

/// How far apart the submit time Slurm reports for a job id and the one in a run's record may
/// be for the two to be the same job. `launch` reads its own clock just after `sbatch` returns,
/// Slurm keeps whole seconds, and the login node's and the controller's clocks may differ a
/// little; a job that was given the same id later (a rebuilt cluster, job ids wrapping around)
/// was submitted long after.
pub(crate) const SAME_JOB_SLACK: TimeDelta = TimeDelta::seconds(60);

/// Whether a job Slurm reports as submitted at `slurm` is the one a run recorded as submitted
/// at `recorded`. Slurm's clients print times in the local time of the host they run on (ours),
/// without an offset. A time unknown on either side cannot tell two jobs apart, so it counts
/// as the same job, as before submit times were asked.
fn same_submission(slurm: Option<NaiveDateTime>, recorded: Option<DateTime<FixedOffset>>) -> bool {
    same_submission_in(&Local, slurm, recorded)
}

/// [`same_submission`] with Slurm's times read in `tz`.
fn same_submission_in<Tz: TimeZone>(
    tz: &Tz,
    slurm: Option<NaiveDateTime>,
    recorded: Option<DateTime<FixedOffset>>,
) -> bool {
    let (Some(slurm), Some(recorded)) = (slurm, recorded) else {
        return true;
    };
    let near = |t: DateTime<Tz>| (t.fixed_offset() - recorded).abs() <= SAME_JOB_SLACK;
    match tz.from_local_datetime(&slurm) {
        LocalResult::Single(t) => near(t),
        // Clocks went back: the local time names two instants.
        LocalResult::Ambiguous(first, second) => near(first) || near(second),
        // Clocks went forward over it: no clock printed it, so it tells nothing.
        LocalResult::None => true,
    }
}

/// A submit time as Slurm prints it (`2026-11-22T03:16:18`); `None` for `N/A`, `Unknown` or
/// anything else.
fn parse_submit_time(text: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%dT%H:%M:%S").ok()
}

/// Where a job is in its life, whatever Slurm's exact state name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// Waiting for resources (or held, or requeued).
    Pending,
    /// Has (or had, if suspended) its nodes.
    Running,
    /// The batch script has ended; Slurm is cleaning up (COMPLETING, STAGE_OUT).
    Ending,
    /// Gone for good: completed, failed, cancelled, timed out, ...
    Ended,
}

/// A Slurm job state name, e.g. `RUNNING` or `OUT_OF_MEMORY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlurmState(pub(crate) String);

impl SlurmState {
    pub(crate) fn new(name: &str) -> Self {
        // scontrol and sacct may add words: `CANCELLED by 1000`.
        let word = name.split_whitespace().next().unwrap_or("UNKNOWN");
        Self(word.trim_end_matches('+').to_ascii_uppercase())
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Unknown names count as running: a state we cannot read must never end a follower.
    pub(crate) fn phase(&self) -> Phase {
        match self.0.as_str() {
            "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESV_DEL_HOLD" => {
                Phase::Pending
            }
            "COMPLETING" | "STAGE_OUT" => Phase::Ending,
            "COMPLETED" | "CANCELLED" | "FAILED" | "TIMEOUT" | "PREEMPTED" | "NODE_FAIL"
            | "BOOT_FAIL" | "DEADLINE" | "OUT_OF_MEMORY" | "REVOKED" | "SPECIAL_EXIT" => {
                Phase::Ended
            }
            _ => Phase::Running,
        }
    }
}

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

/// What tells a run's job from a later job given the same id: the script `launch` wrote for
/// it (a new name every launch) and when it was submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Submission {
    pub(crate) script: PathBuf,
    pub(crate) at: Option<DateTime<FixedOffset>>,
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

/// `None`, `(null)` and empty fields carry nothing.
fn known(value: &str) -> Option<String> {
    match value {
        "" | "None" | "(null)" | "N/A" | "Unknown" => None,
        v => Some(v.to_owned()),
    }
}

/// Why Slurm could not be asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum QueryError {
    /// The command is not installed: retrying will not help.
    #[error(transparent)]
    Missing(CmdError),
    /// The command ran and failed (controller down or restarting, timeout): try again later.
    #[error(transparent)]
    Unavailable(CmdError),
}

impl QueryError {
    fn from_cmd(error: CmdError) -> Self {
        match error {
            e @ CmdError::NotFound { .. } => Self::Missing(e),
            e => Self::Unavailable(e),
        }
    }
}

/// What squeue says of these jobs; jobs slurmctld no longer knows are simply absent.
pub(crate) fn squeue(job_ids: &[&str]) -> Result<Vec<QueueEntry>, QueryError> {
    if job_ids.is_empty() {
        return Ok(Vec::new());
    }
    let cmd = slurm_client("squeue")
        .args(["--noheader", "--states=all", "--jobs"])
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

/// squeue and scontrol fail this way for a job id slurmctld has forgotten (or never had).
fn is_unknown_job(error: &CmdError) -> bool {
    matches!(error, CmdError::Failed { stderr, .. } if stderr.contains("Invalid job id specified"))
}

/// A Slurm exit code field (`ExitCode=3:0`): the batch script's code and the signal that
/// ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlurmExit {
    pub(crate) code: i32,
    pub(crate) signal: i32,
}

impl SlurmExit {
    /// `3:0` -> code 3; `0:9` -> signal 9.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (code, signal) = text.trim().split_once(':')?;
        Some(Self {
            code: code.parse().ok()?,
            signal: signal.parse().ok()?,
        })
    }

    /// What a shell would report: the code, or 128 + signal.
    pub(crate) fn shell_code(self) -> i32 {
        if self.signal != 0 {
            128 + self.signal
        } else {
            self.code
        }
    }
}

/// The fields of `scontrol show job -o ID` we use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScontrolJob {
    pub(crate) state: SlurmState,
    pub(crate) exit: Option<SlurmExit>,
    pub(crate) elapsed: Option<u64>,
    pub(crate) nodelist: Option<String>,
    /// How many times Slurm has requeued it (`Restarts=`): it counts a requeue as soon as the
    /// job is being stopped for it, while the job still runs.
    pub(crate) restarts: Option<u32>,
}

/// Splits `scontrol show job -o` output into `Key=Value` fields. A value may hold spaces
/// (`Command=/x/run.sh a b`): words without `=` belong to the value before them.
pub(crate) fn parse_scontrol_fields(text: &str) -> HashMap<String, String> {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut fields: HashMap<String, String> = HashMap::new();
    let mut last: Option<String> = None;
    for word in line.split_whitespace() {
        match word.split_once('=') {
            Some((key, value))
                if !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "/:_-".contains(c)) =>
            {
                fields.insert(key.to_owned(), value.to_owned());
                last = Some(key.to_owned());
            }
            _ => {
                if let Some(value) = last.as_ref().and_then(|k| fields.get_mut(k)) {
                    value.push(' ');
                    value.push_str(word);
                }
            }
        }
    }
    fields
}

pub(crate) fn parse_scontrol_job(text: &str) -> Option<ScontrolJob> {
    let fields = parse_scontrol_fields(text);
    let state = fields.get("JobState")?;
    Some(ScontrolJob {
        state: SlurmState::new(state),
        exit: fields.get("ExitCode").and_then(|e| SlurmExit::parse(e)),
        elapsed: fields.get("RunTime").and_then(|t| duration::parse(t)),
        nodelist: fields.get("NodeList").and_then(|n| known(n)),
        restarts: fields.get("Restarts").and_then(|r| r.parse().ok()),
    })
}

/// `scontrol show job -o ID`; `Ok(None)` once slurmctld has forgotten the job.
pub(crate) fn scontrol_job(job_id: &str) -> Result<Option<ScontrolJob>, QueryError> {
    let cmd = Cmd::new("scontrol").args(["show", "job", "-o", job_id]);
    match cmd.stdout() {
        Ok(out) => Ok(parse_scontrol_job(&out)),
        Err(e) if is_unknown_job(&e) => Ok(None),
        Err(e) => Err(QueryError::from_cmd(e)),
    }
}

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
    use super::*;

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

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> NaiveDateTime {
        chrono::NaiveDate::from_ymd_opt(y, mo, d)
            .and_then(|day| day.and_hms_opt(h, mi, s))
            .unwrap()
    }

    fn recorded(text: &str) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(text).unwrap()
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
    fn same_job_within_the_slack() {
        let utc = FixedOffset::east_opt(0).unwrap();
        let slurm = Some(at(2026, 11, 22, 3, 16, 18));
        // launch reads its clock just after sbatch returns, and clocks differ a little.
        for text in [
            "2026-11-22T03:16:18+00:00",
            "2026-11-22T03:16:19.734+00:00",
            "2026-11-22T03:17:18+00:00",
            "2026-11-22T03:15:18+00:00",
        ] {
            assert!(
                same_submission_in(&utc, slurm, Some(recorded(text))),
                "{text}"
            );
        }
        // The same instant, recorded by a login node in another zone than squeue prints.
        let cet = FixedOffset::east_opt(3600).unwrap();
        let recorded_utc = Some(recorded("2026-11-22T02:16:20+00:00"));
        assert!(same_submission_in(&cet, slurm, recorded_utc));
        assert!(!same_submission_in(&utc, slurm, recorded_utc));
    }

    #[test]
    fn another_job_outside_the_slack() {
        let utc = FixedOffset::east_opt(0).unwrap();
        let slurm = Some(at(2026, 11, 22, 3, 16, 18));
        for text in [
            // The job with this id now was submitted after the run's (the usual reuse)...
            "2026-11-22T03:15:17+00:00",
            "2026-11-19T11:00:00+00:00",
            // ...or before it (a clock set wrong, ids reused in a strange order).
            "2026-11-22T03:17:19+00:00",
            "2027-01-02T03:16:18+00:00",
        ] {
            assert!(
                !same_submission_in(&utc, slurm, Some(recorded(text))),
                "{text}"
            );
        }
    }

    #[test]
    fn unknown_submit_time_is_the_same_job() {
        let utc = FixedOffset::east_opt(0).unwrap();
        let run = Some(recorded("2026-11-22T03:16:18+00:00"));
        assert!(same_submission_in(&utc, None, run));
        assert!(same_submission_in(
            &utc,
            Some(at(2020, 1, 1, 0, 0, 0)),
            None
        ));
        let e = parse_squeue_line("12|RUNNING|None|0:07|2|N/A|node1").unwrap();
        assert!(e.is_job_of(&Submission {
            script: PathBuf::from("/x.sh"),
            at: run
        }));
    }

    #[test]
    fn squeue_garbage_is_skipped() {
        assert_eq!(parse_squeue_line(""), None);
        assert_eq!(parse_squeue_line("slurm_load_jobs error"), None);
        assert_eq!(parse_squeue_line("|RUNNING|None|0:01|1|n"), None);
    }

    #[test]
    fn unknown_states_never_end_a_job() {
        assert_eq!(SlurmState::new("SOMETHING_NEW").phase(), Phase::Running);
        assert_eq!(SlurmState::new("CANCELLED by 1000").as_str(), "CANCELLED");
        assert_eq!(SlurmState::new("cancelled+").phase(), Phase::Ended);
    }

    #[test]
    fn exit_code_field() {
        assert_eq!(SlurmExit::parse("3:0").map(SlurmExit::shell_code), Some(3));
        assert_eq!(
            SlurmExit::parse("0:9").map(SlurmExit::shell_code),
            Some(137)
        );
        assert_eq!(
            SlurmExit::parse("0:15").map(SlurmExit::shell_code),
            Some(143)
        );
        assert_eq!(SlurmExit::parse("0:0").map(SlurmExit::shell_code), Some(0));
        assert_eq!(SlurmExit::parse("3"), None);
        assert_eq!(SlurmExit::parse("a:b"), None);
    }

    #[test]
    fn scontrol_one_line() {
        let text = "JobId=11 JobName=a.sh UserId=root(0) JobState=FAILED Reason=NonZeroExitCode \
            Dependency=(null) ExitCode=3:0 RunTime=00:00:03 TimeLimit=UNLIMITED NodeList=node1 \
            BatchHost=node1 Command=/srv/my dir/a.sh --flag x=1 WorkDir=/srv/my dir Power= \n";
        let job = parse_scontrol_job(text).unwrap();
        assert_eq!(job.state.as_str(), "FAILED");
        assert_eq!(job.exit, Some(SlurmExit { code: 3, signal: 0 }));
        assert_eq!(job.elapsed, Some(3));
        assert_eq!(job.nodelist.as_deref(), Some("node1"));
        assert_eq!(job.restarts, None);
        let requeued = parse_scontrol_job("JobId=1 JobState=COMPLETING Requeue=1 Restarts=2 \n");
        assert_eq!(requeued.unwrap().restarts, Some(2));
        let fields = parse_scontrol_fields(text);
        assert_eq!(fields["WorkDir"], "/srv/my dir");
        assert_eq!(fields["Power"], "");
        assert_eq!(fields["Command"], "/srv/my dir/a.sh --flag");
        assert_eq!(fields["x"], "1");
        assert_eq!(parse_scontrol_job(""), None);
    }

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

    #[test]
    fn invalid_job_id_means_not_in_queue() {
        let e = CmdError::Failed {
            cmd: "squeue".into(),
            status: "exit code 1".into(),
            stderr: "slurm_load_jobs error: Invalid job id specified".into(),
        };
        assert!(is_unknown_job(&e));
        let e = CmdError::Failed {
            cmd: "squeue".into(),
            status: "exit code 1".into(),
            stderr: "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
                .into(),
        };
        assert!(!is_unknown_job(&e));
    }
}
