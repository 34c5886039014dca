//! `launch`'s arguments resolved into a [`LaunchConfig`]: the job ([`super::job`]), and the
//! cluster built in one piece from its groups, each resolved whole: what runs, the nodes and
//! Ray ([`super::cluster`]), the long run ([`super::long_run`]), the image
//! ([`super::container`]). A run of `launch` never serves jobs nor grows. The destructuring
//! makes a flag that is not resolved here a compile error rather than a silent default.

use std::path::Path;

use crate::cli::{LaunchArgs, LongRunArgs, SnapshotArgs};
use crate::error::UsageError;
use crate::handoff::cluster::{ClusterOptions, ServeOptions};
use crate::launch::config::{LaunchConfig, Sources};
use crate::launch::file_mounts::FileMount;
use crate::launch::git_workdir::GitSource;
use crate::launch::snapshot::SnapshotPlan;
use crate::launch::validate;
use crate::state_dir::state_dir;

/// Resolves every argument of `launch`, with the files' values and the defaults.
pub(crate) fn resolve(args: &LaunchArgs, src: &Sources) -> Result<LaunchConfig, UsageError> {
    let LaunchArgs {
        task,
        exp_name,
        command,
        job,
        dry_run,
        check,
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
                restarts_on_error,
                after,
                singleton,
            },
        array,
        again: _,
        given: _,
        args: words,
    } = args;
    let (exp_name, command) = name_and_command(task.as_deref(), exp_name, command, words)?;
    let command = command.as_str();
    let job = super::job::resolve_job(job, exp_name, command, src)?;
    let shared = super::cluster::resolve(cluster, job.request.num_nodes, src)?;
    let container = super::container::resolve(container, src)?;
    let in_image = container.container_image.is_some();
    let long_run =
        super::long_run::resolve((*signal, *requeue, *max_requeues, *restarts_on_error), src)?;
    super::job::check_stop_grace(&shared.nodes, job.request.time.as_deref())?;
    let cluster = ClusterOptions {
        program: shared.program,
        nodes: shared.nodes,
        ray: shared.ray,
        long_run,
        serve: ServeOptions::default(),
        container,
    };
    if let Some(a) = after
        && a.trim().is_empty()
    {
        return Err(UsageError::new("--after is empty")
            .hint("name the run to follow: its experiment name or job id"));
    }
    let mut job = job;
    job.request.array = super::array::resolve(array.as_deref(), &cluster, after, *follow)?;
    Ok(LaunchConfig {
        job: job.request,
        log_dir: job.log_dir,
        log_dir_is_default: job.log_dir_is_default,
        template: job.template,
        dry_run: *dry_run || *check,
        check: *check,
        json: *json,
        follow: *follow,
        cancel_on_interrupt: *cancel_on_interrupt,
        cluster,
        after: after.clone(),
        singleton: *singleton,
        link: None,
        snapshot: resolve_snapshot(snapshot, &src.cwd, in_image)?,
        worker_types: Vec::new(),
    })
}

/// The experiment name and the command (`--command`, or the words after `--`), checked; a
/// missing one says where it could come from (a task file's `name:` and `run:`).
fn name_and_command<'a>(
    task: Option<&Path>,
    exp_name: &'a Option<String>,
    command: &Option<String>,
    words: &[String],
) -> Result<(&'a str, String), UsageError> {
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
    let command = match command {
        None if !words.is_empty() => super::exec::command_of(None, words)?,
        _ => command.clone().ok_or_else(|| match task {
            // SkyPilot starts a cluster for a file with nothing to run, and keeps it.
            Some(t) => UsageError::new(format!(
                "`{}` has nothing to run (no `run:` or `setup:`): SkyPilot would start a cluster of it and keep it",
                t.display()
            ))
            .hint(format!(
                "here that is `rayslurm up NAME {}` (its `autostop` the cluster's idle timeout), then `rayslurm exec NAME -- COMMAND`; or give the file a `run:`",
                t.display()
            )),
            None => from_file("--command"),
        })?,
    };
    validate::exp_name(exp_name)?;
    if command.trim().is_empty() {
        return Err(UsageError::new("--command is empty").hint(
            "give the command to run on the head node, e.g. `--command \"python train.py\"`",
        ));
    }
    Ok((exp_name, command))
}

/// `--snapshot`, `--workdir`, `--snapshot-max-size` and `--empty-workdir`: the snapshot asked
/// for, if any (`--empty-workdir`'s holds nothing). A relative workdir is taken from the
/// current directory.
fn resolve_snapshot(
    args: &SnapshotArgs,
    cwd: &Path,
    in_image: bool,
) -> Result<Option<SnapshotPlan>, UsageError> {
    let SnapshotArgs {
        snapshot,
        workdir,
        snapshot_max_size,
        empty_workdir,
        git_workdir,
        git_ref,
        file_mount,
        storage,
    } = args;
    let mut file_mounts = file_mount
        .iter()
        .map(|m| FileMount::parse(m, cwd, in_image))
        .collect::<Result<Vec<_>, _>>()?;
    if !storage.is_empty() {
        let root = crate::launch::storage::root(&state_dir(|k| std::env::var_os(k))?);
        for s in storage {
            file_mounts.push(crate::launch::storage::parse(s, &root, in_image)?);
        }
    }
    let plan = if let Some(url) = git_workdir {
        Some(SnapshotPlan {
            git: Some(GitSource {
                url: url.clone(),
                reference: git_ref.clone(),
            }),
            max_size: SnapshotPlan::max_size(snapshot_max_size.as_deref())?,
            ..SnapshotPlan::default()
        })
    } else if *empty_workdir {
        Some(SnapshotPlan {
            max_size: SnapshotPlan::max_size(snapshot_max_size.as_deref())?,
            ..SnapshotPlan::default()
        })
    } else {
        SnapshotPlan::resolve(
            *snapshot,
            workdir.as_deref(),
            snapshot_max_size.as_deref(),
            cwd,
        )?
    };
    // File mounts come with a snapshot: without one asked for, the empty one's.
    Ok(match plan {
        Some(plan) => Some(SnapshotPlan {
            file_mounts,
            ..plan
        }),
        None if file_mounts.is_empty() => None,
        None => Some(SnapshotPlan {
            file_mounts,
            max_size: SnapshotPlan::max_size(snapshot_max_size.as_deref())?,
            ..SnapshotPlan::default()
        }),
    })
}

