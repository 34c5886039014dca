//! Submitting a script: `sbatch --parsable`, whose answer (`jobid` or `jobid;cluster`) is parsed
//! by a small tested function. What became of jobs afterwards is `query`'s.

use std::path::Path;

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

/// Asks sbatch whether it would take `script` with `options` before it (they override its
/// `#SBATCH` lines), submitting nothing (`sbatch --test-only`): sbatch's estimate of the start
/// (which it writes on stderr), or its refusal with its own message.
pub(crate) fn test_only(options: &[String], script: &Path) -> Result<String, CmdError> {
    let cmd = Cmd::new("sbatch")
        .arg("--test-only")
        .args(options)
        .arg(script);
    let out = cmd.output()?;
    let said = String::from_utf8_lossy(&out.stderr);
    let line = said.lines().map(str::trim).rfind(|l| !l.is_empty());
    Ok(line
        .map(|l| l.trim_start_matches("sbatch: ").to_owned())
        .unwrap_or_default())
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
}
