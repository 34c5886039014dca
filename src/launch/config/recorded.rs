//! A launch's settings as its run's record keeps them: what `launch --again` renders the new
//! run from. Everything a launch read outside the private tree (a template file, the project
//! file, `--env-file`) is kept here as it was read, so running a run again reads none of it,
//! nor the old script.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Link;
use super::{JobRequest, LaunchConfig};
use crate::handoff::cluster::{ClusterOptions, joined_words};
use crate::launch::snapshot::SnapshotPlan;
use crate::launch::template::UserTemplate;

/// A launch, resolved, as its record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RecordedLaunch {
    /// What the job asks of Slurm and runs (the `--env` and `--env-file` values among it).
    pub(crate) job: JobRequest,
    /// The cluster's options as the bootstrap's flags: their one serializer, read back by the
    /// one parser ([`ClusterOptions::from_words`]).
    pub(crate) cluster: Vec<String>,
    /// A template of the user's own, with the text that was rendered; none for the built-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) template: Option<UserTemplate>,
    /// Slurm's `--dependency` as submitted (`afterany:ID`, `singleton`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dependency: Option<String>,
    /// The workdir copied at submission (`--snapshot`, `--empty-workdir`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) snapshot: Option<SnapshotPlan>,
}

impl RecordedLaunch {
    pub(crate) fn of(config: &LaunchConfig, link: &Link) -> Self {
        Self {
            job: config.job.clone(),
            cluster: joined_words(config.cluster.to_flags()),
            template: config.template.clone(),
            dependency: link.dependency.clone(),
            snapshot: config.snapshot.clone(),
        }
    }

    /// The launch these settings make, with the new run's own choices (`again`: where its
    /// log's link goes, dry run, ...) and the private directory it takes over, if any.
    pub(crate) fn config(
        &self,
        again: AgainChoices,
        run_dir: Option<PathBuf>,
    ) -> Result<LaunchConfig, String> {
        let AgainChoices {
            log_dir,
            log_dir_is_default,
            dry_run,
            check,
            json,
            follow,
            cancel_on_interrupt,
        } = again;
        Ok(LaunchConfig {
            job: self.job.clone(),
            log_dir,
            log_dir_is_default,
            template: self.template.clone(),
            dry_run,
            check,
            json,
            follow,
            cancel_on_interrupt,
            cluster: ClusterOptions::from_words(&self.cluster)?,
            after: None,
            singleton: false,
            link: Some(Link {
                dependency: self.dependency.clone(),
                run_dir,
            }),
            snapshot: self.snapshot.clone(),
            worker_types: Vec::new(),
        })
    }
}

/// What a run made again chooses for itself: the options that go with `--again`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgainChoices {
    pub(crate) log_dir: PathBuf,
    pub(crate) log_dir_is_default: bool,
    pub(crate) dry_run: bool,
    /// `--check`: a dry run whose refusal by Slurm (or no answer) is an error.
    pub(crate) check: bool,
    pub(crate) json: bool,
    pub(crate) follow: bool,
    pub(crate) cancel_on_interrupt: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::gpu_directive::GpuDirective;

    /// A launch kept in a record and read back is the launch that was submitted, but for the
    /// new run's own choices and its place among runs.
    #[test]
    fn a_launch_read_back_from_its_record_is_the_launch() {
        let config = LaunchConfig {
            job: JobRequest {
                exp_name: "x".into(),
                command: "python 'a b'.py".into(),
                load_env: Some("module load cuda".into()),
                env: vec![super::super::EnvVar {
                    key: "K".into(),
                    value: "v 1".into(),
                    secret: false,
                }],
                num_nodes: 3,
                tasks_per_node: 2,
                cpus_per_task: Some(4),
                num_gpus: 2,
                gpu_type: Some("a100".into()),
                gpu_directive: GpuDirective::Gres,
                gpu_naming: None,
                partition: Some("gpu".into()),
                account: None,
                qos: None,
                constraint: None,
                nodelist: None,
                time: Some("1:00:00".into()),
                mem: Some("4G".into()),
                mem_per_cpu: None,
                exclusive: false,
                sbatch_args: vec!["--comment=two words".into()],
                array: None,
            },
            log_dir: "/w/logs".into(),
            log_dir_is_default: false,
            template: Some(UserTemplate {
                path: "/w/t.tera".into(),
                text: "{{ command }}\n".into(),
            }),
            dry_run: true,
            check: false,
            json: true,
            follow: false,
            cancel_on_interrupt: true,
            cluster: {
                let mut cluster = ClusterOptions::default();
                cluster.program.setup = Some("pip install -e .".into());
                cluster.long_run.requeue = true;
                cluster.ray.ray_args = Some("--num-cpus=1 'a b'".into());
                cluster.container.container_image = Some("/images/a b.sqsh".into());
                cluster
            },
            after: None,
            singleton: false,
            link: Some(Link {
                dependency: Some("afterany:7".into()),
                run_dir: Some("/s/jobs/x.d".into()),
            }),
            snapshot: Some(SnapshotPlan {
                workdir: Some("/w".into()),
                max_size: 1 << 20,
                ..SnapshotPlan::default()
            }),
            worker_types: Vec::new(),
        };
        let kept = RecordedLaunch::of(&config, config.link.as_ref().unwrap());
        let read: RecordedLaunch =
            serde_json::from_str(&serde_json::to_string(&kept).unwrap()).unwrap();
        let again = AgainChoices {
            log_dir: config.log_dir.clone(),
            log_dir_is_default: false,
            dry_run: true,
            check: false,
            json: true,
            follow: false,
            cancel_on_interrupt: true,
        };
        let back = read.config(again, Some("/s/jobs/x.d".into())).unwrap();
        assert_eq!(back, config);
    }
}
