//! `rayslurm dashboard CLUSTER|RUN`: forwards the head's Ray dashboard (on its per-job port) to
//! a port on this machine's loopback, through the allocation, and prints the URL and the one
//! `ssh -L` line that reaches it from a laptop; forwards until Ctrl-C. The local port serves only
//! connections of the user's own (see `clusters::relay`), and no token is added: the dashboard
//! asks for it.

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::clusters::cluster::{Cluster, State};
use crate::clusters::target::Target;
use crate::clusters::{forwarding, relay};
use crate::commands::settings::clusters::DashboardSettings;
use crate::error::{UsageError, show};
use crate::handoff::cluster_info::ClusterInfo;
use crate::printer::Printer;
use crate::runs::status::{self, JobStatus};
use crate::runs::store::StoredRun;

pub(crate) fn run(args: &DashboardSettings, printer: &Printer) -> Result<ExitCode> {
    let (_, target) = Target::open(&args.target, printer)?;
    let (info, run_dir) = match target {
        Target::Cluster(cluster) => (cluster.connect(printer)?.0, cluster.run_dir),
        Target::Run(run) => of_run(&run, &status::current(&run, printer)?)?,
    };
    let (port, token, run_dir) = (info.dashboard_port, info.token_file.clone(), Some(run_dir));
    let local = forwarding::local_port(
        args.port,
        port,
        "the dashboard",
        "pass another --port",
        |local| relay::listen_on(&info, port, local, run_dir.clone()),
    )?;
    printer.result(&format!("http://localhost:{local}"));
    printer.info(&format!(
        "forwarding {}'s Ray dashboard (port {port} on {}) to http://localhost:{local} until Ctrl-C\n  from a laptop: {}, then open http://localhost:{local}",
        args.target,
        info.head_node,
        forwarding::from_a_laptop(&[local])
    ));
    if let Some(token) = token {
        printer.info(&format!(
            "  the dashboard asks for the cluster's token: it is in {}",
            token.display()
        ));
    }
    forwarding::until_interrupted()?;
    Ok(ExitCode::SUCCESS)
}

/// A `launch` run's dashboard and run directory, from the [`ClusterInfo`] its head writes
/// once Ray is up, read as a cluster's is (the user's own private file, of the job's current
/// attempt).
fn of_run(run: &StoredRun, status: &JobStatus) -> Result<(ClusterInfo, PathBuf)> {
    let name = &run.record.exp_name;
    let run_dir =
        run.record.files().map(|f| f.dir).ok_or_else(|| {
            UsageError::new(format!("the record of run {} is damaged", show(name)))
        })?;
    let cluster = Cluster {
        run: run.clone(),
        run_dir: run_dir.clone(),
    };
    let state = match cluster.state(status)? {
        // Runs `--after` one run share its directory: another job's head wrote this.
        State::Up(info) if info.job_id != run.record.job_id => State::Starting,
        state => state,
    };
    Ok((dashboard_of(name, state)?, run_dir))
}

/// The run's dashboard where the run's state has one; a clear error where it has none.
fn dashboard_of(name: &str, state: State) -> Result<ClusterInfo, UsageError> {
    let none = |why: String| UsageError::new(format!("run {} has no dashboard {why}", show(name)));
    match state {
        State::Up(info) if info.dashboard => Ok(info),
        State::Up(_) => Err(none("yet (it does not answer)".to_owned()).hint(
            "runs with --include-dashboard=false have none; with Ray's token, the head names it once it has checked that Ray requires the token",
        )),
        State::Pending(s) => Err(none(format!("yet: its allocation is {s}"))
            .hint("the dashboard is there once Ray is up; see `rayslurm status`")),
        State::Starting => Err(none("yet: Ray is not up".to_owned()).hint(
            "a run's head says where its dashboard is once Ray is up; runs with --no-ray or --per-node have none",
        )),
        State::Down(s) => Err(none(format!("any more: it has ended ({s})"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(dashboard: bool) -> ClusterInfo {
        serde_json::from_value(serde_json::json!({
            "job_id": "7", "head_node": "n1", "head_ip": "10.0.0.1", "dashboard_port": 12001,
            "dashboard": dashboard, "nodes": ["n1"], "cpus_per_node": 2, "gpus_per_node": 0,
            "ready_at": "", "token_file": null, "rayslurm_bin": "/x", "idle_timeout": null
        }))
        .unwrap()
    }

    #[test]
    fn a_runs_dashboard_is_found_from_what_its_head_wrote() {
        assert_eq!(
            dashboard_of("r", State::Up(info(true))).unwrap(),
            info(true)
        );
        let message = |state| dashboard_of("r", state).unwrap_err().to_string();
        assert_eq!(
            message(State::Up(info(false))),
            "run `r` has no dashboard yet (it does not answer)"
        );
        assert_eq!(
            message(State::Starting),
            "run `r` has no dashboard yet: Ray is not up"
        );
        assert_eq!(
            message(State::Pending("PENDING (Priority)".into())),
            "run `r` has no dashboard yet: its allocation is PENDING (Priority)"
        );
        assert_eq!(
            message(State::Down("COMPLETED".into())),
            "run `r` has no dashboard any more: it has ended (COMPLETED)"
        );
    }
}
