//! Following a cluster job to its end (`exec` without `-d`, `logs CLUSTER JOB -f`): its output
//! as the job's log file grows, then its exit code. Ctrl-C stops following, not the job.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::jobs::JobRecord;
use crate::printer::Printer;
use crate::ray::jobs_api::{JobInfo, JobsApi};
use crate::runs::interrupt;
use crate::runs::log_tail::{LogTail, Start};

/// How often the log is read.
const TICK: Duration = Duration::from_millis(200);
/// How often Ray is asked about the job.
const POLL: Duration = Duration::from_secs(1);

/// The exit code rayslurm passes on for an ended job: the command's own, 128 + 15 for a job
/// Ray stopped, and 1 for a failure with no code (a job that never started, say).
pub(crate) fn exit_code(info: &JobInfo) -> u8 {
    match (info.status.as_str(), info.driver_exit_code) {
        ("SUCCEEDED", _) => 0,
        ("STOPPED", _) => 143,
        (_, Some(code)) => u8::try_from(code).ok().filter(|c| *c != 0).unwrap_or(1),
        _ => 1,
    }
}

/// Streams the job's log from `start` until the job ends, then says how it ended.
pub(crate) fn follow(
    api: &JobsApi,
    cluster: &str,
    job: &JobRecord,
    start: Start,
    printer: &Printer,
) -> Result<ExitCode> {
    if let Err(e) = interrupt::install() {
        printer.warn(&format!("Ctrl-C will not be handled: {e}"));
    }
    let mut tail = LogTail::new(&job.log, start);
    let mut out = std::io::stdout();
    let mut asked = Instant::now() - POLL;
    let info = loop {
        if interrupt::received().is_some() {
            printer.info(&format!(
                "\nstopped following; job {} keeps running on cluster {cluster} (cancel it with `rayslurm cancel {cluster} {}`)",
                job.id, job.id
            ));
            return Ok(ExitCode::from(130));
        }
        let _ = tail.pump(&mut out);
        if asked.elapsed() >= POLL {
            asked = Instant::now();
            let info = api.job(&job.submission_id)?;
            if info.ended() {
                break info;
            }
        }
        std::thread::sleep(TICK);
    };
    // What the job wrote last may land in the file a moment after Ray says it ended.
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_millis(600) {
        let _ = tail.pump(&mut out);
        std::thread::sleep(TICK);
    }
    printer.info(&format!("rayslurm: {}", describe(job, &info)));
    Ok(ExitCode::from(exit_code(&info)))
}

/// `job 3 (trial-3) FAILED, exit code 3`.
pub(crate) fn describe(job: &JobRecord, info: &JobInfo) -> String {
    let code = info
        .driver_exit_code
        .map(|c| format!(", exit code {c}"))
        .unwrap_or_default();
    let why = info
        .message
        .as_deref()
        .filter(|m| info.status == "FAILED" && info.driver_exit_code.is_none() && !m.is_empty())
        .map(|m| format!(": {}", m.lines().next().unwrap_or_default()))
        .unwrap_or_default();
    format!("job {} ({}) {}{code}{why}", job.id, job.name, info.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(status: &str, code: Option<i32>) -> JobInfo {
        JobInfo {
            submission_id: Some("s".into()),
            status: status.into(),
            message: None,
            start_time: None,
            end_time: None,
            driver_exit_code: code,
            metadata: None,
            entrypoint: None,
        }
    }

    #[test]
    fn a_jobs_exit_code_is_its_commands() {
        assert_eq!(exit_code(&info("SUCCEEDED", Some(0))), 0);
        assert_eq!(exit_code(&info("FAILED", Some(3))), 3);
        assert_eq!(exit_code(&info("FAILED", None)), 1);
        assert_eq!(exit_code(&info("STOPPED", None)), 143);
    }
}
