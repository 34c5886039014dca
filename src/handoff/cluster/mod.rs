//! What the bootstrap is told about the cluster to build: one type, [`ClusterOptions`], made of
//! typed groups ([`groups`]), that the launcher resolves from its flags and config files and
//! the bootstrap parses back from its command line. [`ClusterOptions::to_flags`] is the one
//! serializer and clap's derive the one parser; a round-trip test keeps them in step. The clap
//! derive stays here, beside the serializer, as the bootstrap's wire format (see
//! `bootstrap_args`).

mod groups;

use clap::Args;

use crate::error::{UsageError, show};
use crate::handoff::container::ContainerOptions;
pub(crate) use groups::{
    DEFAULT_MAX_PENDING_WORKERS, DEFAULT_MAX_REQUEUES, DEFAULT_READY_TIMEOUT, DEFAULT_STOP_GRACE,
    DEFAULT_WORKER_IDLE_TIMEOUT, IpFamily, LongRunOptions, NodeOptions, ProgramOptions, RayOptions,
    ServeOptions,
};

/// The cluster the bootstrap builds, with every default already applied by the launcher: one
/// group per concern, each resolved whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub(crate) struct ClusterOptions {
    /// What runs on the nodes.
    #[command(flatten)]
    pub(crate) program: ProgramOptions,
    /// How the nodes come together and part.
    #[command(flatten)]
    pub(crate) nodes: NodeOptions,
    /// What Ray is started with.
    #[command(flatten)]
    pub(crate) ray: RayOptions,
    /// A long run's signal and requeues (`launch`'s).
    #[command(flatten)]
    pub(crate) long_run: LongRunOptions,
    /// A persistent cluster's serving and growth (`up`'s).
    #[command(flatten)]
    pub(crate) serve: ServeOptions,
    /// The image every program of the run runs in, if any.
    #[command(flatten)]
    pub(crate) container: ContainerOptions,
}

impl ClusterOptions {
    /// The options from their flags as words ([`joined_words`] of [`Self::to_flags`]); an
    /// error is clap's first line (`unexpected argument '--x' found`).
    pub(crate) fn from_words(words: &[String]) -> Result<Self, String> {
        #[derive(clap::Parser)]
        struct Words {
            #[command(flatten)]
            cluster: ClusterOptions,
        }
        let argv = std::iter::once("cluster-options").chain(words.iter().map(String::as_str));
        <Words as clap::Parser>::try_parse_from(argv)
            .map(|w| w.cluster)
            .map_err(|e| {
                let text = e.to_string();
                let first = text.lines().next().unwrap_or_default();
                first.trim_start_matches("error: ").to_owned()
            })
    }

    /// The flags that carry these options, as `(flag, value)`; `None` for a bare switch:
    /// each group's, in the groups' order.
    pub(crate) fn to_flags(&self) -> Vec<(&'static str, Option<String>)> {
        [
            self.program.to_flags(),
            self.nodes.to_flags(),
            self.ray.to_flags(),
            self.long_run.to_flags(),
            self.serve.to_flags(),
            self.container.to_flags(),
        ]
        .concat()
    }

    /// The options as the workers get them: head-only `ray start` flags (dashboard,
    /// autoscaler, ...) would make a worker's `ray start` fail.
    pub(crate) fn for_workers(&self) -> Self {
        let mut workers = self.clone();
        workers.ray.ray_head_args = None;
        workers
    }

    /// Whether Ray runs at all: not with `--no-ray`, nor with `--per-node`.
    pub(crate) fn with_ray(&self) -> bool {
        self.program.with_ray()
    }
}

/// Flags as words for a command line: `--flag=value` (one word each, so a value that starts
/// with `-` is never taken for a flag) or the bare `--flag`.
pub(crate) fn joined_words(flags: Vec<(&'static str, Option<String>)>) -> Vec<String> {
    flags
        .into_iter()
        .map(|(flag, value)| match value {
            Some(v) => format!("{flag}={v}"),
            None => flag.to_owned(),
        })
        .collect()
}

/// Splits `--ray-args` (or `--ray-head-args`, named by `flag`) into words as a shell would.
pub(crate) fn parse_ray_args(flag: &str, text: &str) -> Result<Vec<String>, UsageError> {
    let words = shlex::split(text).ok_or_else(|| {
        UsageError::new(format!("{flag} {} has an unclosed quote", show(text))).hint(format!(
            "quote it as you would in a shell, e.g. `{flag} \"--object-manager-port=0\"`"
        ))
    })?;
    if let Some(w) = words.iter().find(|w| w.contains('\n')) {
        return Err(UsageError::new(format!(
            "{flag} word {} contains a newline",
            show(w)
        )));
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parse(words: Vec<String>) -> ClusterOptions {
        ClusterOptions::from_words(&words).expect("parses")
    }

    #[test]
    fn words_it_does_not_know_are_refused_by_name() {
        let err = ClusterOptions::from_words(&["--no-such-flag".to_owned()]).unwrap_err();
        assert_eq!(err, "unexpected argument '--no-such-flag' found");
    }

    #[test]
    fn ray_args_num_gpus_is_what_ray_is_told() {
        let with = |args: Option<&str>| {
            let mut o = groups::every_option();
            o.ray.ray_args = args.map(str::to_owned);
            o.ray.gpus(2)
        };
        assert_eq!(with(None), 2);
        assert_eq!(with(Some("--num-gpus=4")), 4);
        assert_eq!(with(Some("--num-gpus 1 --resources '{}'")), 1);
        assert_eq!(with(Some("--num-gpus=x --num-cpus=3")), 2);
    }

    #[test]
    fn flags_round_trip_as_the_script_and_the_worker_step_write_them() {
        for options in [groups::every_option(), ClusterOptions::default()] {
            let separate: Vec<String> = options
                .to_flags()
                .into_iter()
                .flat_map(|(f, v)| std::iter::once(f.to_owned()).chain(v))
                .collect();
            assert_eq!(parse(separate), options);
            assert_eq!(parse(joined_words(options.to_flags())), options);
        }
    }

    /// Regression: `--ray-args --include-dashboard=false` reached the workers, whose
    /// `ray start` refuses head-only flags, and failed every job.
    #[test]
    fn head_only_ray_args_never_reach_the_workers() {
        let words = joined_words(groups::every_option().for_workers().to_flags()).join(" ");
        assert!(
            words.contains("--ray-args=--object-manager-port=0"),
            "{words}"
        );
        assert!(!words.contains("dashboard"), "{words}");
    }

    #[test]
    fn the_command_gets_the_grace_less_the_teardown_margin() {
        let with = |stop_grace| NodeOptions {
            stop_grace,
            ..NodeOptions::default()
        };
        assert_eq!(with(60).command_grace(), Duration::from_secs(55));
        assert_eq!(with(3).command_grace(), Duration::from_secs(1));
        assert_eq!(with(0).command_grace(), Duration::from_secs(10));
    }
}
