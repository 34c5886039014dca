//! Resolution of `launch` arguments into a validated [`LaunchConfig`].
//!
//! Precedence: command line > environment > project file (`./rayslurm.toml`) > user file
//! (`$XDG_CONFIG_HOME/rayslurm/config.toml`) > built-in default. clap takes an option from its
//! `RAYSLURM_*` variable (`env_vars`) when the command line does not give it, so the arguments
//! arrive here with both; resolution is pure: the files are read once into [`Sources`], so it
//! is table-tested without I/O. The project file is found by itself, so another user may have
//! written it: [`project_file`] decides which of its keys may be used ([`trust`] keeps the
//! files the user trusted). The files are read in [`files`]; `--env-file` in [`env_file`].

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::{ClusterArgs, GpuDirective, JobArgs, LaunchArgs, LongRunArgs};
use crate::env_vars;
use crate::error::UsageError;
use crate::error::show;
use crate::handoff::cluster::{
    ClusterOptions, DEFAULT_MAX_REQUEUES, DEFAULT_READY_TIMEOUT, DEFAULT_STOP_GRACE, IpFamily,
    parse_ray_args,
};
use crate::handoff::signal_name::SignalName;
use crate::launch::validate;
use crate::slurm::duration;

pub(crate) mod env_file;
mod files;
pub(crate) mod project_file;
pub(crate) mod trust;

pub(crate) use files::{FileDefaults, Sources, parse_config};

/// What the job asks of Slurm and runs. These are the job keys of the template context
/// (README, "Custom templates"): `JobSpec` serializes this struct into it as it is, so a field
/// added here is a key users' templates see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct JobRequest {
    pub(crate) exp_name: String,
    pub(crate) command: String,
    pub(crate) load_env: Option<String>,
    pub(crate) env: Vec<EnvVar>,
    pub(crate) num_nodes: u32,
    pub(crate) tasks_per_node: u32,
    pub(crate) cpus_per_task: Option<u32>,
    pub(crate) num_gpus: u32,
    pub(crate) gpu_directive: GpuDirective,
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
}

/// One `--env KEY=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct EnvVar {
    pub(crate) key: String,
    pub(crate) value: String,
}

/// A launch, resolved and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaunchConfig {
    pub(crate) job: JobRequest,
    pub(crate) log_dir: PathBuf,
    pub(crate) template: Option<PathBuf>,
    pub(crate) dry_run: bool,
    pub(crate) json: bool,
    pub(crate) follow: bool,
    pub(crate) cancel_on_interrupt: bool,
    pub(crate) cluster: ClusterOptions,
    /// `--after RUN`: the run this one follows (resolved when it is submitted).
    pub(crate) after: Option<String>,
    /// `--singleton`: one job of this experiment name at a time.
    pub(crate) singleton: bool,
}

/// Picks the first value present: command line (or its environment variable, which clap
/// reads), project file, user file.
fn layered<T: Clone>(cli: Option<T>, project: &Option<T>, user: &Option<T>) -> Option<T> {
    cli.or_else(|| project.clone()).or_else(|| user.clone())
}

/// `up --idle-timeout` (or its variable), else the files' `idle_timeout`.
pub(crate) fn idle_timeout(cli: Option<u32>, src: &Sources) -> Option<u32> {
    layered(cli, &src.project.idle_timeout, &src.user.idle_timeout)
}

