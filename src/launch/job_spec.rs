//! The job as Slurm will see it: `#SBATCH` directives and the documented template context.
//!
//! A user's own template (`--template`) gets exactly this context; README.md lists its keys.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::cluster::ClusterOptions;
use crate::handoff::run_files::RunFiles;
use crate::handoff::signal_name::{SignalName, TIME_WARNING};
use crate::launch::config::{JobRequest, LaunchConfig, Link};
#[cfg(test)]
use crate::launch::gpu_directive::GpuDirective;
use crate::launch::gpu_directive::{self, GpuRequest};

#[derive(Debug, Serialize)]
pub(crate) struct BootstrapArg {
    pub(crate) flag: String,
    pub(crate) value: Option<String>,
}

/// The template context: the job as resolved ([`JobRequest`]'s keys, flattened in), the
/// `#SBATCH` directives built from it, the run's files and the bootstrap's command line.
#[derive(Debug, Serialize)]
pub(crate) struct JobSpec<'a> {
    pub(crate) version: &'static str,
    pub(crate) created: String,
    #[serde(flatten)]
    pub(crate) job: &'a JobRequest,
    /// Every `#SBATCH` option, in order, built from the job's fields.
    pub(crate) directives: Vec<String>,
    pub(crate) script_path: String,
    pub(crate) log_path: String,
    /// Where the log is linked from for the user (`--log-dir`), or empty.
    pub(crate) log_link: String,
    pub(crate) state_path: String,
    pub(crate) rayslurm_bin: String,
    pub(crate) bootstrap_args: Vec<BootstrapArg>,
}

impl<'a> JobSpec<'a> {
    pub(crate) fn new(
        config: &'a LaunchConfig,
        files: &RunFiles,
        rayslurm_bin: &Path,
        created: String,
        link: &Link,
    ) -> Self {
        let job = &config.job;
        let cluster = with_image_binds(config, files);
        let accepted = crate::sys::private_tree::accepted_owners();
        let bootstrap_args = BootstrapArgs {
            trust_unverified_owner: (!accepted.is_empty()).then(|| {
                accepted
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            }),
            snapshot: config.snapshot.as_ref().map(|_| snapshot_dir(files)),
            file_mounts_only: config.snapshot.as_ref().is_some_and(|p| p.mounts_only),
            array_task: job.array.is_some(),
            ..BootstrapArgs::head(
                files.state.clone(),
                link.run_dir.clone().unwrap_or_else(|| files.dir.clone()),
                job.num_gpus,
                cluster.clone(),
            )
        }
        .to_flags()
        .into_iter()
        .map(|(flag, value)| BootstrapArg {
            flag: flag.to_owned(),
            value,
        })
        .collect();
        // An array's tasks each write a log of their own (`%a`: the task id).
        let log = match &job.array {
            Some(_) => files
                .task_log_pattern()
                .unwrap_or_else(|| files.log.clone()),
            None => files.log.clone(),
        };
        Self {
            version: env!("CARGO_PKG_VERSION"),
            created,
            job,
            directives: directives(job, &log, &cluster, link),
            script_path: files.script.display().to_string(),
            log_path: log.display().to_string(),
            log_link: log
                .file_name()
                .map(|name| config.log_dir.join(name).display().to_string())
                .unwrap_or_default(),
            state_path: files.state.display().to_string(),
            rayslurm_bin: rayslurm_bin.display().to_string(),
            bootstrap_args,
        }
    }
}

/// The run's cluster options with its file mounts that go into the image bound there
/// (`--container-mounts`), each from its copy beside the snapshot.
fn with_image_binds(config: &LaunchConfig, files: &RunFiles) -> ClusterOptions {
    let mut cluster = config.cluster.clone();
    if let Some(plan) = &config.snapshot {
        let binds =
            crate::launch::file_mounts::image_binds(&plan.file_mounts, &snapshot_dir(files));
        cluster.container.container_mounts.extend(binds);
    }
    cluster
}

/// Where a run's snapshot of its workdir is kept: in its own private directory (its own even
/// when it follows another run's with `--after`).
pub(crate) fn snapshot_dir(files: &RunFiles) -> PathBuf {
    files.dir.join("snapshot")
}

