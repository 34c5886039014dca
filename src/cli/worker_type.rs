//! `up --worker-type 'NAME: OPTIONS'`: one kind of worker job of an elastic cluster, its options
//! the long options of `launch` under the same names (and the few of its own), parsed by clap
//! as the command line is. Ray's cluster YAML and a task file's `worker_types:` become these same
//! words, so that one parser checks every way a worker type is given.

use std::collections::BTreeMap;

use clap::Parser;

use super::values::{count, positive_count};
use crate::launch::gpu_names::GpuAsk;

/// A worker type as given: its name and options.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkerTypeArg {
    pub(crate) name: String,
    pub(crate) options: WorkerTypeOptions,
}

/// The options of one worker type: what it changes of the cluster's own job, what Ray is told
/// of its nodes, and how many it may have.
#[derive(Debug, Clone, Default, PartialEq, Parser)]
#[command(
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true
)]
pub(crate) struct WorkerTypeOptions {
    #[arg(long, short = 'p', value_name = "NAME")]
    pub(crate) partition: Option<String>,
    #[arg(long, short = 'A', value_name = "NAME")]
    pub(crate) account: Option<String>,
    #[arg(long)]
    pub(crate) qos: Option<String>,
    #[arg(long, short = 't')]
    pub(crate) time: Option<String>,
    /// Nodes of each worker job.
    #[arg(long, short = 'n', visible_alias = "nodes", value_parser = positive_count, value_name = "N")]
    pub(crate) num_nodes: Option<u32>,
    #[arg(long, value_parser = positive_count, value_name = "N")]
    pub(crate) cpus_per_task: Option<u32>,
    #[arg(long, value_name = "SIZE", conflicts_with = "mem_per_cpu")]
    pub(crate) mem: Option<String>,
    #[arg(long, value_name = "SIZE")]
    pub(crate) mem_per_cpu: Option<String>,
    #[arg(long, value_name = "[TYPE:]N", value_parser = clap::value_parser!(GpuAsk))]
    pub(crate) num_gpus: Option<GpuAsk>,
    #[arg(long, short = 'C', value_name = "FEATURES")]
    pub(crate) constraint: Option<String>,
    #[arg(long, overrides_with = "no_exclusive")]
    pub(crate) exclusive: bool,
    #[arg(long, overrides_with = "exclusive")]
    pub(crate) no_exclusive: bool,
    #[arg(long = "sbatch-arg", value_name = "OPTION", allow_hyphen_values = true)]
    pub(crate) sbatch_args: Vec<String>,
    #[arg(long, value_name = "IMAGE")]
    pub(crate) container_image: Option<String>,
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub(crate) setup: Option<String>,
    /// What Ray is told of each node, a JSON object of amounts (`{"CPU": 8, "accel": 1}`).
    #[arg(long, value_name = "JSON", value_parser = ray_resources)]
    pub(crate) resources: Option<BTreeMap<String, f64>>,
    /// Ray node labels, `KEY=VALUE[,KEY=VALUE]`.
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = ray_labels)]
    pub(crate) labels: Option<BTreeMap<String, String>>,
    #[arg(long, value_parser = count, value_name = "N")]
    pub(crate) min_workers: Option<u32>,
    #[arg(long, value_parser = count, value_name = "N")]
    pub(crate) max_workers: Option<u32>,
    #[arg(long, value_parser = positive_count, value_name = "SECS")]
    pub(crate) idle_timeout: Option<u32>,
    /// Slurm may preempt these jobs (a scavenger partition or QOS).
    #[arg(long)]
    pub(crate) preemptible: bool,
    /// Seconds before a worker job's time limit at which its replacement is submitted.
    #[arg(long, value_parser = positive_count, value_name = "SECS")]
    pub(crate) rollover: Option<u32>,
}

/// clap's value parser of `--worker-type`: `NAME: OPTIONS`.
pub(super) fn worker_type(value: &str) -> Result<WorkerTypeArg, String> {
    let Some((name, rest)) = value.split_once(':') else {
        return Err(format!(
            "`{}` names no worker type: write `NAME: OPTIONS`, e.g. `gpu: --partition gpu --num-gpus 1 --max-workers 4`",
            value.escape_debug()
        ));
    };
    let name = name.trim();
    check_name(name)?;
    let words = shlex::split(rest).ok_or_else(|| {
        format!(
            "the options of worker type {name} are not shell words (an unclosed quote?): `{}`",
            rest.trim().escape_debug()
        )
    })?;
    let options = WorkerTypeOptions::try_parse_from(&words).map_err(|e| {
        let said = e.to_string();
        let first = said
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ");
        format!("worker type {name}: {first}")
    })?;
    if let (Some(min), Some(max)) = (options.min_workers, options.max_workers)
        && min > max
    {
        return Err(format!(
            "worker type {name}: --min-workers {min} is more than --max-workers {max}"
        ));
    }
    Ok(WorkerTypeArg {
        name: name.to_owned(),
        options,
    })
}