impl LaunchConfig {
    /// Resolves every argument; the destructuring makes a flag that is not resolved here a
    /// compile error rather than a silent default.
    pub(crate) fn resolve(args: &LaunchArgs, src: &Sources) -> Result<Self, UsageError> {
        let LaunchArgs {
            exp_name,
            command,
            job:
                JobArgs {
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
                },
            dry_run,
            json,
            follow,
            cancel_on_interrupt,
            cluster,
            long_run:
                LongRunArgs {
                    signal,
                    requeue,
                    max_requeues,
                    after,
                    singleton,
                },
        } = args;
        let (p, u) = (&src.project, &src.user);

        validate::exp_name(exp_name)?;
        if command.trim().is_empty() {
            return Err(UsageError::new("--command is empty").hint(
                "give the command to run on the head node, e.g. `--command \"python train.py\"`",
            ));
        }

        let partition = layered(partition.clone(), &p.partition, &u.partition);
        let account = layered(account.clone(), &p.account, &u.account);
        let qos = layered(qos.clone(), &p.qos, &u.qos);
        let constraint = layered(constraint.clone(), &p.constraint, &u.constraint);
        let time = layered(time.clone(), &p.time, &u.time);
        // Its own check first: it says what a time looks like.
        if let Some(t) = &time {
            validate::time(t)?;
        }
        for (flag, value) in [
            ("--partition", &partition),
            ("--account", &account),
            ("--qos", &qos),
            ("--constraint", &constraint),
            ("--node", node),
            ("--time", &time),
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
        }
        let env = env_vars(env_file, env)?
            .into_iter()
            .map(|(key, value)| EnvVar { key, value })
            .collect();

        let load_env =
            layered(load_env.clone(), &p.load_env, &u.load_env).filter(|l| !l.trim().is_empty());
        let log_dir = layered(log_dir.clone(), &p.log_dir, &u.log_dir)
            .map(|d| src.cwd.join(d))
            .unwrap_or_else(|| src.cwd.clone());
        check_log_dir_text(&log_dir)?;
        let template = layered(template.clone(), &p.template, &u.template).map(|t| src.cwd.join(t));

        let mut cluster = resolve_cluster(cluster, *num_nodes, src)?;
        resolve_long_run(
            &mut cluster,
            (*signal, *requeue, *max_requeues),
            time.as_deref(),
            src,
        )?;
        if let Some(a) = after
            && a.trim().is_empty()
        {
            return Err(UsageError::new("--after is empty")
                .hint("name the run to follow: its experiment name or job id"));
        }

        Ok(Self {
            job: JobRequest {
                exp_name: exp_name.clone(),
                command: command.clone(),
                load_env,
                env,
                num_nodes: *num_nodes,
                tasks_per_node: *tasks_per_node,
                cpus_per_task: *cpus_per_task,
                num_gpus: *num_gpus,
                gpu_directive: layered(*gpu_directive, &p.gpu_directive, &u.gpu_directive)
                    .unwrap_or(GpuDirective::GpusPerTask),
                partition,
                account,
                qos,
                constraint,
                nodelist: node.clone(),
                time,
                mem: mem.clone(),
                // clap refuses --mem with --mem-per-cpu.
                mem_per_cpu: mem_per_cpu.clone().filter(|_| mem.is_none()),
                exclusive: !no_exclusive,
                sbatch_args: sbatch_args.clone(),
            },
            log_dir,
            template,
            dry_run: *dry_run,
            json: *json,
            follow: *follow,
            cancel_on_interrupt: *cancel_on_interrupt,
            cluster,
            after: after.clone(),
            singleton: *singleton,
        })
    }
}

