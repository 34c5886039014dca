//! The job flags `launch` and `up` share, resolved: what the job asks of Slurm (its
//! `#SBATCH` lines), where its log goes, a user's own template; and how a refusal of a value
//! from a variable or a file says where it came from ([`from_where`]), for every group.

use std::path::PathBuf;

use crate::cli::JobArgs;
use crate::error::{UsageError, show};
use crate::handoff::cluster::NodeOptions;
use crate::launch::config::{self, EnvVar, JobRequest, Sources, check_log_dir_text, layered};
use crate::launch::gpu_directive::GpuDirective;
use crate::launch::gpu_names::{GpuAsk, GpuNaming};
use crate::launch::template::UserTemplate;
use crate::launch::{owned_directives, validate};
use crate::slurm::duration;

/// The job flags resolved: what the job asks of Slurm, and where its files go.
pub(super) struct ResolvedJob {
    pub(super) request: JobRequest,
    pub(super) log_dir: PathBuf,
    /// No `--log-dir` anywhere: the default, made if missing.
    pub(super) log_dir_is_default: bool,
    pub(super) template: Option<UserTemplate>,
}

/// The job flags (`launch`'s and `up`'s) with the files' values and the defaults, checked.
pub(super) fn resolve_job(
    args: &JobArgs,
    exp_name: &str,
    command: &str,
    src: &Sources,
) -> Result<ResolvedJob, UsageError> {
    let JobArgs {
        num_nodes,
        num_gpus,
        num_gpus_from,
        gpu_directive,
        node,
        partition,
        account,
        qos,
        constraint,
        load_env,
        tasks_per_node,
        cpus_per_task,
        mem,
        mem_per_cpu,
        time,
        exclusive: _,
        no_exclusive,
        sbatch_args,
        env,
        env_file,
        secret,
        log_dir,
        template,
    } = args;
    let (p, u) = (&src.project, &src.user);
    // Whether the command line (or a variable) gave each, for errors that say where from.
    let given = [partition, account, qos, constraint, time].map(Option::is_some);
    let typed: Vec<_> = ["partition", "account", "qos", "constraint", "time"]
        .into_iter()
        .zip(given)
        .collect();
    let partition = layered(partition.clone(), &p.partition, &u.partition);
    let account = layered(account.clone(), &p.account, &u.account);
    let qos = layered(qos.clone(), &p.qos, &u.qos);
    let constraint = layered(constraint.clone(), &p.constraint, &u.constraint);
    let time = layered(time.clone(), &p.time, &u.time);
    check_job_text(
        [&partition, &account, &qos, &constraint, node, &time],
        [mem, mem_per_cpu],
        (sbatch_args, num_gpus.first().per_node > 0),
    )
    .map_err(|e| from_where(e, &typed, src))?;
    let env = env_and_secrets(env_file, env, secret)?;
    let load_env =
        layered(load_env.clone(), &p.load_env, &u.load_env).filter(|l| !l.trim().is_empty());
    let (log_dir, log_dir_is_default) = resolve_log_dir(log_dir, src);
    check_log_dir_text(&log_dir)?;
    let template = user_template(layered(template.clone(), &p.template, &u.template), src)?;
    let request = JobRequest {
        exp_name: exp_name.to_owned(),
        command: command.to_owned(),
        load_env,
        env,
        num_nodes: *num_nodes,
        tasks_per_node: *tasks_per_node,
        cpus_per_task: *cpus_per_task,
        num_gpus: num_gpus.first().per_node,
        gpu_type: num_gpus.first().kind,
        gpu_directive: layered(*gpu_directive, &p.gpu_directive, &u.gpu_directive)
            .unwrap_or(GpuDirective::GpusPerTask),
        gpu_naming: gpu_naming(num_gpus, num_gpus_from, src),
        partition,
        account,
        qos,
        constraint,
        nodelist: node.clone(),
        time,
        mem: slurm_memory(mem),
        // clap refuses --mem with --mem-per-cpu.
        mem_per_cpu: slurm_memory(mem_per_cpu).filter(|_| mem.is_none()),
        exclusive: !no_exclusive,
        sbatch_args: sbatch_args.clone(),
        array: None,
    };
    Ok(ResolvedJob {
        request,
        log_dir,
        log_dir_is_default,
        template,
    })
}

/// What the GPUs' names are looked up with at submission, where they name a type: the request
/// as written, where a task file gave it, and the files' `gpu_partitions`.
fn gpu_naming(ask: &GpuAsk, from: &Option<String>, src: &Sources) -> Option<GpuNaming> {
    let (p, u) = (&src.project, &src.user);
    let partitions = layered(None, &p.gpu_partitions, &u.gpu_partitions).unwrap_or_default();
    GpuNaming::of(ask, from.clone(), partitions)
}

