//! Submitting a script: `sbatch --parsable`, whose answer (`jobid` or `jobid;cluster`) is parsed
//! by a small tested function. What became of jobs afterwards is `query`'s.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::error::WithHint;
use crate::sys::process::{Cmd, CmdError};

/// A Slurm job id as sbatch prints it.
pub(crate) type JobId = String;

/// Submits a script with `sbatch --parsable`, from `workdir`.
pub(crate) fn sbatch(script: &Path) -> Result<JobId> {
    let cmd = Cmd::new("sbatch").arg("--parsable").arg(script);
    let out = match cmd.stdout() {
        Ok(out) => out,
        Err(e @ CmdError::NotFound { .. }) => {
            return Err(e)
                .hint("run on a Slurm login node, or pass --dry-run to only write the script");
        }
        Err(e) => return Err(e.into()),
    };
    parse_parsable(&out)
        .ok_or_else(|| anyhow::anyhow!("`{cmd}` printed no job id: `{}`", out.trim()))
}

/// Submits `script` with `options` from inside a running job, as a job of its own: the job's
/// `SLURM_*` variables (which sbatch would take as this job's, e.g. its partition's limits or
/// its node list) are cleared, `SLURM_CONF` kept. The error is sbatch's own message.
pub(crate) fn sbatch_from_job(options: &[String], script: &Path) -> Result<JobId, String> {
    let cmd = Cmd::new("sbatch")
        .arg("--parsable")
        .args(options)
        .arg(script);
    let mut command = cmd.command();
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if name.starts_with("SLURM_") && name != "SLURM_CONF" {
            command.env_remove(&key);
        }
    }
    let out = command
        .output()
        .map_err(|e| cmd.spawn_error(e).to_string())?;
    if !out.status.success() {
        return Err(cmd.failed(out.status, &out.stderr).to_string());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    parse_parsable(&text).ok_or_else(|| format!("`{cmd}` printed no job id: `{}`", text.trim()))
}

/// What `sbatch --test-only` said of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TestOnly {
    /// Slurm would take it: its estimate of the start (`Job 12 to start at ... on nodes ...`).
    Accepted(String),
    /// Slurm refuses it: sbatch's own message (`sbatch: error: invalid partition specified: x`).
    Refused(String),
    /// Slurm could not be asked (no sbatch, or no answer within the bound): why.
    NoAnswer(String),
}

/// Asks sbatch whether it would take `script` with `options` before it (they override its
/// `#SBATCH` lines), submitting nothing (`sbatch --test-only`), waiting `bound` at most: one
/// call, whose answer (which sbatch writes on stderr) is its estimate of the start or its
/// refusal. `launch --dry-run`, `up --dry-run` and `up --max-nodes`'s worker jobs ask it here.
pub(crate) fn test_only(options: &[String], script: &Path, bound: Duration) -> TestOnly {
    let cmd = Cmd::new("sbatch")
        .arg("--test-only")
        .args(options)
        .arg(script);
    let child = cmd
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => return TestOnly::NoAnswer(cmd.spawn_error(e).to_string()),
    };
    // Each read on its own thread, so that a full pipe never stalls sbatch past the bound.
    let stderr = child.stderr.take().map(read_all);
    let stdout = child.stdout.take().map(read_all);
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if t0.elapsed() < bound => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return TestOnly::NoAnswer(format!(
                    "`{cmd}` did not answer within {} s",
                    bound.as_secs()
                ));
            }
            Err(e) => return TestOnly::NoAnswer(format!("`{cmd}`: {e}")),
        }
    };
    let text = |t: Option<std::thread::JoinHandle<Vec<u8>>>| {
        t.and_then(|t| t.join().ok())
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap_or_default()
    };
    // sbatch writes its answer on stderr (Slurm 22.05); stdout only where stderr is empty.
    let (stderr, stdout) = (text(stderr), text(stdout));
    let said = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    judge_test_only(status.success(), &said, || {
        cmd.failed(status, said.as_bytes())
    })
}

/// All a pipe gives, read on a thread of its own.
fn read_all(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = pipe.read_to_end(&mut text);
        text
    })
}

/// sbatch's answer to `--test-only`: its last line on success (the estimate), what it said on
/// refusal (the whole failure, command and status, where it said nothing).
fn judge_test_only(ok: bool, said: &str, failed: impl FnOnce() -> CmdError) -> TestOnly {
    let lines: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if ok {
        return TestOnly::Accepted(
            lines
                .last()
                .map(|l| l.trim_start_matches("sbatch: ").to_owned())
                .unwrap_or_else(|| "accepted".to_owned()),
        );
    }
    // Every line: Slurm 22.05 says `allocation failure: Requested node configuration is not
    // available` alone for a node count or GRES no node has.
    if lines.is_empty() {
        TestOnly::Refused(failed().to_string())
    } else {
        TestOnly::Refused(lines.join("\n"))
    }
}

/// `--parsable` prints `jobid` or `jobid;cluster`.
pub(crate) fn parse_parsable(out: &str) -> Option<JobId> {
    let line = out.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    let id = line.split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit() || c == '_')).then(|| id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsable_forms() {
        assert_eq!(parse_parsable("42\n").as_deref(), Some("42"));
        assert_eq!(parse_parsable("42;cluster\n").as_deref(), Some("42"));
        assert_eq!(parse_parsable("note\n43\n").as_deref(), Some("43"));
        assert_eq!(parse_parsable("").as_deref(), None);
        assert_eq!(parse_parsable("Submitted batch job 1").as_deref(), None);
    }

    fn no_failure() -> CmdError {
        CmdError::NotFound {
            program: "sbatch".into(),
        }
    }

    /// Slurm 22.05's answers, as sbatch writes them on stderr.
    #[test]
    fn test_only_answers() {
        assert_eq!(
            judge_test_only(
                true,
                "sbatch: Job 95 to start at 2026-11-27T04:00:00 using 2 processors on nodes node[1-2] in partition lab\n",
                no_failure
            ),
            TestOnly::Accepted(
                "Job 95 to start at 2026-11-27T04:00:00 using 2 processors on nodes node[1-2] in partition lab".into()
            )
        );
        assert_eq!(
            judge_test_only(
                false,
                "sbatch: error: invalid partition specified: nope\nsbatch: error: Batch job submission failed: Invalid partition name specified\n",
                no_failure
            ),
            TestOnly::Refused(
                "sbatch: error: invalid partition specified: nope\nsbatch: error: Batch job submission failed: Invalid partition name specified".into()
            )
        );
        assert_eq!(
            judge_test_only(
                false,
                "allocation failure: Requested node configuration is not available\n",
                no_failure
            ),
            TestOnly::Refused(
                "allocation failure: Requested node configuration is not available".into()
            )
        );
        // A failure that says nothing is told as the failure of the command.
        assert_eq!(
            judge_test_only(false, "", no_failure),
            TestOnly::Refused("`sbatch` was not found on PATH".into())
        );
    }
}
