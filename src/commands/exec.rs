//! `rayslurm exec CLUSTER [-d] -- CMD ARGS...`: runs a command on a persistent cluster as a Ray
//! job through Ray's Jobs API. Its resources are Ray's entrypoint resources, so a job that does
//! not fit waits in Ray's queue and starts as soon as resources free up. It runs in the
//! directory `exec` was called from (a shared filesystem), or with `--snapshot` in a copy of
//! the workdir made at submission beside its record, so that a queued job runs the code as it
//! was when it was submitted. Its output is kept in a file beside the cluster's log; without
//! `-d`, `exec` follows it and exits with its exit code.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context, Result};
use chrono::{Local, SecondsFormat};
use serde::Serialize;

use crate::clusters::cluster::Cluster;
use crate::clusters::elastic::Elastic;
use crate::clusters::files;
use crate::clusters::follow;
use crate::clusters::jobs::JobRecord;
use crate::clusters::ranks::{self, RankSpec};
use crate::commands::settings::exec::ExecSettings;
use crate::error::{UsageError, show};
use crate::handoff::cluster_info::ClusterInfo;
use crate::handoff::job_env;
use crate::launch::snapshot::{Listing, SnapshotInfo};
use crate::printer::Printer;
use crate::ray::jobs_api::{JobsApi, RuntimeEnv, Submit};
use crate::runs::log_tail::Start;

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
    /// `--snapshot`: the copy the job starts in, with its git commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot: Option<&'a SnapshotInfo>,
}

pub(crate) fn run(settings: &ExecSettings, printer: &Printer) -> Result<ExitCode> {
    // Listed (and its size checked) before anything is asked or written.
    let listing = settings.snapshot.as_ref().map(Listing::of).transpose()?;
    run_listed(settings, listing, printer)
}

