//! `up`'s arguments resolved: the cluster's name, and the job it submits, resolved from the job
//! and cluster flags it shares with `launch`, kept alive for `exec` instead of running a
//! command: its cluster is built in one piece, with the serving group its own flags resolve
//! into ([`resolve_serve`]); a cluster of `up` is never requeued.

use std::path::Path;

use super::worker_types::{self, ClusterFlags};
use crate::cli::worker_type::WorkerTypeArg;
use crate::cli::{ElasticArgs, UpArgs};
use crate::error::{UsageError, show};
use crate::handoff::cluster::{
    ClusterOptions, DEFAULT_MAX_PENDING_WORKERS, DEFAULT_WORKER_IDLE_TIMEOUT, LongRunOptions,
    ServeOptions,
};
use crate::handoff::file_mounts::Place;
use crate::launch::config::{self, LaunchConfig, Sources};
use crate::launch::file_mounts::{FileMount, MountTo, no_workdir_on_a_cluster};
use crate::launch::snapshot::SnapshotPlan;
use crate::launch::validate;

/// What the script says the command is: a no-op, since a cluster runs `exec`'s jobs instead.
const NO_COMMAND: &str = ": a persistent cluster; its jobs come with rayslurm exec";

/// `up`, resolved.
#[derive(Debug)]
pub(crate) struct UpSettings {
    /// The cluster's name (its experiment name).
    pub(crate) name: String,
    /// Return once submitted, without waiting for the cluster.
    pub(crate) detach: bool,
    /// The allocation to submit.
    pub(crate) config: LaunchConfig,
}

impl UpSettings {
    /// Resolves every argument of `up`, with the files' values and the defaults.
    pub(crate) fn resolve(args: &UpArgs, src: &Sources) -> Result<Self, UsageError> {
        let UpArgs {
            name,
            // Read before resolution (`task_file::expand`), into the flags below.
            task: _,
            idle_timeout,
            job,
            container,
            cluster,
            elastic,
            file_mount,
            detach,
            dry_run,
            check,
            json,
        } = args;
        validate::cluster_name(name)?;
        let job = super::job::resolve_job(job, name, NO_COMMAND, src)?;
        let shared = super::cluster::resolve(cluster, job.request.num_nodes, src)?;
        let container = super::container::resolve(container, src)?;
        let snapshot = mounts_alone(file_mount, &src.cwd, container.container_image.is_some())?;
        // The files' `signal` is `launch`'s, but a bad one is refused here too.
        super::long_run::signal_of(None, src)?;
        super::job::check_stop_grace(&shared.nodes, job.request.time.as_deref())?;
        for (flag, given) in [
            ("--per-node", shared.program.per_node),
            ("--no-ray", shared.program.no_ray),
        ] {
            if given {
                return Err(UsageError::new(format!(
                    "{flag} does not go with `up`: a cluster runs Ray, for the jobs `exec` gives it"
                ))
                .hint("use `rayslurm launch` for a run without Ray"));
            }
        }
        let serve = resolve_serve(
            config::idle_timeout(*idle_timeout, src),
            elastic,
            job.request.num_nodes,
            job.request.nodelist.as_deref(),
        )?;
        let flags = ClusterFlags {
            job: &args.job,
            container: &args.container,
            cluster: &args.cluster,
        };
        let cluster = ClusterOptions {
            program: shared.program,
            nodes: shared.nodes,
            ray: shared.ray,
            long_run: LongRunOptions::default(),
            serve,
            container,
        };
        let config = LaunchConfig {
            job: job.request,
            log_dir: job.log_dir,
            log_dir_is_default: job.log_dir_is_default,
            template: job.template,
            dry_run: *dry_run || *check,
            check: *check,
            json: *json,
            follow: false,
            cancel_on_interrupt: false,
            cluster,
            after: None,
            singleton: false,
            link: None,
            snapshot,
            worker_types: Vec::new(),
        };
        let mut config = config;
        config.worker_types = worker_types::resolve(&elastic.worker_type, &flags, &config, src)?;
        mounts_fit_every_image(&config)?;
        Ok(Self {
            name: name.clone(),
            detach: *detach,
            config,
        })
    }
}