/// A worker type's name is Ray's node type name (and its `ray.io/node-group` label) and part of
/// file names, checked as the cluster YAML's and task files' are.
fn check_name(name: &str) -> Result<(), String> {
    crate::launch::worker_type::check_name(name)
        .map_err(|e| format!("`{}` is not a worker type name: {e}", name.escape_debug()))
}

/// A JSON object of Ray resource amounts, each 0 or more.
fn ray_resources(value: &str) -> Result<BTreeMap<String, f64>, String> {
    let map: BTreeMap<String, serde_json::Value> = serde_json::from_str(value).map_err(|e| {
        format!(
            "`{}` is not a JSON object of amounts ({e}): write e.g. '{{\"CPU\": 8, \"accel\": 1}}'",
            value.escape_debug()
        )
    })?;
    map.into_iter()
        .map(|(k, v)| match v.as_f64() {
            Some(n) if n >= 0.0 && !k.is_empty() => Ok((k, n)),
            _ => Err(format!(
                "resource `{}` = {v} is not an amount of 0 or more",
                k.escape_debug()
            )),
        })
        .collect()
}

/// `KEY=VALUE[,KEY=VALUE]`, as `ray start --labels` takes them.
fn ray_labels(value: &str) -> Result<BTreeMap<String, String>, String> {
    value
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v))
                if !k.trim().is_empty()
                    && !pair.contains(char::is_whitespace)
                    && !pair.contains(['\'', '"', '\\']) =>
            {
                Ok((k.trim().to_owned(), v.trim().to_owned()))
            }
            _ => Err(format!(
                "`{}` is not a label: write KEY=VALUE[,KEY=VALUE] without spaces or quotes",
                pair.escape_debug()
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_type_is_a_name_and_launchs_long_options() {
        let t = worker_type(
            "gpu: -p gpu --num-gpus l4:1 --cpus-per-task 2 --max-workers 4 --min-workers 1 \
             --resources '{\"accel\": 2}' --labels zone=a,tier=x --preemptible --rollover 120 \
             --setup 'pip install -q x' --sbatch-arg=--comment=hi",
        )
        .unwrap();
        assert_eq!(t.name, "gpu");
        let o = &t.options;
        assert_eq!(o.partition.as_deref(), Some("gpu"));
        assert_eq!(o.num_gpus.as_ref().map(|g| g.first().per_node), Some(1));
        assert_eq!((o.min_workers, o.max_workers), (Some(1), Some(4)));
        assert_eq!(o.resources.as_ref().unwrap()["accel"], 2.0);
        assert_eq!(o.labels.as_ref().unwrap()["zone"], "a");
        assert!(o.preemptible);
        assert_eq!(o.rollover, Some(120));
        assert_eq!(o.setup.as_deref(), Some("pip install -q x"));
        assert_eq!(o.sbatch_args, ["--comment=hi"]);
        assert_eq!(
            worker_type("cpu:").unwrap().options,
            WorkerTypeOptions::default()
        );
    }

    /// What Ray's cluster YAML and task files write as a type's options
    /// (`launch::worker_type::OPTIONS`) is what is parsed here, no more and no less.
    #[test]
    fn the_options_files_write_are_the_options_parsed() {
        use clap::CommandFactory;
        let command = WorkerTypeOptions::command();
        let parsed: std::collections::BTreeSet<&str> = command
            .get_arguments()
            .filter_map(clap::Arg::get_long)
            .filter(|l| *l != "no-exclusive")
            .collect();
        let written: std::collections::BTreeSet<&str> =
            crate::launch::worker_type::worker_options()
                .into_iter()
                .collect();
        assert_eq!(parsed, written);
    }

    #[test]
    fn a_bad_worker_type_says_what_and_how() {
        for (bad, says) in [
            (
                "gpu --max-workers 2",
                "names no worker type: write `NAME: OPTIONS`",
            ),
            ("g p: --max-workers 2", "is not a worker type name"),
            (
                "head: --max-workers 2",
                "`head` names the head node's own type",
            ),
            (
                "gpu: --max-wrokers 2",
                "worker type gpu: unexpected argument '--max-wrokers'",
            ),
            (
                "gpu: --max-workers two",
                "worker type gpu: invalid value 'two'",
            ),
            ("gpu: --setup 'x", "not shell words"),
            (
                "gpu: --resources '{\"GPU\": -1}'",
                "not an amount of 0 or more",
            ),
            ("gpu: --resources nope", "not a JSON object of amounts"),
            ("gpu: --labels 'a b=c'", "is not a label"),
            (
                "gpu: --min-workers 3 --max-workers 2",
                "--min-workers 3 is more than --max-workers 2",
            ),
            ("gpu: --mem 4G --mem-per-cpu 1G", "cannot be used with"),
        ] {
            let err = worker_type(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