#[cfg(test)]
mod tests {
    // `launch`'s resolution as a table: arguments (and config files) in, the expected
    // [`LaunchConfig`] out.

    use std::path::PathBuf;

    use clap::Parser;

    use super::*;
    use crate::handoff::cluster::{DEFAULT_READY_TIMEOUT, IpFamily};
    use crate::launch::config::EnvVar;
    use crate::launch::gpu_directive::GpuDirective;

    /// Resolves `launch --exp-name x --command "python f.py"` plus `argv`.
    fn resolve(argv: &[&str], src: &Sources) -> Result<LaunchConfig, UsageError> {
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
            crate::cli::Command::Launch(args) => super::resolve(&args, src),
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
        assert_eq!(c.log_dir, PathBuf::from("/work/proj/rayslurm-logs"));
        assert!(c.log_dir_is_default);
        assert_eq!(j.partition, None);
        assert_eq!(c.cluster.nodes.ready_timeout, DEFAULT_READY_TIMEOUT);
        assert_eq!(c.cluster.nodes.ip_family, IpFamily::Auto);
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
                value: "1".into(),
                secret: false,
            }]
        );
        assert_eq!(c.log_dir, PathBuf::from("/work/proj/logs"));
        assert!(!c.log_dir_is_default);
        assert_eq!(c.cluster.nodes.interface.as_deref(), Some("ib0"));
        assert_eq!(c.cluster.nodes.ip_family, IpFamily::V6);
        assert_eq!(c.cluster.nodes.min_nodes, Some(2));
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

    #[test]
    fn the_setup_timeout_comes_from_the_flag_or_the_files_and_only_with_a_setup() {
        let mut s = src();
        s.user.setup_timeout = Some(600);
        let timeout =
            |argv: &[&str], s: &Sources| resolve(argv, s).unwrap().cluster.program.setup_timeout;
        assert_eq!(timeout(&[], &s), None);
        let with_setup = ["--setup", "make"];
        assert_eq!(timeout(&with_setup, &s), Some(600));
        s.project.setup_timeout = Some(60);
        assert_eq!(timeout(&with_setup, &s), Some(60));
        let cli = ["--setup", "make", "--setup-timeout", "5"];
        assert_eq!(
            resolve(&cli, &s).unwrap().cluster.program.setup_timeout,
            Some(5)
        );
    }

    /// A project directory with a `code` directory in it, and the sources of a launch there.
    fn project_with_code() -> (tempfile::TempDir, Sources) {
        let here = tempfile::tempdir().unwrap();
        std::fs::create_dir(here.path().join("code")).unwrap();
        let s = Sources {
            cwd: here.path().to_owned(),
            ..Sources::default()
        };
        (here, s)
    }

    #[test]
    fn a_snapshot_is_of_the_current_directory_unless_workdir_names_another() {
        let (here, s) = project_with_code();
        assert_eq!(resolve(&[], &s).unwrap().snapshot, None);
        let plan = resolve(&["--snapshot"], &s).unwrap().snapshot.unwrap();
        assert_eq!(plan.workdir.as_deref(), Some(here.path()));
        assert_eq!(plan.max_size, 1 << 30);
        let plan = resolve(&["--workdir", "code", "--snapshot-max-size", "2G"], &s)
            .unwrap()
            .snapshot
            .unwrap();
        assert_eq!(plan.workdir, Some(here.path().join("code")));
        assert_eq!(plan.max_size, 2 << 30);
    }

    /// A task file's `--empty-workdir` comes before the flags typed: the last of it, `--snapshot`
    /// and `--workdir` wins.
    #[test]
    fn an_empty_workdir_copies_nothing_and_the_last_of_the_workdir_flags_wins() {
        let (here, s) = project_with_code();
        let workdir = |args: &[&str]| resolve(args, &s).unwrap().snapshot.map(|p| p.workdir);
        assert_eq!(workdir(&["--empty-workdir"]), Some(None));
        assert_eq!(
            workdir(&["--empty-workdir", "--workdir", "code"]),
            Some(Some(here.path().join("code")))
        );
        assert_eq!(
            workdir(&["--empty-workdir", "--snapshot"]),
            Some(Some(here.path().to_owned()))
        );
        assert_eq!(
            workdir(&["--workdir", "code", "--empty-workdir"]),
            Some(None)
        );
        assert_eq!(workdir(&["--snapshot", "--empty-workdir"]), Some(None));
    }

    /// `--min-nodes` may be every node of `--num-nodes` (the head counts too): only more is
    /// refused.
    #[test]
    fn min_nodes_may_be_every_node() {
        let c = resolve(&["-n", "2", "--min-nodes", "2"], &src()).unwrap();
        assert_eq!(c.cluster.nodes.min_nodes, Some(2));
    }
}