/// The `#SBATCH` options of a job, in order.
fn directives(job: &JobRequest, log: &Path, cluster: &ClusterOptions, link: &Link) -> Vec<String> {
    let mut d = vec![
        format!("--job-name={}", job.exp_name),
        format!("--output={}", log.display()),
        // A requeued or restarted job adds to its log instead of wiping it.
        "--open-mode=append".to_owned(),
        format!("--nodes={}", job.num_nodes),
        format!("--ntasks-per-node={}", job.tasks_per_node),
    ];
    let optional = [
        ("--cpus-per-task", job.cpus_per_task.map(|c| c.to_string())),
        ("--mem", job.mem.clone()),
        ("--mem-per-cpu", job.mem_per_cpu.clone()),
        ("--time", job.time.clone()),
        ("--partition", job.partition.clone()),
        ("--account", job.account.clone()),
        ("--qos", job.qos.clone()),
        ("--constraint", job.constraint.clone()),
        ("--nodelist", job.nodelist.clone()),
    ];
    d.extend(
        optional
            .into_iter()
            .filter_map(|(flag, v)| v.map(|v| format!("{flag}={v}"))),
    );
    if job.exclusive {
        d.push("--exclusive".to_owned());
    }
    let gpus = GpuRequest {
        kind: job.gpu_type.clone(),
        per_node: job.num_gpus,
    };
    d.extend(gpu_directive::directive(
        job.gpu_directive,
        &gpus,
        job.tasks_per_node,
    ));
    if cluster.nodes.stop_grace > 0 {
        // Slurm's warning before the time limit, to the bootstrap alone and in a signal of its
        // own (never taken for scancel's SIGTERM); the command then gets `--signal`.
        d.push(format!(
            "--signal=B:{}@{}",
            SignalName(TIME_WARNING).short(),
            cluster.nodes.stop_grace
        ));
    }
    if cluster.long_run.requeue || cluster.long_run.restarts_on_error > 0 {
        d.push("--requeue".to_owned());
    }
    if let Some(array) = &job.array {
        d.push(array.directive());
    }
    if let Some(dependency) = &link.dependency {
        d.push(format!("--dependency={dependency}"));
    }
    d.extend(job.sbatch_args.iter().map(|a| sbatch_arg_line(a)));
    d
}

/// An `--sbatch-arg` as written after `#SBATCH`: a value with white space in double quotes.
pub(crate) fn sbatch_arg_line(value: &str) -> String {
    match value.split_once('=') {
        Some((k, v)) if v.chars().any(char::is_whitespace) => format!("{k}=\"{v}\""),
        _ => value.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::config::EnvVar;

    /// `launch --exp-name x --command "python f.py" -n 2 --num-gpus 1 --mem 4G --env A=1
    /// --load-env "source venv/bin/activate" --sbatch-arg="--comment=two words" -p gpu`, resolved
    /// in /work/proj.
    fn config() -> LaunchConfig {
        let job = JobRequest {
            exp_name: "x".into(),
            command: "python f.py".into(),
            load_env: Some("source venv/bin/activate".into()),
            env: vec![EnvVar {
                key: "A".into(),
                value: "1".into(),
                secret: false,
            }],
            num_nodes: 2,
            tasks_per_node: 1,
            cpus_per_task: None,
            num_gpus: 1,
            gpu_type: None,
            gpu_directive: GpuDirective::GpusPerTask,
            gpu_naming: None,
            partition: Some("gpu".into()),
            account: None,
            qos: None,
            constraint: None,
            nodelist: None,
            time: None,
            mem: Some("4G".into()),
            mem_per_cpu: None,
            exclusive: true,
            sbatch_args: vec!["--comment=two words".into()],
            array: None,
        };
        LaunchConfig {
            job,
            log_dir: "/work/proj".into(),
            log_dir_is_default: false,
            template: None,
            dry_run: false,
            check: false,
            json: false,
            follow: false,
            cancel_on_interrupt: false,
            cluster: ClusterOptions::default(),
            after: None,
            singleton: false,
            link: None,
            snapshot: None,
            worker_types: Vec::new(),
        }
    }

    /// The context users' templates get (README, "Custom templates"): any change to a key is
    /// reviewed here.
    #[test]
    fn the_template_context_keys_stay_as_documented() {
        let config = config();
        let files = RunFiles::for_stem(Path::new("/logs"), "x_1122-093005");
        let spec = JobSpec::new(
            &config,
            &files,
            Path::new("/logs/.rayslurm/bin/rayslurm-0"),
            "2026-11-22T09:30:05+00:00".into(),
            &Link::default(),
        );
        let json = serde_json::to_string_pretty(&spec)
            .unwrap()
            .replace(env!("CARGO_PKG_VERSION"), "[VERSION]");
        insta::assert_snapshot!(json);
    }

    /// An array's script: `--array` as given, one log a task (`%a`), and a bootstrap told to
    /// name its task's files.
    #[test]
    fn an_array_writes_one_log_a_task_and_tells_the_bootstrap() {
        let mut config = config();
        config.job.array = Some(crate::launch::array_spec::ArraySpec::parse("0-3%2").unwrap());
        let files = RunFiles::for_stem(Path::new("/logs"), "x_1122-093005");
        let spec = JobSpec::new(
            &config,
            &files,
            Path::new("/b"),
            String::new(),
            &Link::default(),
        );
        assert!(spec.directives.contains(&"--array=0-3%2".to_owned()));
        assert!(
            spec.directives
                .contains(&"--output=/logs/x_1122-093005_%a.log".to_owned()),
            "{:?}",
            spec.directives
        );
        assert_eq!(spec.log_path, "/logs/x_1122-093005_%a.log");
        assert!(spec.bootstrap_args.iter().any(|a| a.flag == "--array-task"));
        config.job.array = None;
        let single = JobSpec::new(
            &config,
            &files,
            Path::new("/b"),
            String::new(),
            &Link::default(),
        );
        assert!(!single.directives.iter().any(|d| d.starts_with("--array")));
        assert!(
            !single
                .bootstrap_args
                .iter()
                .any(|a| a.flag == "--array-task")
        );
    }

    #[test]
    fn sbatch_arg_values_with_white_space_are_quoted() {
        assert_eq!(
            sbatch_arg_line("--comment=two words"),
            "--comment=\"two words\""
        );
        assert_eq!(sbatch_arg_line("--mail-type=END"), "--mail-type=END");
    }
}