/// `--file-mount`s of a cluster, resolved: the snapshot that holds them alone (the nodes
/// place them and make no workdir); none without them. A destination relative to a workdir
/// is refused: a cluster's nodes have none.
fn mounts_alone(
    given: &[String],
    cwd: &Path,
    in_image: bool,
) -> Result<Option<SnapshotPlan>, UsageError> {
    if given.is_empty() {
        return Ok(None);
    }
    let mut file_mounts = Vec::new();
    for text in given {
        let mount = FileMount::parse(text, cwd, in_image)?;
        if let MountTo::Workdir(rel) = &mount.to {
            let why = no_workdir_on_a_cluster(&rel.display().to_string());
            return Err(
                UsageError::new(format!("--file-mount {}: {why}", show(text)))
                    .hint("e.g. `--file-mount ~/data=./data`"),
            );
        }
        file_mounts.push(mount);
    }
    Ok(Some(SnapshotPlan {
        max_size: SnapshotPlan::max_size(None)?,
        file_mounts,
        mounts_only: true,
        ..SnapshotPlan::default()
    }))
}

/// A file mount outside home and /tmp is bound into the image, or shown in a private view of a
/// node without one: a worker type in an image the head has not (or the other way round)
/// would not see it where the head's programs do, so that is refused.
fn mounts_fit_every_image(config: &LaunchConfig) -> Result<(), UsageError> {
    let Some(plan) = &config.snapshot else {
        return Ok(());
    };
    let in_image = |c: &LaunchConfig| c.cluster.container.container_image.is_some();
    let elsewhere = plan
        .file_mounts
        .iter()
        .find(|m| matches!(m.to, MountTo::Node(Place::Root(_) | Place::InImage(_))));
    let differs = config
        .worker_types
        .iter()
        .find(|t| in_image(&t.config) != in_image(config));
    match (elsewhere, differs) {
        (Some(m), Some(t)) => Err(UsageError::new(format!(
            "--file-mount {}: worker type {} {}, so its nodes would not see `{}` where the head's do",
            show(&format!("{}={}", m.given, m.source.display())),
            t.spec.name,
            if in_image(&t.config) {
                "runs in a container image and the head does not"
            } else {
                "has no container image and the head runs in one"
            },
            m.given
        ))
        .hint("give the head and every worker type the same --container-image, or put the mount under `~/` or /tmp")),
        _ => Ok(()),
    }
}

/// The most nodes a cluster of worker types may hold without `--max-nodes`: the head's and
/// every type's `--max-workers`, which each type must then give.
fn types_max_nodes(types: &[WorkerTypeArg], num_nodes: u32) -> Result<Option<u32>, UsageError> {
    if types.is_empty() {
        return Ok(None);
    }
    let mut total = num_nodes;
    for t in types {
        let Some(max) = t.options.max_workers else {
            return Err(UsageError::new(format!(
                "worker type {} has no --max-workers, and the cluster no --max-nodes: it could grow without end",
                t.name
            ))
            .hint(format!(
                "give it a most, e.g. `--worker-type '{}: ... --max-workers 4'`, or the cluster one with --max-nodes N",
                t.name
            )));
        };
        total = total.saturating_add(max);
    }
    Ok(Some(total))
}

