//! `rayslurm forward RUN|CLUSTER PORT[:LOCAL] ...`: forwards ports of a run's head node (what
//! the run serves itself: a task file's `ports`, a web app) to ports on this machine's
//! loopback, through the allocation, as `dashboard` forwards Ray's dashboard: each local port
//! serves only the user's own connections, and each connection is an `srun --overlap` step
//! that connects on the head only to a port no other user listens on (`clusters::relay`).
//! Prints one URL a port and the one `ssh -L` line that reaches them from a laptop; forwards
//! until Ctrl-C.
//!
//! Any run has a head: the node that runs its batch script, which Slurm names; so a run
//! without Ray (`--no-ray`, `--per-node`), whose head writes no cluster info, is forwarded
//! alike.

use std::process::ExitCode;

use anyhow::Result;

use crate::clusters::forwarding;
use crate::clusters::relay::{self, Head};
use crate::clusters::target::Target;
use crate::commands::settings::clusters::ForwardSettings;
use crate::error::{UsageError, show};
use crate::printer::Printer;
use crate::runs::status::{self, JobStatus};
use crate::runs::store::StoredRun;
use crate::slurm::query::{Phase, scontrol_job};

pub(crate) fn run(args: &ForwardSettings, printer: &Printer) -> Result<ExitCode> {
    let (_, target) = Target::open(&args.target, printer)?;
    let run = match target {
        Target::Cluster(cluster) => cluster.run,
        Target::Run(run) => run,
    };
    let status = status::current(&run, printer)?;
    let batch_host = match status.phase {
        Some(Phase::Running) => scontrol_job(&run.record.job_id)?.and_then(|j| j.batch_host),
        _ => None,
    };
    let head = head_of(&run, &status, batch_host)?;
    let mut forwarded = Vec::new();
    for port in &args.ports {
        let remote = port.remote;
        let local = forwarding::local_port(
            port.local,
            remote,
            &format!("port {remote}"),
            &format!("forward it as {remote}:LOCAL with another LOCAL"),
            |local| {
                let first = head.clone();
                relay::serve(local, move || (current(&first), remote))
            },
        )?;
        forwarded.push((remote, local));
    }
    for (_, local) in &forwarded {
        printer.result(&format!("http://localhost:{local}"));
    }
    let each: Vec<String> = forwarded
        .iter()
        .map(|(remote, local)| format!("\n  port {remote} to http://localhost:{local}"))
        .collect();
    let locals: Vec<u16> = forwarded.iter().map(|(_, local)| *local).collect();
    printer.info(&format!(
        "forwarding ports of {}'s head node {} until Ctrl-C:{}\n  from a laptop: {}",
        args.target,
        head.node,
        each.concat(),
        forwarding::from_a_laptop(&locals)
    ));
    forwarding::until_interrupted()?;
    Ok(ExitCode::SUCCESS)
}

/// The run's head now: the node Slurm names for its job's batch script (another one after a
/// requeue), else the one it named at the start.
fn current(first: &Head) -> Head {
    match scontrol_job(&first.job_id)
        .ok()
        .flatten()
        .and_then(|j| j.batch_host)
    {
        Some(node) => Head {
            node,
            ..first.clone()
        },
        None => first.clone(),
    }
}

/// Where the relay reaches the run: its job, the head node Slurm names (`batch_host`), and the
/// run's own copy of rayslurm; a clear error where the run has no head now.
fn head_of(
    run: &StoredRun,
    status: &JobStatus,
    batch_host: Option<String>,
) -> Result<Head, UsageError> {
    let record = &run.record;
    let (kind, name) = (
        if record.cluster { "cluster" } else { "run" },
        &record.exp_name,
    );
    let none = |why: String| {
        UsageError::new(format!(
            "{kind} {} has no head node to forward from {why}",
            show(name)
        ))
    };
    match status.phase {
        Some(Phase::Running) => {}
        Some(Phase::Pending) => {
            return Err(
                none(format!("yet: its allocation is {}", status.label())).hint(format!(
                    "forward once it runs; `rayslurm status {name}` shows when it does"
                )),
            );
        }
        Some(Phase::Ending | Phase::Ended) => {
            return Err(none(format!("any more: it has ended ({})", status.label())));
        }
        None => {
            return Err(
                none("now: Slurm could not be asked where it runs".to_owned())
                    .hint("try again in a moment; `rayslurm status` shows what Slurm says"),
            );
        }
    }
    let node = batch_host.ok_or_else(|| {
        none("yet: Slurm names no node running its batch script".to_owned())
            .hint("try again in a moment")
    })?;
    let rayslurm_bin = record.binary.clone().ok_or_else(|| {
        UsageError::new(format!(
            "the record of {kind} {} names no copy of rayslurm on its nodes (it was written by an older rayslurm), which the forward runs there",
            show(name)
        ))
        .hint("launch the run again with this rayslurm")
    })?;
    Ok(Head {
        job_id: record.job_id.clone(),
        node,
        rayslurm_bin,
    })
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use chrono::{FixedOffset, TimeZone};

    use super::*;
    use crate::handoff::run_files::RunFiles;
    use crate::runs::store::RunRecord;

    fn run(binary: Option<&str>) -> StoredRun {
        let at = FixedOffset::east_opt(0)
            .unwrap()
            .with_ymd_and_hms(2026, 11, 27, 9, 0, 0)
            .unwrap();
        let files = RunFiles::for_stem(Path::new("/logs"), "web");
        let mut record = RunRecord::new("web", "42", &files, at, Path::new("/w"), "x", 1);
        record.binary = binary.map(PathBuf::from);
        StoredRun {
            path: PathBuf::from("/store/42.json"),
            record,
        }
    }

    fn status(state: &str, phase: Option<Phase>, reason: Option<&str>) -> JobStatus {
        JobStatus {
            state: state.to_owned(),
            phase,
            reason: reason.map(str::to_owned),
            ..JobStatus::unknown()
        }
    }

    #[test]
    fn a_running_runs_head_is_its_batch_host_and_any_other_run_has_none() {
        let running = status("RUNNING", Some(Phase::Running), None);
        let head = head_of(
            &run(Some("/p/bin/rayslurm-1")),
            &running,
            Some("node3".into()),
        );
        assert_eq!(
            head.unwrap(),
            Head {
                job_id: "42".into(),
                node: "node3".into(),
                rayslurm_bin: "/p/bin/rayslurm-1".into()
            }
        );
        let refused = |s: &JobStatus, host: Option<&str>, bin| {
            head_of(&run(bin), s, host.map(str::to_owned))
                .unwrap_err()
                .to_string()
        };
        let bin = Some("/p/bin/rayslurm-1");
        assert_eq!(
            refused(
                &status("PENDING", Some(Phase::Pending), Some("Priority")),
                None,
                bin
            ),
            "run `web` has no head node to forward from yet: its allocation is PENDING (Priority)"
        );
        assert_eq!(
            refused(&status("COMPLETED", Some(Phase::Ended), None), None, bin),
            "run `web` has no head node to forward from any more: it has ended (COMPLETED)"
        );
        assert_eq!(
            refused(&status("UNKNOWN", None, None), None, bin),
            "run `web` has no head node to forward from now: Slurm could not be asked where it runs"
        );
        assert_eq!(
            refused(&running, None, bin),
            "run `web` has no head node to forward from yet: Slurm names no node running its batch script"
        );
        assert!(refused(&running, Some("node3"), None).contains("names no copy of rayslurm"));
    }
}
