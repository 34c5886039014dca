//! The job as Slurm will see it: `#SBATCH` directives and the documented template context.
//!
//! A user's own template (`--template`) gets exactly this context; README.md lists its keys.

use std::path::Path;

use serde::Serialize;

use crate::cli::GpuDirective;
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::run_files::RunFiles;
use crate::launch::config::{LaunchConfig, Memory};

#[derive(Debug, Serialize)]
pub(crate) struct EnvVar {
    pub(crate) key: String,
    pub(crate) value: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct BootstrapArg {
    pub(crate) flag: String,
    pub(crate) value: Option<String>,
}

/// The template context.
#[derive(Debug, Serialize)]
pub(crate) struct JobSpec {
    pub(crate) version: &'static str,
    pub(crate) created: String,
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
    pub(crate) mem: Option<String>,
    pub(crate) mem_per_cpu: Option<String>,
    pub(crate) exclusive: bool,
    pub(crate) sbatch_args: Vec<String>,
    /// Every `#SBATCH` option, in order, built from the fields above.
    pub(crate) directives: Vec<String>,
    pub(crate) script_path: String,
    pub(crate) log_path: String,
    pub(crate) state_path: String,
    pub(crate) rayslurm_bin: String,
    pub(crate) bootstrap_args: Vec<BootstrapArg>,
}

impl JobSpec {
    pub(crate) fn new(
        config: &LaunchConfig,
        files: &RunFiles,
        rayslurm_bin: &Path,
        created: String,
    ) -> Self {
        let (mem, mem_per_cpu) = match &config.memory {
            Some(Memory::PerNode(m)) => (Some(m.clone()), None),
            Some(Memory::PerCpu(m)) => (None, Some(m.clone())),
            None => (None, None),
        };
        let bootstrap_args =
            BootstrapArgs::head(files.state.clone(), config.num_gpus, config.cluster.clone())
                .to_flags()
                .into_iter()
                .map(|(flag, value)| BootstrapArg {
                    flag: flag.to_owned(),
                    value,
                })
                .collect();
        let mut spec = Self {
            version: env!("CARGO_PKG_VERSION"),
            created,
            exp_name: config.exp_name.clone(),
            command: config.command.clone(),
            load_env: config.load_env.clone(),
            env: config
                .env
                .iter()
                .map(|(key, value)| EnvVar {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect(),
            num_nodes: config.num_nodes,
            tasks_per_node: config.tasks_per_node,
            cpus_per_task: config.cpus_per_task,
            num_gpus: config.num_gpus,
            gpu_directive: config.gpu_directive,
            partition: config.partition.clone(),
            account: config.account.clone(),
            qos: config.qos.clone(),
            constraint: config.constraint.clone(),
            nodelist: config.nodelist.clone(),
            time: config.time.clone(),
            mem,
            mem_per_cpu,
            exclusive: config.exclusive,
            sbatch_args: config.sbatch_args.clone(),
            directives: Vec::new(),
            script_path: files.script.display().to_string(),
            log_path: files.log.display().to_string(),
            state_path: files.state.display().to_string(),
            rayslurm_bin: rayslurm_bin.display().to_string(),
            bootstrap_args,
        };
        spec.directives = spec.build_directives(config.cluster.stop_grace);
        spec
    }

    fn build_directives(&self, stop_grace: u32) -> Vec<String> {
        let mut d = vec![
            format!("--job-name={}", self.exp_name),
            format!("--output={}", self.log_path),
            // A requeued or restarted job adds to its log instead of wiping it.
            "--open-mode=append".to_owned(),
            format!("--nodes={}", self.num_nodes),
            format!("--ntasks-per-node={}", self.tasks_per_node),
        ];
        let optional = [
            ("--cpus-per-task", self.cpus_per_task.map(|c| c.to_string())),
            ("--mem", self.mem.clone()),
            ("--mem-per-cpu", self.mem_per_cpu.clone()),
            ("--time", self.time.clone()),
            ("--partition", self.partition.clone()),
            ("--account", self.account.clone()),
            ("--qos", self.qos.clone()),
            ("--constraint", self.constraint.clone()),
            ("--nodelist", self.nodelist.clone()),
        ];
        d.extend(
            optional
                .into_iter()
                .filter_map(|(flag, v)| v.map(|v| format!("{flag}={v}"))),
        );
        if self.exclusive {
            d.push("--exclusive".to_owned());
        }
        if self.num_gpus > 0 {
            d.push(match self.gpu_directive {
                GpuDirective::GpusPerTask => format!("--gpus-per-task={}", self.num_gpus),
                GpuDirective::GpusPerNode => format!("--gpus-per-node={}", self.num_gpus),
                GpuDirective::Gres => format!("--gres=gpu:{}", self.num_gpus),
            });
        }
        if stop_grace > 0 {
            // Ask Slurm for SIGTERM before the time limit, so Ray is stopped cleanly in time.
            d.push(format!("--signal=B:TERM@{stop_grace}"));
        }
        d.extend(self.sbatch_args.iter().map(|a| sbatch_arg_line(a)));
        d
    }
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

    #[test]
    fn sbatch_arg_values_with_white_space_are_quoted() {
        assert_eq!(
            sbatch_arg_line("--comment=two words"),
            "--comment=\"two words\""
        );
        assert_eq!(sbatch_arg_line("--mail-type=END"), "--mail-type=END");
    }
}