/// `--env-file`, `--env` and `--secret` in one list, each key once: a secret wins over the
/// same key in `--env` (its value is then never shown).
fn env_and_secrets(
    env_file: &[PathBuf],
    env: &[String],
    secret: &[String],
) -> Result<Vec<EnvVar>, UsageError> {
    let secrets = config::env_vars(&[], ("--secret", secret))?;
    let secret_keys: std::collections::HashSet<&str> =
        secrets.iter().map(|(k, _)| k.as_str()).collect();
    let mut vars: Vec<EnvVar> = config::env_vars(env_file, ("--env", env))?
        .into_iter()
        .filter(|(key, _)| !secret_keys.contains(key.as_str()))
        .map(|(key, value)| EnvVar {
            key,
            value,
            secret: false,
        })
        .collect();
    vars.extend(secrets.into_iter().map(|(key, value)| EnvVar {
        key,
        value,
        secret: true,
    }));
    Ok(vars)
}

/// The user's own template (`--template`, relative to the working directory), read now: the
/// text rendered is the text the run's record keeps.
fn user_template(path: Option<PathBuf>, src: &Sources) -> Result<Option<UserTemplate>, UsageError> {
    path.map(|t| {
        UserTemplate::read(&src.cwd.join(t)).map_err(|e| {
            UsageError::new(e.to_string()).hint("start a custom template from `rayslurm template`")
        })
    })
    .transpose()
}

/// A memory size as the `#SBATCH` line writes it (`16GB` is `16G`).
fn slurm_memory(size: &Option<String>) -> Option<String> {
    size.as_deref().map(validate::slurm_memory)
}

/// A refusal of a value that came from a variable or a file, saying so: the message names the
/// flag, the user may not have typed it. `typed` holds each key and whether the command line
/// (or its variable) gave it; the first key the message names is the one refused.
pub(super) fn from_where(mut e: UsageError, typed: &[(&str, bool)], src: &Sources) -> UsageError {
    let flag = |key: &str| format!("--{}", key.replace('_', "-"));
    let named = typed
        .iter()
        .filter_map(|(key, given)| Some((e.message.find(&format!("{} ", flag(key)))?, key, given)))
        .min_by_key(|(at, ..)| *at);
    if let Some((_, key, given)) = named
        && let Some(origin) = src.origin(key, *given)
    {
        e.message = format!("{} ({origin})", e.message);
    }
    e
}

/// `--log-dir` (or its variable), else the files' `log_dir`, else the default; and whether it
/// is the default (made if missing).
pub(super) fn resolve_log_dir(log_dir: &Option<PathBuf>, src: &Sources) -> (PathBuf, bool) {
    let (p, u) = (&src.project, &src.user);
    let named = layered(log_dir.clone(), &p.log_dir, &u.log_dir);
    let is_default = named.is_none();
    let dir = named.unwrap_or_else(|| PathBuf::from(config::DEFAULT_LOG_DIR));
    (src.cwd.join(dir), is_default)
}

/// The job's values that go into `#SBATCH` lines, checked: the directives (partition, account,
/// qos, constraint, node list, time), the memory sizes and `--sbatch-arg`s.
fn check_job_text(
    [partition, account, qos, constraint, node, time]: [&Option<String>; 6],
    [mem, mem_per_cpu]: [&Option<String>; 2],
    (sbatch_args, with_gpus): (&[String], bool),
) -> Result<(), UsageError> {
    // Its own check first: it says what a time looks like.
    if let Some(t) = time {
        validate::time(t)?;
    }
    if let Some(n) = node
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(UsageError::new(format!(
            "--node {} looks like a number of nodes, but --node (Slurm's --nodelist) names the nodes to run on",
            show(n)
        ))
        .hint(format!(
            "ask for a number of nodes with --num-nodes {n} (or -n, -N, --nodes); name nodes as sinfo prints them, e.g. `--node node[01-04]`"
        )));
    }
    for (flag, value) in [
        ("--partition", partition),
        ("--account", account),
        ("--qos", qos),
        ("--constraint", constraint),
        ("--node", node),
        ("--time", time),
    ] {
        if let Some(v) = value {
            validate::directive(flag, v)?;
        }
    }
    for (flag, value) in [("--mem", mem), ("--mem-per-cpu", mem_per_cpu)] {
        if let Some(m) = value {
            validate::memory(flag, m)?;
        }
    }
    for a in sbatch_args {
        validate::sbatch_arg(a)?;
        owned_directives::refuse(a, with_gpus)?;
    }
    Ok(())
}

/// The time limit's warning must come after the job starts: `--stop-grace` shorter than
/// `--time` (`launch`'s and `up`'s).
pub(super) fn check_stop_grace(nodes: &NodeOptions, time: Option<&str>) -> Result<(), UsageError> {
    if let Some(limit) = time.and_then(duration::time_limit)
        && nodes.stop_grace > 0
        && u64::from(nodes.stop_grace) >= limit
    {
        return Err(UsageError::new(format!(
            "--stop-grace {} s is not shorter than --time {} ({limit} s): the command would be warned before it starts",
            nodes.stop_grace,
            time.unwrap_or_default()
        ))
        .hint("give a longer --time or a shorter --stop-grace (0 asks for no warning)"));
    }
    Ok(())
}