/// [`run`] with the job's snapshot listed already (`submit`'s: its script alone).
pub(crate) fn run_listed(
    settings: &ExecSettings,
    listing: Option<Listing>,
    printer: &Printer,
) -> Result<ExitCode> {
    let (_, cluster) = Cluster::open(&settings.cluster, printer)?;
    let (info, api) = cluster.connect(printer)?;
    check_fits(&info, settings, cluster.name())?;
    let grows_to = Elastic::of(&cluster.run.record, &cluster.run_dir)?.map(|e| e.max_nodes);
    let ranks = rank_count(&info, grows_to, settings, cluster.name())?;
    let job = with_a_free_id(cluster.name(), |above| {
        submit_as(
            &cluster,
            &api,
            settings,
            ranks,
            listing.as_ref(),
            printer,
            above,
        )
    })?;
    let name = cluster.name();
    if settings.json {
        let submitted = Submitted {
            cluster: name,
            job: job.id,
            name: &job.name,
            submission_id: &job.submission_id,
            command: &job.command,
            workdir: &job.workdir.display().to_string(),
            log: &job.log.display().to_string(),
            submitted_at: &job.submitted_at,
            snapshot: job.snapshot.as_ref(),
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
    if settings.detach {
        printer.info(&format!(
            "follow it with `rayslurm logs {name} {} -f`; `rayslurm queue {name}` shows every job",
            job.id
        ));
        return Ok(ExitCode::SUCCESS);
    }
    follow::follow(&api, name, &job, Start::Beginning, printer)
}

/// How many ids `exec` takes in turn while Ray answers that it has the one taken already.
const ID_TRIES: u32 = 100;

/// What became of one id's submission.
enum Outcome {
    Accepted(Box<JobRecord>),
    /// Ray has a job under this id already (one whose record was lost, or whose submission's
    /// answer was): its record is removed and the next id is taken.
    IdTaken(u32),
}

/// Submits under the next free id (`submit_above` of the id to be above), taking the next id
/// while Ray has the one taken already. Ray's list of jobs is not read: its length is the
/// queue's, and a submission's cost must not grow with it.
fn with_a_free_id(
    cluster: &str,
    mut submit_above: impl FnMut(u32) -> Result<Outcome>,
) -> Result<JobRecord> {
    let mut above = 0;
    for _ in 0..ID_TRIES {
        match submit_above(above)? {
            Outcome::Accepted(job) => return Ok(*job),
            Outcome::IdTaken(id) => above = id,
        }
    }
    anyhow::bail!(
        "job not submitted to cluster {cluster}: Ray already has jobs under the next {ID_TRIES} ids above {}, which no record here names",
        above - ID_TRIES
    )
}

/// Records the job beside the cluster's log under the next free id above `above`, writes its
/// snapshot there, and gives it to Ray; the record and the snapshot go again if Ray did not
/// take it.
fn submit_as(
    cluster: &Cluster,
    api: &JobsApi,
    settings: &ExecSettings,
    ranks: Option<u32>,
    listing: Option<&Listing>,
    printer: &Printer,
    above: u32,
) -> Result<Outcome> {
    let workdir = &settings.workdir;
    let mut job = JobRecord::create(
        &cluster.run_dir,
        &cluster.run.record.job_id,
        above,
        settings.name.as_deref(),
        &settings.command,
        workdir,
        Local::now().to_rfc3339_opts(SecondsFormat::Secs, false),
    )?;
    job.num_cpus = settings.num_cpus;
    job.num_gpus = settings.num_gpus;
    job.nodes = ranks;
    if let Err(e) = job.write_secrets(&settings.secrets) {
        job.remove(&cluster.run_dir);
        return Err(e.context("the job's secrets could not be written, so nothing was submitted"));
    }
    if let Some(listing) = listing {
        match listing.write(&job.snapshot_dir()) {
            Ok(info) => job.snapshot = info,
            Err(e) => {
                job.remove(&cluster.run_dir);
                return Err(e.context(
                    "the workdir's snapshot could not be written, so nothing was submitted",
                ));
            }
        }
    }
    if let Some(info) = &job.snapshot {
        printer.info(&info.summary());
    }
    job.save(&cluster.run_dir)?;
    if let Some(nodes) = ranks {
        // Each rank's shell reads the secrets (the driver's own environment is not theirs).
        let command = job.with_secrets(&job.command);
        let setup = settings
            .ranks
            .as_ref()
            .and_then(|r| r.setup.as_deref())
            .map(|s| job.with_secrets(s));
        let mut spec = RankSpec::new(nodes, settings.num_cpus, settings.num_gpus, &command);
        spec.memory = settings.memory;
        spec.setup = setup.as_deref();
        spec.workdir = job.start_dir();
        ranks::write(&job.log, &spec)?;
    }
    // A rank job's resources are its ranks' (the driver's bundles); its driver needs none.
    let entry = |r: Option<f64>| if ranks.is_some() { None } else { r };
    let mut env_vars = settings.env.clone();
    env_vars.insert(job_env::PYTHONUNBUFFERED.to_owned(), "1".to_owned());
    let dir = files::files_dir(&cluster.run_dir);
    env_vars.insert(files::FILES_ENV.to_owned(), dir.display().to_string());
    let submit = Submit {
        entrypoint: job.entrypoint(),
        submission_id: job.submission_id.clone(),
        entrypoint_num_cpus: entry(settings.num_cpus),
        entrypoint_num_gpus: entry(settings.num_gpus),
        entrypoint_memory: settings.memory.filter(|_| ranks.is_none()),
        runtime_env: RuntimeEnv { env_vars },
        metadata: BTreeMap::from([
            ("rayslurm_job".to_owned(), job.id.to_string()),
            ("name".to_owned(), job.name.clone()),
        ]),
    };
    if let Err(e) = api.submit(&submit) {
        if e.is_id_taken(&submit.submission_id) {
            job.remove(&cluster.run_dir);
            return Ok(Outcome::IdTaken(job.id));
        }
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
    Ok(Outcome::Accepted(Box::new(job)))
}

/// `--per-node`'s number of ranks: `-n`, or every node of the cluster now; more than it has
/// (an elastic cluster: more than it `grows_to`, whose head adds worker jobs for the ranks
/// that wait) would wait forever.
fn rank_count(
    info: &ClusterInfo,
    grows_to: Option<u32>,
    job: &ExecSettings,
    name: &str,
) -> Result<Option<u32>, UsageError> {
    let Some(ranks) = &job.ranks else {
        return Ok(None);
    };
    let has = u32::try_from(info.nodes.len()).unwrap_or(u32::MAX);
    match (ranks.nodes, grows_to) {
        (None, _) => Ok(Some(has)),
        (Some(n), _) if n <= has => Ok(Some(n)),
        (Some(n), Some(most)) if n <= most => Ok(Some(n)),
        (Some(n), Some(most)) => Err(UsageError::new(format!(
            "-n {n}: cluster {} grows to {most} nodes at most (--max-nodes), and each rank needs a node of its own",
            show(name)
        ))
        .hint(format!("ask for at most `-n {most}`"))),
        (Some(n), None) => Err(UsageError::new(format!(
            "-n {n}: cluster {} has {has} node{}, and each rank needs a node of its own",
            show(name),
            if has == 1 { "" } else { "s" }
        ))
        .hint(format!(
            "ask for at most `-n {has}`, or start a larger cluster"
        ))),
    }
}

/// A job (or with --per-node, a rank) larger than the cluster's largest node would wait in Ray's queue forever: refused.
fn check_fits(info: &ClusterInfo, job: &ExecSettings, name: &str) -> Result<(), UsageError> {
    let too_big = |flag: &str, asked: f64, has: f64, what: &str| {
        UsageError::new(format!(
            "{flag} {asked} is more than a node of cluster {} has ({has} {what})",
            show(name)
        ))
        .hint("a job runs on one node: ask for at most one node's worth, or start a larger cluster")
    };
    if let Some(g) = job.num_gpus
        && g > f64::from(info.gpus_per_node)
    {
        return Err(too_big(
            "--num-gpus",
            g,
            f64::from(info.gpus_per_node),
            "GPUs",
        ));
    }
    if let (Some(c), Some(has)) = (job.num_cpus, info.cpus_per_node)
        && c > f64::from(has)
    {
        return Err(too_big("--num-cpus", c, f64::from(has), "CPUs"));
    }
    Ok(())
}
