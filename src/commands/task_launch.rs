//! `rayslurm launch TASK.yaml`: each stage of the task file submitted in order (one for a file
//! of one task). A pipeline's stage waits for the one before it to succeed (Slurm's
//! `afterok`), or in a graph for those it names (`afterok:A:B`), and is cancelled by Slurm if
//! one fails (`--kill-on-invalid-dep=yes`): every
//! stage was resolved, and so checked, before the first is submitted
//! (`settings::task_file::resolve_stages`). The ports a task serves
//! are printed with the `rayslurm forward` command that forwards them to the login node.

use std::process::ExitCode;

use anyhow::Result;

use crate::clusters::forwarding;
use crate::commands::settings::task_file::StageSettings;
use crate::commands::submit::{Submitted, submit};
use crate::launch::config::Link;
use crate::printer::Printer;
use crate::runs::follow;
use crate::runs::log_tail::Start;
use crate::sys::port_range;
use crate::sys::quote::shell_quote;

/// Slurm's option that cancels a job whose dependency can never be met (a stage before it
/// failed), instead of leaving it pending for ever.
const CANCEL_IF_NEVER: &str = "--kill-on-invalid-dep=yes";

pub(crate) fn run(stages: &[StageSettings], printer: &Printer) -> Result<ExitCode> {
    let count = stages.len();
    // Each stage submitted so far, by run name, with its job (none in a dry run).
    let mut submitted_stages: Vec<(String, Option<String>)> = Vec::new();
    let mut runs = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        let mut config = stage.config.clone();
        let name = config.job.exp_name.clone();
        let waits: Vec<&(String, Option<String>)> = match &stage.waits_for {
            None => submitted_stages.last().into_iter().collect(),
            Some(names) => submitted_stages
                .iter()
                .filter(|(n, _)| names.contains(n))
                .collect(),
        };
        if let Some(pipeline) = &stage.pipeline {
            printer.info(&stage_line(pipeline, i, count, &name, &waits));
        }
        if !waits.is_empty() {
            // `--after` is the first stage's: each later one follows the stages it waits for.
            config.after = None;
            let jobs: Option<Vec<&str>> = waits.iter().map(|(_, j)| j.as_deref()).collect();
            config.link = Some(Link {
                dependency: jobs.map(|ids| format!("afterok:{}", ids.join(":"))),
                run_dir: None,
            });
            config.job.sbatch_args.push(CANCEL_IF_NEVER.to_owned());
        }
        let submitted = submit(&config, printer)?;
        let job = match &submitted {
            Submitted::Job { record, .. } => Some(record.job_id.clone()),
            Submitted::DryRun => None,
        };
        for line in forwards(&stage.ports, &name) {
            printer.info(&line);
        }
        submitted_stages.push((name, job));
        runs.push((config, submitted));
    }
    for (config, submitted) in &runs {
        let Submitted::Job { record, stored } = submitted else {
            continue;
        };
        if !config.follow {
            continue;
        }
        let request = follow::Request {
            record,
            stored: stored.as_deref().map(|(store, run)| (store, run)),
            start: Start::Beginning,
            cancel_on_interrupt: config.cancel_on_interrupt,
        };
        let code = follow::follow(&request, printer)?;
        if code != ExitCode::SUCCESS {
            return Ok(code);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `pipeline P: stage 2 of 3, P-eval (starts when P-train, job 12, has succeeded)`.
fn stage_line(
    pipeline: &str,
    i: usize,
    count: usize,
    name: &str,
    waits: &[&(String, Option<String>)],
) -> String {
    let names = waits
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(" and ");
    let (has, it) = if waits.len() > 1 {
        ("have", "one")
    } else {
        ("has", "it")
    };
    let when = match waits {
        [] => String::new(),
        [(prev, Some(job))] => {
            format!(" (starts when {prev}, job {job}, has succeeded; cancelled if it fails)")
        }
        _ if waits.iter().all(|(_, j)| j.is_some()) => {
            let jobs = waits
                .iter()
                .filter_map(|(_, j)| j.as_deref())
                .collect::<Vec<_>>()
                .join(", ");
            format!(" (starts when {names}, jobs {jobs}, {has} succeeded; cancelled if {it} fails)")
        }
        _ => {
            let placeholders = waits
                .iter()
                .map(|(n, _)| format!("<{n}'s job>"))
                .collect::<Vec<_>>()
                .join(":");
            format!(
                " (submitted with --dependency=afterok:{placeholders} {CANCEL_IF_NEVER}: starts when {names} {has} succeeded, cancelled if {it} fails)"
            )
        }
    };
    format!(
        "pipeline {pipeline}: stage {} of {count}, {name}{when}",
        i + 1
    )
}

/// What is printed of `ports`: the `rayslurm forward` command that forwards them from the
/// head node of the run (or cluster) `name` to this login node, and the `ssh -L` line that
/// reaches them there from a laptop.
pub(crate) fn forwards(ports: &[String], name: &str) -> Vec<String> {
    if ports.is_empty() {
        return Vec::new();
    }
    let each: Vec<u16> = ports
        .iter()
        .filter_map(|p| port_range::parse(p))
        .flatten()
        .collect();
    vec![
        format!(
            "ports {} are served on the run's head node; once it runs, forward them to this login node (they serve only you there), until Ctrl-C:",
            ports.join(", ")
        ),
        format!(
            "  rayslurm forward {} {}",
            shell_quote(name),
            ports.join(" ")
        ),
        format!("  then from a laptop: {}", forwarding::from_a_laptop(&each)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ports_are_forwarded_by_rayslurm_forward_with_the_runs_name() {
        let lines = forwards(&["8080".into(), "9000-9001".into()], "web");
        assert!(
            lines[0].starts_with("ports 8080, 9000-9001 are served on the run's head node"),
            "{lines:?}"
        );
        assert_eq!(lines[1], "  rayslurm forward web 8080 9000-9001");
        assert!(
            lines[2].starts_with(
                "  then from a laptop: ssh -N -L 8080:localhost:8080 -L 9000:localhost:9000 -L 9001:localhost:9001 "
            ),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 3);
        assert!(forwards(&[], "web").is_empty());
        assert!(forwards(&["1".into()], "my run")[1].contains("forward 'my run' 1"));
    }

    #[test]
    fn a_later_stage_says_which_it_waits_for() {
        let train = ("p-train".to_owned(), Some("12".to_owned()));
        let line = stage_line("p", 1, 3, "p-eval", &[&train]);
        assert_eq!(
            line,
            "pipeline p: stage 2 of 3, p-eval (starts when p-train, job 12, has succeeded; cancelled if it fails)"
        );
        assert_eq!(
            stage_line("p", 0, 3, "p-1", &[]),
            "pipeline p: stage 1 of 3, p-1"
        );
        // In a graph, a stage may wait for several.
        let infer = ("p-infer".to_owned(), Some("13".to_owned()));
        assert_eq!(
            stage_line("p", 2, 3, "p-eval", &[&train, &infer]),
            "pipeline p: stage 3 of 3, p-eval (starts when p-train and p-infer, jobs 12, 13, have succeeded; cancelled if one fails)"
        );
        let dry = ("p-infer".to_owned(), None);
        assert_eq!(
            stage_line("p", 2, 3, "p-eval", &[&train, &dry]),
            "pipeline p: stage 3 of 3, p-eval (submitted with --dependency=afterok:<p-train's job>:<p-infer's job> --kill-on-invalid-dep=yes: starts when p-train and p-infer have succeeded, cancelled if one fails)"
        );
    }
}
