//! A launch, resolved: [`LaunchConfig`] and the pieces its resolution (in `commands/settings`)
//! reads and checks.
//!
//! Precedence: command line > environment > project file (`./rayslurm.toml`) > user file
//! (`$XDG_CONFIG_HOME/rayslurm/config.toml`) > built-in default ([`layered`]). The files are
//! read once into [`Sources`], so resolution is table-tested without I/O. The project file is
//! found by itself, so another user may have written it: [`project_file`] decides which of its
//! keys may be used ([`trust`] keeps the files the user trusted). The files are read in
//! [`files`]; `--env-file` in [`env_file`]; `up`'s idle timeout in [`idle_timeout`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::error::show;
use crate::handoff::cluster::ClusterOptions;
use crate::launch::gpu_directive::GpuDirective;
use crate::launch::gpu_names::GpuNaming;
use crate::launch::validate;

pub(crate) mod env_file;
mod files;
mod idle_timeout;
pub(crate) mod project_file;
pub(crate) mod recorded;
pub(crate) mod trust;

pub(crate) use files::{FileDefaults, Sources, parse_config, user_host};
pub(crate) use idle_timeout::idle_duration;

/// What the job asks of Slurm and runs. These are the job keys of the template context
/// (README, "Custom templates"): `JobSpec` serializes this struct into it as it is, so a field
/// added here is a key users' templates see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JobRequest {
    pub(crate) exp_name: String,
    pub(crate) command: String,
    pub(crate) load_env: Option<String>,
    pub(crate) env: Vec<EnvVar>,
    pub(crate) num_nodes: u32,
    pub(crate) tasks_per_node: u32,
    pub(crate) cpus_per_task: Option<u32>,
    /// GPUs per node.
    pub(crate) num_gpus: u32,
    /// The GPUs' type (`--num-gpus TYPE:N`), as the site names it.
    pub(crate) gpu_type: Option<String>,
    pub(crate) gpu_directive: GpuDirective,
    /// The GPUs as written, where they name a type: looked up among the site's at submission
    /// (`gpu_names::for_site`); never a template key, never recorded.
    #[serde(skip)]
    pub(crate) gpu_naming: Option<GpuNaming>,
    pub(crate) partition: Option<String>,
    pub(crate) account: Option<String>,
    pub(crate) qos: Option<String>,
    pub(crate) constraint: Option<String>,
    pub(crate) nodelist: Option<String>,
    pub(crate) time: Option<String>,
    /// Memory per node; never set together with `mem_per_cpu`.
    pub(crate) mem: Option<String>,
    pub(crate) mem_per_cpu: Option<String>,
    pub(crate) exclusive: bool,
    pub(crate) sbatch_args: Vec<String>,
    /// `launch --array SPEC`: a job array whose every task is a run of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) array: Option<crate::launch::array_spec::ArraySpec>,
}

/// One `--env KEY=VALUE` (or `--secret`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EnvVar {
    pub(crate) key: String,
    pub(crate) value: String,
    /// A `--secret`: its value is never shown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) secret: bool,
}

/// `text` (a script as written) with the values of the secrets among `env` shown as `***`:
/// their `export KEY=...` lines as the template writes them, and the value itself anywhere
/// else where it is long enough to be told apart (6 characters or more). Each is one pass over
/// the text for all the secrets at once (Aho-Corasick), so thousands of secrets in a script of
/// their thousands of lines cost their size, not its square.
pub(crate) fn without_secrets(text: &str, env: &[EnvVar]) -> String {
    let secrets: Vec<&EnvVar> = env
        .iter()
        .filter(|v| v.secret && !v.value.is_empty())
        .collect();
    if secrets.is_empty() {
        return text.to_owned();
    }
    let lines: Vec<(String, String)> = secrets
        .iter()
        .map(|v| {
            let quoted = crate::sys::quote::shell_quote(&v.value);
            (
                format!("export {}={quoted}", v.key),
                format!("export {}='***'", v.key),
            )
        })
        .collect();
    let text = replace_all(text, &lines);
    // The longest match at each place: a value inside another is not left half shown.
    let values: Vec<(String, String)> = secrets
        .iter()
        .filter(|v| v.value.len() >= 6)
        .map(|v| (v.value.clone(), "***".to_owned()))
        .collect();
    replace_all(&text, &values)
}

/// `text` with each of `pairs`' first strings replaced by its second, the leftmost and longest
/// match first, in one pass.
fn replace_all(text: &str, pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        return text.to_owned();
    }
    let (from, to): (Vec<&str>, Vec<&str>) =
        pairs.iter().map(|(f, t)| (f.as_str(), t.as_str())).unzip();
    aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostLongest)
        .build(&from)
        .expect("the secrets' patterns are few enough for Aho-Corasick")
        .replace_all(text, &to)
}

/// Where a run stands among others: the run it follows (`--after`), whose private directory
/// it keeps using, and whether it waits for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Link {
    /// Slurm's `--dependency`, if the run must wait (`afterany:ID`, `singleton`, or both).
    pub(crate) dependency: Option<String>,
    /// The run directory of the run followed, used instead of this run's own.
    pub(crate) run_dir: Option<PathBuf>,
}