/// The serving group: serving, released after `idle_timeout` without a job, and growing with
/// `--max-nodes` and the flags that go with it, checked against the cluster's own nodes, and
/// refused without `--max-nodes` (they would do nothing).
fn resolve_serve(
    idle_timeout: Option<u32>,
    args: &ElasticArgs,
    num_nodes: u32,
    nodelist: Option<&str>,
) -> Result<ServeOptions, UsageError> {
    let ElasticArgs {
        max_nodes,
        worker_idle_timeout,
        max_pending_workers,
        replace_failed,
        worker_type,
    } = args;
    let max_nodes =
        max_nodes.map_or_else(|| types_max_nodes(worker_type, num_nodes), |n| Ok(Some(n)))?;
    let Some(max_nodes) = max_nodes else {
        for (flag, given) in [
            ("--worker-idle-timeout", worker_idle_timeout.is_some()),
            ("--max-pending-workers", max_pending_workers.is_some()),
            ("--replace-failed", *replace_failed),
        ] {
            if given {
                return Err(UsageError::new(format!(
                    "{flag} goes with --max-nodes: only an elastic cluster has worker jobs"
                ))
                .hint(format!(
                    "add --max-nodes N (nodes in all, the head's included) to let the cluster grow, or drop {flag}"
                )));
            }
        }
        return Ok(ServeOptions {
            on: true,
            idle_timeout,
            ..ServeOptions::default()
        });
    };
    if max_nodes < num_nodes {
        return Err(UsageError::new(format!(
            "--max-nodes {max_nodes} is less than --num-nodes {num_nodes}"
        ))
        .hint(format!(
            "--max-nodes counts the nodes in all, the head's allocation of {num_nodes} included: give at least {num_nodes}, e.g. `--max-nodes {}`",
            num_nodes.saturating_mul(2)
        )));
    }
    if let Some(list) = nodelist {
        return Err(UsageError::new(format!(
            "--max-nodes does not go with --node {}: each worker job is submitted with the cluster's own sbatch options, so it would ask for the head's nodes again",
            show(list)
        ))
        .hint("choose the nodes with --partition or --constraint instead, or drop --max-nodes for a cluster of fixed nodes"));
    }
    Ok(ServeOptions {
        on: true,
        idle_timeout,
        max_nodes: Some(max_nodes),
        worker_idle_timeout: worker_idle_timeout.unwrap_or(DEFAULT_WORKER_IDLE_TIMEOUT),
        max_pending_workers: max_pending_workers.unwrap_or(DEFAULT_MAX_PENDING_WORKERS),
        replace_failed: *replace_failed,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;

    use super::*;

    /// Resolves `up lab` plus `argv`.
    fn resolve(argv: &[&str]) -> Result<UpSettings, UsageError> {
        let mut full = vec!["rayslurm", "up", "lab"];
        full.extend_from_slice(argv);
        let cli = crate::cli::Cli::try_parse_from(full).expect("parses");
        let src = Sources {
            cwd: PathBuf::from("/work/proj"),
            ..Sources::default()
        };
        match cli.command {
            crate::cli::Command::Up(args) => UpSettings::resolve(&args, &src),
            _ => unreachable!(),
        }
    }

    fn elastic(argv: &[&str]) -> (Option<u32>, u32, u32, bool) {
        let c = resolve(argv).unwrap().config.cluster;
        (
            c.serve.max_nodes,
            c.serve.worker_idle_timeout,
            c.serve.max_pending_workers,
            c.serve.replace_failed,
        )
    }

    #[test]
    fn elastic_flags_resolve_into_the_cluster_options() {
        let (idle, pending) = (DEFAULT_WORKER_IDLE_TIMEOUT, DEFAULT_MAX_PENDING_WORKERS);
        for (argv, want) in [
            (&[][..], (None, idle, pending, false)),
            (&["--max-nodes", "8"], (Some(8), idle, pending, false)),
            (
                &["-n", "4", "--max-nodes", "4"],
                (Some(4), idle, pending, false),
            ),
            (
                &[
                    "--max-nodes",
                    "8",
                    "--worker-idle-timeout",
                    "60",
                    "--max-pending-workers",
                    "1",
                    "--replace-failed",
                ],
                (Some(8), 60, 1, true),
            ),
        ] {
            assert_eq!(elastic(argv), want, "{argv:?}");
        }
    }

    #[test]
    fn launch_never_grows() {
        let cli = crate::cli::Cli::try_parse_from([
            "rayslurm",
            "launch",
            "--exp-name",
            "x",
            "--command",
            "true",
        ])
        .unwrap();
        let crate::cli::Command::Launch(args) = cli.command else {
            unreachable!()
        };
        let c = super::super::launch::resolve(&args, &Sources::default()).unwrap();
        assert_eq!(c.cluster.serve.max_nodes, None);
        assert!(
            crate::cli::Cli::try_parse_from([
                "rayslurm",
                "launch",
                "--exp-name",
                "x",
                "--command",
                "true",
                "--max-nodes",
                "4"
            ])
            .is_err(),
            "launch has no --max-nodes"
        );
    }

    #[test]
    fn elastic_flags_that_cannot_work_are_refused() {
        for (argv, message, hint) in [
            (
                &["-n", "4", "--max-nodes", "2"][..],
                "--max-nodes 2 is less than --num-nodes 4",
                "`--max-nodes 8`",
            ),
            (
                &["--max-nodes", "4", "-w", "node[1-2]"],
                "--max-nodes does not go with --node `node[1-2]`",
                "--constraint",
            ),
            (
                &["--worker-idle-timeout", "60"],
                "--worker-idle-timeout goes with --max-nodes",
                "add --max-nodes N",
            ),
            (
                &["--max-pending-workers", "3"],
                "--max-pending-workers goes with --max-nodes",
                "drop --max-pending-workers",
            ),
            (
                &["--replace-failed"],
                "--replace-failed goes with --max-nodes",
                "add --max-nodes N",
            ),
        ] {
            let err = resolve(argv).unwrap_err();
            assert!(err.message.contains(message), "{argv:?}: {}", err.message);
            let got = err.hint.unwrap_or_default();
            assert!(got.contains(hint), "{argv:?}: {got}");
        }
    }

    #[test]
    fn elastic_counts_are_at_least_one() {
        for flag in [
            "--max-nodes",
            "--max-pending-workers",
            "--worker-idle-timeout",
        ] {
            for bad in ["0", "-1", "x"] {
                let parsed = crate::cli::Cli::try_parse_from(["rayslurm", "up", "lab", flag, bad]);
                assert!(parsed.is_err(), "{flag} {bad}");
            }
        }
    }
}
