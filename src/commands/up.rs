//! `rayslurm up NAME [launch's job flags]`: submits an allocation whose bootstrap starts Ray
//! exactly as `launch` does and then keeps the cluster alive for `rayslurm exec`; waits (showing
//! the allocation's state) until the cluster is up, unless `--detach`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::clusters::cluster::{Cluster, State};
use crate::commands::settings::up::UpSettings;
use crate::commands::submit::{Submitted, submit};
use crate::error::{UsageError, show};
use crate::printer::Printer;
use crate::runs::interrupt;
use crate::runs::store::{RunStore, StoredRun};
use crate::slurm::query::Phase;

pub(crate) fn run(settings: &UpSettings, printer: &Printer) -> Result<ExitCode> {
    let (_, runs) = RunStore::open(printer)?;
    check_name_is_free(&runs, &settings.name, printer)?;
    let Submitted::Job { record, stored } = submit(&settings.config, printer)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let name = &settings.name;
    if settings.detach {
        printer.info(&format!(
            "cluster {name} submitted as job {}; `rayslurm status {name}` shows when it is up",
            record.job_id
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let Some((_, run)) = stored.map(|s| *s) else {
        printer.warn("the cluster is not recorded, so rayslurm cannot wait for it");
        return Ok(ExitCode::FAILURE);
    };
    wait_until_up(&run, printer)
}

/// Clusters and experiments share one namespace, so that `logs`, `cancel`, `status` and the
/// cluster commands never have to guess: a name is free unless an experiment has it, or a
/// cluster of that name is still alive.
fn check_name_is_free(runs: &[StoredRun], name: &str, printer: &Printer) -> Result<()> {
    if runs
        .iter()
        .any(|r| !r.record.cluster && r.record.exp_name == name)
    {
        return Err(UsageError::new(format!(
            "{} is the name of a recorded experiment",
            show(name)
        ))
        .hint("clusters and experiments share one namespace: choose another name")
        .into());
    }
    let Ok(cluster) = Cluster::find(runs, name) else {
        return Ok(());
    };
    let status = cluster.status(printer)?;
    if status.phase != Some(Phase::Ended) {
        return Err(UsageError::new(format!(
            "cluster {} is already {} (job {})",
            show(name),
            status.label(),
            cluster.run.record.job_id
        ))
        .hint(format!(
            "use it with `rayslurm exec {name} -- CMD`, or stop it first with `rayslurm down {name}`"
        ))
        .into());
    }
    Ok(())
}

/// Shows the allocation's state as it changes until the cluster is up (exit 0) or its job
/// ended first (exit 1, with the bootstrap's message).
fn wait_until_up(run: &StoredRun, printer: &Printer) -> Result<ExitCode> {
    if let Err(e) = interrupt::install() {
        printer.warn(&format!("Ctrl-C will not be handled: {e}"));
    }
    let cluster = Cluster::of(run)?;
    let name = cluster.name().to_owned();
    let t0 = Instant::now();
    let mut shown = String::new();
    loop {
        if interrupt::received().is_some() {
            printer.info(&format!(
                "stopped waiting; cluster {name} keeps starting (`rayslurm status {name}`, `rayslurm down {name}`)"
            ));
            return Ok(ExitCode::from(130));
        }
        let status = cluster.status(printer)?;
        let state = cluster.state(&status)?;
        let line = match &state {
            State::Pending(s) => format!("cluster {name} is {s}"),
            State::Starting => format!(
                "cluster {name} is starting Ray on {}",
                status.nodelist.as_deref().unwrap_or("its nodes")
            ),
            State::Up(info) => {
                printer.info(&format!(
                    "cluster {name} is up after {:.0} s: {} node(s) ({}), job {}; run jobs with `rayslurm exec {name} -- CMD`",
                    t0.elapsed().as_secs_f64(),
                    info.nodes.len(),
                    info.nodes.join(","),
                    info.job_id
                ));
                return Ok(ExitCode::SUCCESS);
            }
            State::Down(s) => {
                let why = status.message.as_deref().unwrap_or("see its log");
                printer.info(&format!(
                    "cluster {name} ended before it was up ({s}): {why}"
                ));
                printer.info(&format!("  log: {}", run.record.log.display()));
                return Ok(ExitCode::FAILURE);
            }
        };
        if line != shown {
            printer.info(&line);
            shown = line;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