/// A launch, resolved and validated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LaunchConfig {
    pub(crate) job: JobRequest,
    /// Where the link to the run's log goes (the script and log themselves are private).
    pub(crate) log_dir: PathBuf,
    /// The log directory is the default (`./rayslurm-logs`, [`DEFAULT_LOG_DIR`]): made by the
    /// launch if missing (never by a dry run), where one the user named must exist.
    pub(crate) log_dir_is_default: bool,
    pub(crate) template: Option<crate::launch::template::UserTemplate>,
    pub(crate) dry_run: bool,
    /// `--check` (which implies `dry_run`): Slurm's refusal of the dry run, or no answer from
    /// it, is an error.
    pub(crate) check: bool,
    pub(crate) json: bool,
    pub(crate) follow: bool,
    pub(crate) cancel_on_interrupt: bool,
    pub(crate) cluster: ClusterOptions,
    /// `--after RUN`: the run this one follows (resolved when it is submitted).
    pub(crate) after: Option<String>,
    /// `--singleton`: one job of this experiment name at a time.
    pub(crate) singleton: bool,
    /// The place among other runs already resolved (`launch --again`: the recorded run's),
    /// instead of resolving `after` and `singleton` at submission.
    pub(crate) link: Option<Link>,
    /// `--snapshot`/`--workdir`: the workdir copied at submission.
    pub(crate) snapshot: Option<crate::launch::snapshot::SnapshotPlan>,
    /// `up --worker-type`: an elastic cluster's kinds of worker job, each its own job.
    pub(crate) worker_types: Vec<WorkerTypeLaunch>,
}

/// One worker type of an elastic cluster: what the head is told of it, and the job its
/// workers are (the cluster's own, with the type's options on top), whose script is written
/// beside the cluster's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkerTypeLaunch {
    pub(crate) spec: crate::handoff::worker_types::WorkerType,
    pub(crate) config: Box<LaunchConfig>,
}

/// The log directory when none is named: `rayslurm-logs` in the working directory, so that
/// the runs' links gather there rather than among the user's own files.
pub(crate) const DEFAULT_LOG_DIR: &str = "rayslurm-logs";

/// Picks the first value present: command line (or its environment variable, which clap
/// reads), project file, user file.
pub(crate) fn layered<T: Clone>(
    cli: Option<T>,
    project: &Option<T>,
    user: &Option<T>,
) -> Option<T> {
    cli.or_else(|| project.clone()).or_else(|| user.clone())
}

/// `up --idle-timeout` (or its variable), else the files' `idle_timeout`.
pub(crate) fn idle_timeout(cli: Option<u32>, src: &Sources) -> Option<u32> {
    layered(cli, &src.project.idle_timeout, &src.user.idle_timeout)
}

/// The variables of `--env-file` files (read here: the one file resolution reads) then of
/// `flag`'s pairs (`--env`, `--secret`), each key once, with the value given last: `launch`'s,
/// `up`'s and `exec`'s.
pub(crate) fn env_vars(
    files: &[PathBuf],
    (flag, pairs): (&str, &[String]),
) -> Result<Vec<(String, String)>, UsageError> {
    let mut vars = Vec::new();
    for file in files {
        vars.extend(env_file::read(file)?);
    }
    for pair in pairs {
        vars.push(validate::env_pair(flag, pair)?);
    }
    let mut seen = std::collections::HashSet::new();
    let mut last_first: Vec<_> = vars
        .into_iter()
        .rev()
        .filter(|(k, _)| seen.insert(k.clone()))
        .collect();
    last_first.reverse();
    Ok(last_first)
}

/// sbatch writes `%` patterns and splits on white space in `#SBATCH --output=`, so the log
/// directory must be plain text.
pub(crate) fn check_log_dir_text(dir: &Path) -> Result<(), UsageError> {
    let text = dir.to_string_lossy();
    if let Some(c) = text
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "%\\\"'".contains(*c))
    {
        return Err(UsageError::new(format!(
            "the log directory {} contains {}, which an #SBATCH --output line cannot carry",
            show(&text),
            show(&c.to_string())
        ))
        .hint("choose a --log-dir whose path has no spaces, quotes, `%` or `\\`"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(key: &str, value: &str, secret: bool) -> EnvVar {
        EnvVar {
            key: key.into(),
            value: value.into(),
            secret,
        }
    }

    /// A secret's line and its value anywhere else are `***`, a value inside another one
    /// included; an `--env` is shown as it is, and a short secret only on its own line.
    #[test]
    fn secrets_are_shown_as_stars() {
        let env = [
            var("A", "token-123", true),
            var("B", "token-123-more", true),
            var("C", "x y", true),
            var("D", "token-123", false),
        ];
        let text = "export A=token-123\nexport B=token-123-more\nexport C='x y'\n\
                    export D=token-123\necho token-123-more x y\n";
        assert_eq!(
            without_secrets(text, &env),
            "export A='***'\nexport B='***'\nexport C='***'\nexport D=***\necho *** x y\n"
        );
    }

    /// 20,000 secrets, in a script of their 20,000 lines and each value again elsewhere: every
    /// one hidden, in time that grows with the text (two passes), not with its square (the
    /// replacement a secret at a time took 63 s at this size, against 0.45 s, side by side).
    #[test]
    fn thousands_of_secrets_are_hidden_in_linear_time() {
        let n = 20_000;
        let env: Vec<EnvVar> = (0..n)
            .map(|i| var(&format!("S_{i}"), &format!("value-{i:06}"), true))
            .collect();
        let mut text: String = (0..n)
            .map(|i| format!("export S_{i}=value-{i:06}\n"))
            .collect();
        text.extend((0..n).map(|i| format!("echo value-{i:06}!\n")));
        let t0 = std::time::Instant::now();
        let shown = without_secrets(&text, &env);
        let took = t0.elapsed();
        eprintln!("{n} secrets hidden in {took:?}");
        assert!(!shown.contains("value-"), "a value is still shown");
        assert_eq!(shown.matches("='***'\n").count(), n);
        assert_eq!(shown.matches("echo ***!\n").count(), n);
        assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    }
}
