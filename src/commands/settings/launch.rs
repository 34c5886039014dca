//! `launch`'s arguments resolved into a [`LaunchConfig`], and the job flags it shares with `up`
//! ([`resolve_job`]). The destructuring makes a flag that is not resolved here a compile error
//! rather than a silent default.

use std::path::{Path, PathBuf};

use crate::cli::{JobArgs, LaunchArgs, LongRunArgs, SnapshotArgs};
use crate::env_vars;
use crate::error::{UsageError, show};
use crate::handoff::cluster::{ClusterOptions, DEFAULT_MAX_REQUEUES};
use crate::handoff::signal_name::SignalName;
use crate::launch::config::{
    self, EnvVar, JobRequest, LaunchConfig, Sources, check_log_dir_text, layered,
};
use crate::launch::gpu_directive::GpuDirective;
use crate::launch::snapshot::SnapshotPlan;
use crate::launch::template::UserTemplate;
use crate::launch::{owned_directives, validate};
use crate::slurm::duration;

/// Resolves every argument of `launch`, with the files' values and the defaults.
pub(crate) fn resolve(args: &LaunchArgs, src: &Sources) -> Result<LaunchConfig, UsageError> {
    let LaunchArgs {
        task,
        exp_name,
        command,
        job,
        dry_run,
        json,
        follow,
        cancel_on_interrupt,
        cluster,
        container,
        snapshot,
        long_run:
            LongRunArgs {
                signal,
                requeue,
                max_requeues,
                after,
                singleton,
            },
        again: _,
        given: _,
    } = args;
    // A task file's flags were put in front of the command line's (`commands::task_file`).
    let from_file = |what: &str| {
        UsageError::new(format!("{what} is missing")).hint(match task {
            Some(t) => format!(
                "give `{}` a `run:` field (or `name:`), or pass the flag",
                t.display()
            ),
            None => "pass it on the command line, or run a recorded run again with --again RUN"
                .to_owned(),
        })
    };
    let exp_name = exp_name.as_deref().ok_or_else(|| from_file("--exp-name"))?;
    let command = command
        .as_deref()
        .ok_or_else(|| from_file("--command (a task file's `run`)"))?;
    validate::exp_name(exp_name)?;
    if command.trim().is_empty() {
        return Err(UsageError::new("--command is empty").hint(
            "give the command to run on the head node, e.g. `--command \"python train.py\"`",
        ));
    }
    let job = resolve_job(job, exp_name, command, src)?;
    let mut cluster = super::cluster::resolve(cluster, job.request.num_nodes, src)?;
    cluster.container = super::container::resolve(container, src)?;
    resolve_long_run(&mut cluster, (*signal, *requeue, *max_requeues), src)?;
    check_stop_grace(&cluster, job.request.time.as_deref())?;
    if let Some(a) = after
        && a.trim().is_empty()
    {
        return Err(UsageError::new("--after is empty")
            .hint("name the run to follow: its experiment name or job id"));
    }
    Ok(LaunchConfig {
        job: job.request,
        log_dir: job.log_dir,
        log_dir_is_default: job.log_dir_is_default,
        template: job.template,
        dry_run: *dry_run,
        json: *json,
        follow: *follow,
        cancel_on_interrupt: *cancel_on_interrupt,
        cluster,
        after: after.clone(),
        singleton: *singleton,
        link: None,
        snapshot: resolve_snapshot(snapshot, &src.cwd)?,
    })
}

/// `--snapshot`, `--workdir`, `--snapshot-max-size` and `--empty-workdir`: the snapshot asked
/// for, if any (`--empty-workdir`'s holds nothing). A relative workdir is taken from the
/// current directory.
fn resolve_snapshot(args: &SnapshotArgs, cwd: &Path) -> Result<Option<SnapshotPlan>, UsageError> {
    let SnapshotArgs {
        snapshot,
        workdir,
        snapshot_max_size,
        empty_workdir,
    } = args;
    if *empty_workdir {
        return Ok(Some(SnapshotPlan {
            workdir: None,
            max_size: SnapshotPlan::max_size(snapshot_max_size.as_deref())?,
        }));
    }
    SnapshotPlan::resolve(
        *snapshot,
        workdir.as_deref(),
        snapshot_max_size.as_deref(),
        cwd,
    )
}

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
        (sbatch_args, num_gpus.per_node > 0),
    )
    .map_err(|e| from_where(e, &typed, src))?;
    let env = config::env_vars(env_file, env)?
        .into_iter()
        .map(|(key, value)| EnvVar { key, value })
        .collect();
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
        num_gpus: num_gpus.per_node,
        gpu_type: num_gpus.kind.clone(),
        gpu_directive: layered(*gpu_directive, &p.gpu_directive, &u.gpu_directive)
            .unwrap_or(GpuDirective::GpusPerTask),
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
    };
    Ok(ResolvedJob {
        request,
        log_dir,
        log_dir_is_default,
        template,
    })
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

/// `--signal`, `--requeue` and `--max-requeues` (with their environment and file values) into
/// the options the bootstrap gets.
fn resolve_long_run(
    cluster: &mut ClusterOptions,
    (signal, requeue, max_requeues): (Option<SignalName>, bool, Option<u32>),
    src: &Sources,
) -> Result<(), UsageError> {
    let (p, u) = (&src.project, &src.user);
    // A site's RAYSLURM_MAX_REQUEUES (which clap reads into the flag) is for the runs that
    // ask for --requeue; only the flag itself without --requeue is a mistake.
    let from_variable = std::env::var_os(env_vars::MAX_REQUEUES).is_some_and(|v| !v.is_empty());
    if max_requeues.is_some() && !requeue && !from_variable {
        return Err(UsageError::new("--max-requeues goes with --requeue")
            .hint("add --requeue to put the job back in the queue when it is stopped"));
    }
    cluster.signal = signal_of(signal, src)?;
    cluster.requeue = requeue;
    cluster.max_requeues =
        layered(max_requeues, &p.max_requeues, &u.max_requeues).unwrap_or(DEFAULT_MAX_REQUEUES);
    Ok(())
}

/// `--signal`, else the files' `signal` (checked here, where it is read), else TERM.
pub(super) fn signal_of(
    signal: Option<SignalName>,
    src: &Sources,
) -> Result<SignalName, UsageError> {
    let parse_signal = |name: &str| {
        name.parse::<SignalName>().map_err(|why| {
            let origin = src.origin("signal", false).unwrap_or_default();
            UsageError::new(format!("invalid signal {} ({origin})", show(name))).hint(why)
        })
    };
    match (signal, &src.project.signal, &src.user.signal) {
        (Some(s), _, _) => Ok(s),
        (None, Some(s), _) | (None, None, Some(s)) => parse_signal(s),
        (None, None, None) => Ok(SignalName::default()),
    }
}

/// The time limit's warning must come after the job starts: `--stop-grace` shorter than
/// `--time` (`launch`'s and `up`'s).
pub(super) fn check_stop_grace(
    cluster: &ClusterOptions,
    time: Option<&str>,
) -> Result<(), UsageError> {
    if let Some(limit) = time.and_then(duration::time_limit)
        && cluster.stop_grace > 0
        && u64::from(cluster.stop_grace) >= limit
    {
        return Err(UsageError::new(format!(
            "--stop-grace {} s is not shorter than --time {} ({limit} s): the command would be warned before it starts",
            cluster.stop_grace,
            time.unwrap_or_default()
        ))
        .hint("give a longer --time or a shorter --stop-grace (0 asks for no warning)"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "launch_tests.rs"]
mod tests;
