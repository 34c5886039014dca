//! `rayslurm exec CLUSTER [-d] -- CMD ARGS...`: runs a command on a persistent cluster as a Ray
//! job through Ray's Jobs API. Its resources are Ray's entrypoint resources, so a job that does
//! not fit waits in Ray's queue and starts as soon as resources free up. It runs in the
//! directory `exec` was called from (a shared filesystem), its output kept in a file beside the
//! cluster's log; without `-d`, `exec` follows it and exits with its exit code.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context, Result};
use chrono::{Local, SecondsFormat};
use serde::Serialize;

use crate::cli::ExecArgs;
use crate::clusters::cluster::Cluster;
use crate::clusters::follow;
use crate::clusters::jobs::{self, JobRecord};
use crate::error::{UsageError, show};
use crate::handoff::cluster_info::ClusterInfo;
use crate::handoff::job_env;
use crate::handoff::jobs_api::{RuntimeEnv, Submit};
use crate::launch::{config, validate};
use crate::printer::Printer;
use crate::runs::log_tail::Start;
use crate::runs::status;
use crate::runs::store::{self, RunStore};
use crate::sys::quote::shell_quote;

/// A submitted job, as `--json` prints it.
#[derive(Serialize)]
struct Submitted<'a> {
    cluster: &'a str,
    /// The job's short id on its cluster (`queue`, `logs CLUSTER JOB`, `cancel CLUSTER JOB`).
    job: u32,
    name: &'a str,
    /// Ray's id for it.
    submission_id: &'a str,
    command: &'a str,
    workdir: &'a str,
    log: &'a str,
    submitted_at: &'a str,
}

pub(crate) fn run(args: &ExecArgs, printer: &Printer) -> Result<ExitCode> {
    let command = command_of(args)?;
    let env: BTreeMap<_, _> = config::env_vars(&args.env_file, &args.env)?
        .into_iter()
        .collect();
    let memory = args
        .memory
        .as_deref()
        .map(|m| validate::memory_bytes("--memory", m))
        .transpose()?;
    for (flag, value) in [("--num-cpus", args.num_cpus), ("--num-gpus", args.num_gpus)] {
        if let Some(v) = value
            && !(v.is_finite() && v > 0.0)
        {
            return Err(
                UsageError::new(format!("{flag} {v} is not a positive number"))
                    .hint(format!("e.g. `{flag} 2`, or `{flag} 0.5` for a share"))
                    .into(),
            );
        }
    }
    let store = RunStore::from_env()?;
    let runs = store::load_warning(&store, printer)?;
    let cluster = Cluster::find(&runs, &args.cluster)?;
    let warn = |m: &str| printer.warn(m);
    let status = status::gather(&[cluster.run], &status::ONE_SHOT_RETRIES, &warn)?
        .statuses
        .remove(0);
    let (info, api) = cluster.api(&status)?;
    check_fits(&info, args, cluster.name())?;

    let workdir = std::env::current_dir().context("cannot read the current directory")?;
    let known = api.jobs().context(format!(
        "cannot list the jobs of cluster {}",
        cluster.name()
    ))?;
    let mut job = JobRecord::create(
        &cluster.run_dir,
        &cluster.run.record.job_id,
        jobs::highest_in_ray(&known, &cluster.run.record.job_id),
        args.name.as_deref(),
        &command,
        &workdir,
        Local::now().to_rfc3339_opts(SecondsFormat::Secs, false),
    )?;
    job.num_cpus = args.num_cpus;
    job.num_gpus = args.num_gpus;
    job.save(&cluster.run_dir)?;
    let mut env_vars = env;
    env_vars.insert(job_env::PYTHONUNBUFFERED.to_owned(), "1".to_owned());
    let submit = Submit {
        entrypoint: job.entrypoint(),
        submission_id: job.submission_id.clone(),
        entrypoint_num_cpus: args.num_cpus,
        entrypoint_num_gpus: args.num_gpus,
        entrypoint_memory: memory,
        runtime_env: RuntimeEnv { env_vars },
        metadata: BTreeMap::from([
            ("rayslurm_job".to_owned(), job.id.to_string()),
            ("name".to_owned(), job.name.clone()),
        ]),
    };
    if let Err(e) = api.submit(&submit) {
        // The answer may be lost after Ray took the job (a timeout): then it is submitted, and
        // its id must never be given again.
        let taken = api
            .job(&submit.submission_id)
            .is_ok_and(|j| j.entrypoint.as_deref() == Some(submit.entrypoint.as_str()));
        if !taken {
            job.remove(&cluster.run_dir);
            return Err(e).context(format!("job not submitted to cluster {}", cluster.name()));
        }
    }
    let name = cluster.name();
    if args.json {
        let submitted = Submitted {
            cluster: name,
            job: job.id,
            name: &job.name,
            submission_id: &job.submission_id,
            command: &job.command,
            workdir: &job.workdir.display().to_string(),
            log: &job.log.display().to_string(),
            submitted_at: &job.submitted_at,
        };
        printer.result(&serde_json::to_string(&submitted)?);
    } else {
        printer.result(&job.id.to_string());
    }
    printer.info(&format!(
        "job {} ({}) submitted to cluster {name}\n  output: {}",
        job.id,
        job.name,
        job.log.display()
    ));
    if args.detach {
        printer.info(&format!(
            "follow it with `rayslurm logs {name} {} -f`; `rayslurm queue {name}` shows every job",
            job.id
        ));
        return Ok(ExitCode::SUCCESS);
    }
    follow::follow(&api, name, &job, Start::Beginning, printer)
}

/// The command: `--command` as written, or the words after `--`, each quoted.
fn command_of(args: &ExecArgs) -> Result<String, UsageError> {
    let command = match (&args.command, args.args.as_slice()) {
        (Some(c), []) => c.clone(),
        (None, words) if !words.is_empty() => words
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    };
    if command.trim().is_empty() {
        return Err(UsageError::new("no command to run").hint(
            "give it after `--`, e.g. `rayslurm exec mycluster -- python train.py --lr 0.1`, or as `--command \"...\"`",
        ));
    }
    Ok(command)
}

/// A job larger than the cluster's largest node would wait in Ray's queue forever: refused.
fn check_fits(info: &ClusterInfo, args: &ExecArgs, name: &str) -> Result<(), UsageError> {
    let too_big = |flag: &str, asked: f64, has: f64, what: &str| {
        UsageError::new(format!(
            "{flag} {asked} is more than a node of cluster {} has ({has} {what})",
            show(name)
        ))
        .hint("a job runs on one node: ask for at most one node's worth, or start a larger cluster")
    };
    if let Some(g) = args.num_gpus
        && g > f64::from(info.gpus_per_node)
    {
        return Err(too_big(
            "--num-gpus",
            g,
            f64::from(info.gpus_per_node),
            "GPUs",
        ));
    }
    if let (Some(c), Some(has)) = (args.num_cpus, info.cpus_per_node)
        && c > f64::from(has)
    {
        return Err(too_big("--num-cpus", c, f64::from(has), "CPUs"));
    }
    Ok(())
}
