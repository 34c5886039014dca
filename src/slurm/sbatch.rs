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
