//! The hidden `rayslurm bootstrap` command line: written into the sbatch script by `launch`
//! (the head's) and by the head into its `srun` step (the workers'), parsed by clap on the
//! nodes. [`BootstrapArgs::to_flags`] is the one serializer of both.
//!
//! It derives clap, the one layer below `commands/` that does: these flags are the wire format
//! between the script and the nodes, not the user's command line, so they stay here with their
//! serializer (`cli` only names the hidden command).

use std::path::PathBuf;

use clap::Args;

use super::cluster::ClusterOptions;
use super::pyxis_name::PyxisName;
use super::run_files::RunFiles;

/// Arguments of the bootstrap, head or worker.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct BootstrapArgs {
    /// The user command, run through bash on the head node.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) command: Option<String>,

    /// Run as a worker node (started by the head's srun step).
    #[arg(long)]
    pub(crate) worker: bool,

    /// Watch the head's bootstrap (whose end of a pipe is stdin) and stop the run if it dies.
    #[arg(long)]
    pub(crate) watchdog: bool,

    /// The head's GCS address, for workers.
    #[arg(long)]
    pub(crate) head_address: Option<String>,

    /// The port on the head that frameworks rendezvous on (`MASTER_PORT`), for workers.
    #[arg(long)]
    pub(crate) master_port: Option<u16>,

    /// Marks the processes of this run (workers get the head's).
    #[arg(long)]
    pub(crate) run_mark: Option<String>,

    /// GPUs per node asked for at launch (used when Slurm does not say).
    #[arg(long, default_value_t = 0)]
    pub(crate) requested_gpus: u32,

    /// Where to write the run's final state (JSON).
    #[arg(long)]
    pub(crate) state_file: Option<PathBuf>,

    /// The run's private directory (mode 0700) on the shared filesystem: its Ray token.
    #[arg(long)]
    pub(crate) run_dir: Option<PathBuf>,

    /// The run's snapshot of its workdir (`--snapshot`): each node works in its own copy.
    #[arg(long)]
    pub(crate) snapshot: Option<PathBuf>,

    /// The snapshot holds only the run's file mounts (`up --file-mount`): each node places
    /// them and works where it was started, in no copy of its own.
    #[arg(long, requires = "snapshot")]
    pub(crate) file_mounts_only: bool,

    /// The state file and run directory given are an array's: this task's own are named from
    /// them and `SLURM_ARRAY_TASK_ID` ([`BootstrapArgs::of_array_task`]).
    #[arg(long)]
    pub(crate) array_task: bool,

    /// Where each node copies Ray's logs if the run fails (default: beside the state file).
    #[arg(long)]
    pub(crate) ray_logs_dir: Option<PathBuf>,

    /// Owner ids the user accepts as their own on a filesystem that cannot show owners
    /// (`RAYSLURM_TRUST_UNVERIFIED_OWNER` at launch), comma-separated.
    #[arg(long)]
    pub(crate) trust_unverified_owner: Option<String>,

    /// The run's pyxis container on every node of this attempt, named by the head.
    #[arg(long)]
    pub(crate) pyxis_container: Option<PyxisName>,

    #[command(flatten)]
    pub(crate) cluster: ClusterOptions,
}

impl BootstrapArgs {
    /// The head's arguments, as `launch` writes them into the script (the command apart).
    pub(crate) fn head(
        state_file: PathBuf,
        run_dir: PathBuf,
        requested_gpus: u32,
        cluster: ClusterOptions,
    ) -> Self {
        Self {
            command: None,
            worker: false,
            watchdog: false,
            head_address: None,
            master_port: None,
            run_mark: None,
            requested_gpus,
            state_file: Some(state_file),
            run_dir: Some(run_dir),
            snapshot: None,
            file_mounts_only: false,
            array_task: false,
            ray_logs_dir: None,
            trust_unverified_owner: None,
            pyxis_container: None,
            cluster,
        }
    }

    /// An array task's arguments: the array's state file and run directory replaced by the
    /// task's own (`task`: Slurm's `SLURM_ARRAY_TASK_ID`), so that each task is a run of its
    /// own; the same arguments where they are not an array's.
    pub(crate) fn of_array_task(&self, task: Option<&str>) -> Result<Self, String> {
        if !self.array_task {
            return Ok(self.clone());
        }
        let task = task.ok_or(
            "SLURM_ARRAY_TASK_ID is not set, yet the script was written for a job array (--array)",
        )?;
        let id: u32 = task
            .parse()
            .map_err(|_| format!("SLURM_ARRAY_TASK_ID `{task}` is not a task id"))?;
        let files = self
            .state_file
            .as_deref()
            .and_then(RunFiles::from_state_file)
            .and_then(|f| f.of_task(id))
            .ok_or("an array's script names no state file to name its tasks' files from")?;
        Ok(Self {
            array_task: false,
            state_file: Some(files.state),
            run_dir: Some(files.dir),
            ..self.clone()
        })
    }