/// The variables of `--env-file` files (read here: the one file resolution reads) then of
/// `--env`, each key once, with the value given last: `launch`'s, `up`'s and `exec`'s.
pub(crate) fn env_vars(
    files: &[PathBuf],
    pairs: &[String],
) -> Result<Vec<(String, String)>, UsageError> {
    let mut vars = Vec::new();
    for file in files {
        vars.extend(env_file::read(file)?);
    }
    for pair in pairs {
        vars.push(validate::env_pair(pair)?);
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

/// `--signal`, `--requeue` and `--max-requeues` (with their environment and file values) into
/// the options the bootstrap gets, checked against `--stop-grace` and `--time`.
fn resolve_long_run(
    cluster: &mut ClusterOptions,
    (signal, requeue, max_requeues): (Option<SignalName>, bool, Option<u32>),
    time: Option<&str>,
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
    let parse_signal = |origin: &str, name: &str| {
        name.parse::<SignalName>().map_err(|why| {
            UsageError::new(format!("invalid signal {} ({origin})", show(name))).hint(why)
        })
    };
    cluster.signal = match (signal, &p.signal, &u.signal) {
        (Some(s), _, _) => s,
        (None, Some(s), _) => parse_signal("project config file", s)?,
        (None, None, Some(s)) => parse_signal("user config file", s)?,
        (None, None, None) => SignalName::default(),
    };
    cluster.requeue = requeue;
    cluster.max_requeues =
        layered(max_requeues, &p.max_requeues, &u.max_requeues).unwrap_or(DEFAULT_MAX_REQUEUES);
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

fn resolve_cluster(
    args: &ClusterArgs,
    num_nodes: u32,
    src: &Sources,
) -> Result<ClusterOptions, UsageError> {
    let ClusterArgs {
        no_ray,
        per_node,
        setup,
        no_prefix,
        interface,
        ip_family,
        min_nodes,
        ready_timeout,
        object_store_memory,
        ray_args,
        ray_head_args,
        port_base,
        stop_grace,
        no_ray_auth,
        ray_metrics,
    } = args;
    let (p, u) = (&src.project, &src.user);
    let interface = layered(interface.clone(), &p.interface, &u.interface);
    if let Some(i) = &interface
        && (i.is_empty()
            || i.len() > 15
            || i.contains(['/', ' '])
            || i.chars().any(char::is_control))
    {
        return Err(UsageError::new(format!("invalid --interface {}", show(i)))
            .hint("give a network interface name as `ip link` shows it, e.g. `ib0` or `eth0`"));
    }
    if *per_node {
        for (flag, given) in [
            ("--min-nodes", min_nodes.is_some()),
            ("--ray-args", ray_args.is_some()),
            ("--ray-head-args", ray_head_args.is_some()),
            ("--object-store-memory", object_store_memory.is_some()),
        ] {
            if given {
                return Err(UsageError::new(format!(
                    "{flag} is a Ray option, and --per-node runs the command without Ray"
                ))
                .hint(format!(
                    "drop {flag}, or drop --per-node to run a Ray cluster"
                )));
            }
        }
    }
    if *no_prefix && !*per_node {
        return Err(UsageError::new("--no-prefix goes with --per-node")
            .hint("only --per-node prefixes output lines with `[RANK NODE]`"));
    }
    if let Some(s) = setup
        && s.trim().is_empty()
    {
        return Err(UsageError::new("--setup is empty")
            .hint("give the command to run on every node first, e.g. `--setup \"pip install -r requirements.txt\"`"));
    }
    if let Some(m) = *min_nodes
        && m > num_nodes
    {
        return Err(UsageError::new(format!(
            "--min-nodes {m} is more than --num-nodes {num_nodes}"
        ))
        .hint("--min-nodes counts the head too and must be at most --num-nodes"));
    }
    let ray_args = layered(ray_args.clone(), &p.ray_args, &u.ray_args);
    if let Some(r) = &ray_args {
        parse_ray_args("--ray-args", r)?;
    }
    let ray_head_args = layered(ray_head_args.clone(), &p.ray_head_args, &u.ray_head_args);
    if let Some(r) = &ray_head_args {
        parse_ray_args("--ray-head-args", r)?;
    }
    // Ray's options from config files mean nothing to a run without Ray.
    let for_ray = |o: Option<String>| o.filter(|_| !*per_node);
    Ok(ClusterOptions {
        no_ray: *no_ray,
        per_node: *per_node,
        setup: setup.clone(),
        no_prefix: *no_prefix,
        serve: false,
        idle_timeout: None,
        interface,
        ip_family: layered(*ip_family, &p.ip_family, &u.ip_family).unwrap_or(IpFamily::Auto),
        min_nodes: *min_nodes,
        ready_timeout: layered(*ready_timeout, &p.ready_timeout, &u.ready_timeout)
            .unwrap_or(DEFAULT_READY_TIMEOUT),
        object_store_memory: layered(
            *object_store_memory,
            &p.object_store_memory,
            &u.object_store_memory,
        )
        .filter(|_| !*per_node),
        ray_args: for_ray(ray_args),
        ray_head_args: for_ray(ray_head_args),
        port_base: *port_base,
        stop_grace: layered(*stop_grace, &p.stop_grace, &u.stop_grace)
            .unwrap_or(DEFAULT_STOP_GRACE),
        no_ray_auth: *no_ray_auth || layered(None, &p.ray_auth, &u.ray_auth) == Some(false),
        ray_metrics: *ray_metrics,
        // `launch`'s own (see `resolve_long_run`); a cluster of `up` keeps the defaults.
        signal: SignalName::default(),
        requeue: false,
        max_requeues: DEFAULT_MAX_REQUEUES,
    })
}

/// sbatch writes `%` patterns and splits on white space in `#SBATCH --output=`, so the log
/// directory must be plain text.
fn check_log_dir_text(dir: &Path) -> Result<(), UsageError> {
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
pub(crate) mod tests {
    use super::*;
    use clap::Parser;

    /// Resolves `launch --exp-name x --command "python f.py"` plus `argv`.
    pub(crate) fn resolve(argv: &[&str], src: &Sources) -> Result<LaunchConfig, UsageError> {
        let mut full = vec![
            "rayslurm",
            "launch",
            "--exp-name",
            "x",
            "--command",
            "python f.py",
        ];
        full.extend_from_slice(argv);
        let cli = crate::cli::Cli::try_parse_from(full).expect("parses");
        match cli.command {
            crate::cli::Command::Launch(args) => LaunchConfig::resolve(&args, src),
            _ => unreachable!(),
        }
    }

    fn src() -> Sources {
        Sources {
            cwd: PathBuf::from("/work/proj"),
            ..Sources::default()
        }
    }

    #[test]
    fn defaults_match_the_seed_launcher() {
        let c = resolve(&[], &src()).unwrap();
        let j = &c.job;
        assert_eq!(j.num_nodes, 1);
        assert_eq!(j.num_gpus, 0);
        assert_eq!(j.tasks_per_node, 1);
        assert!(j.exclusive);
        assert_eq!(j.gpu_directive, GpuDirective::GpusPerTask);
        assert_eq!(c.log_dir, PathBuf::from("/work/proj"));
        assert_eq!(j.partition, None);
        assert_eq!(c.cluster.ready_timeout, DEFAULT_READY_TIMEOUT);
        assert_eq!(c.cluster.ip_family, IpFamily::Auto);
    }

    #[test]
    fn precedence_cli_project_user() {
        let mut s = src();
        s.user.partition = Some("user".into());
        assert_eq!(
            resolve(&[], &s).unwrap().job.partition.as_deref(),
            Some("user")
        );
        s.project.partition = Some("project".into());
        assert_eq!(
            resolve(&[], &s).unwrap().job.partition.as_deref(),
            Some("project")
        );
        assert_eq!(
            resolve(&["-p", "cli"], &s)
                .unwrap()
                .job
                .partition
                .as_deref(),
            Some("cli")
        );
    }

    #[test]
    fn table_of_flags() {
        let s = src();
        let c = resolve(
            &[
                "-n",
                "3",
                "--num-gpus",
                "2",
                "--gpu-directive",
                "gres",
                "--mem-per-cpu",
                "2G",
                "--time",
                "1:00:00",
                "--no-exclusive",
                "--env",
                "A=1",
                "--log-dir",
                "logs",
                "--interface",
                "ib0",
                "--ip-family",
                "6",
                "--min-nodes",
                "2",
            ],
            &s,
        )
        .unwrap();
        let j = &c.job;
        assert_eq!(j.num_nodes, 3);
        assert_eq!(j.num_gpus, 2);
        assert_eq!(j.gpu_directive, GpuDirective::Gres);
        assert_eq!(
            (j.mem.as_deref(), j.mem_per_cpu.as_deref()),
            (None, Some("2G"))
        );
        assert!(!j.exclusive);
        assert_eq!(
            j.env,
            vec![EnvVar {
                key: "A".into(),
                value: "1".into()
            }]
        );
        assert_eq!(c.log_dir, PathBuf::from("/work/proj/logs"));
        assert_eq!(c.cluster.interface.as_deref(), Some("ib0"));
        assert_eq!(c.cluster.ip_family, IpFamily::V6);
        assert_eq!(c.cluster.min_nodes, Some(2));
    }

    #[test]
    fn bad_values_are_usage_errors() {
        let s = src();
        for argv in [
            &["--partition", "a\nb"][..],
            &["--time", "1h"],
            &["--mem", "lots"],
            &["--env", "NOEQUALS"],
            &["--sbatch-arg", "x"],
            &["--sbatch-arg=--array=0-3"],
            &["--per-node", "--min-nodes", "1"],
            &["--per-node", "--ray-args", "--x=1"],
            &["--per-node", "--ray-head-args", "--x=1"],
            &["--per-node", "--object-store-memory", "100"],
            &["--no-prefix"],
            &["--setup", " "],
            &["--node", "n1\n#SBATCH --x"],
            &["-n", "2", "--min-nodes", "3"],
            &["--ray-args", "--x 'unclosed"],
            &["--ray-head-args", "\"open"],
            &["--log-dir", "my logs"],
            &["--interface", "a b"],
        ] {
            assert!(resolve(argv, &s).is_err(), "{argv:?}");
        }
    }
}