    /// The whole command line after `bootstrap`, one word a flag (`--flag=value`), the command
    /// last: what the head gives the nodes' bootstrap through `srun`.
    pub(crate) fn to_words(&self) -> Vec<String> {
        let mut words = super::cluster::joined_words(self.to_flags());
        if let Some(command) = &self.command {
            words.push(format!("--command={command}"));
        }
        words
    }

    /// The flags that carry these arguments, as `(flag, value)`; `None` for a bare switch.
    /// The command comes last and apart, since templates place it themselves.
    pub(crate) fn to_flags(&self) -> Vec<(&'static str, Option<String>)> {
        let Self {
            command: _,
            worker,
            watchdog,
            head_address,
            master_port,
            run_mark,
            requested_gpus,
            state_file,
            run_dir,
            snapshot,
            file_mounts_only,
            array_task,
            ray_logs_dir,
            trust_unverified_owner,
            pyxis_container,
            cluster,
        } = self;
        let mut flags = Vec::new();
        if *worker {
            flags.push(("--worker", None));
        }
        if *watchdog {
            flags.push(("--watchdog", None));
        }
        if *array_task {
            flags.push(("--array-task", None));
        }
        if *file_mounts_only {
            flags.push(("--file-mounts-only", None));
        }
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let optional = [
            ("--head-address", head_address.clone()),
            ("--master-port", master_port.map(|p| p.to_string())),
            ("--run-mark", run_mark.clone()),
            ("--state-file", path(state_file)),
            ("--run-dir", path(run_dir)),
            ("--snapshot", path(snapshot)),
            ("--ray-logs-dir", path(ray_logs_dir)),
            ("--trust-unverified-owner", trust_unverified_owner.clone()),
            (
                "--pyxis-container",
                pyxis_container.as_ref().map(PyxisName::to_string),
            ),
            (
                "--requested-gpus",
                (*requested_gpus > 0).then(|| requested_gpus.to_string()),
            ),
        ];
        flags.extend(
            optional
                .into_iter()
                .filter_map(|(flag, value)| value.map(|v| (flag, Some(v)))),
        );
        flags.extend(cluster.to_flags());
        flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::cluster::IpFamily;
    use clap::Parser;

    #[derive(Parser)]
    struct Parse {
        #[command(flatten)]
        args: BootstrapArgs,
    }

    #[test]
    fn flags_round_trip() {
        let worker = BootstrapArgs {
            command: None,
            worker: true,
            watchdog: true,
            head_address: Some("[fd00::1]:12000".into()),
            master_port: Some(12009),
            run_mark: Some("42-7".into()),
            requested_gpus: 2,
            state_file: None,
            run_dir: Some("/shared/x.d".into()),
            snapshot: Some("/shared/x.d/snapshot".into()),
            file_mounts_only: true,
            array_task: true,
            ray_logs_dir: Some("/shared/x.ray-logs".into()),
            trust_unverified_owner: Some("65534".into()),
            pyxis_container: Some(PyxisName::new("42", 0, "00ff")),
            cluster: {
                let mut cluster = ClusterOptions::default();
                cluster.nodes.ip_family = IpFamily::V4;
                cluster.ray.ray_args = Some("--x=1".into());
                cluster
            },
        };
        let head = BootstrapArgs::head(
            "/shared/x.state.json".into(),
            "/shared/x.d".into(),
            0,
            ClusterOptions::default(),
        );
        let task = BootstrapArgs {
            command: Some("echo '$RANK' --x".into()),
            ..worker.clone()
        };
        for args in [worker, head, task] {
            let argv = std::iter::once("x".to_owned()).chain(args.to_words());
            assert_eq!(Parse::try_parse_from(argv).expect("parses").args, args);
        }
    }

    #[test]
    fn an_array_task_runs_with_its_own_state_file_and_run_directory() {
        let array = BootstrapArgs {
            array_task: true,
            ..BootstrapArgs::head(
                "/shared/x_1122-093005.state.json".into(),
                "/shared/x_1122-093005.d".into(),
                0,
                ClusterOptions::default(),
            )
        };
        let task = array.of_array_task(Some("3")).unwrap();
        assert_eq!(
            (
                task.state_file.unwrap(),
                task.run_dir.unwrap(),
                task.array_task
            ),
            (
                PathBuf::from("/shared/x_1122-093005_3.state.json"),
                PathBuf::from("/shared/x_1122-093005_3.d"),
                false
            )
        );
        let err = array.of_array_task(None).unwrap_err();
        assert!(err.contains("SLURM_ARRAY_TASK_ID is not set"), "{err}");
        assert!(array.of_array_task(Some("3;rm")).is_err());
        let single = BootstrapArgs {
            array_task: false,
            ..array.clone()
        };
        assert_eq!(single.of_array_task(Some("3")).unwrap(), single);
    }
}
