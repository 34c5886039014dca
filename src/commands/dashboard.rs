//! `rayslurm dashboard CLUSTER|RUN`: forwards the head's Ray dashboard (on its per-job port) to
//! a port on this machine's loopback, through the allocation, and prints the URL and the one
//! `ssh -L` line that reaches it from a laptop; forwards until Ctrl-C. The local port serves only
//! connections of the user's own (see `clusters::relay`), and no token is added: the dashboard
//! asks for it.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::clusters::cluster::Cluster;
use crate::clusters::relay;
use crate::commands::settings::clusters::DashboardSettings;
use crate::error::{UsageError, show};
use crate::handoff::cluster_info::ClusterInfo;
use crate::handoff::run_files::newest_token_file;
use crate::printer::Printer;
use crate::runs::interrupt;
use crate::runs::select;
use crate::runs::store::{self, RunStore, StoredRun};

pub(crate) fn run(args: &DashboardSettings, printer: &Printer) -> Result<ExitCode> {
    let store = RunStore::from_env()?;
    let runs = store::load_warning(&store, printer)?;
    let (info, port, token, run_dir) = match Cluster::find(&runs, &args.target) {
        Ok(cluster) => {
            let (info, _) = cluster.connect(printer)?;
            let port = info.dashboard_port;
            let token = info.token_file.clone();
            (info, port, token, Some(cluster.run_dir.clone()))
        }
        Err(_) => {
            let run = select::resolve(&runs, &args.target, store.dir())?.latest();
            let (info, port, token) = of_run(run)?;
            (info, port, token, None)
        }
    };
    // A port asked for is that port or an error: moving elsewhere would leave whoever holds it
    // serving the user's browser a dashboard of their own.
    let local = match args.port {
        Some(asked) => relay::listen_on(&info, port, asked, run_dir).map_err(|e| {
            UsageError::new(format!(
                "cannot forward the dashboard to port {asked} on this machine: {e:#}"
            ))
            .hint("the port is taken (by you or another user): pass another --port, or none to take a free one")
        })?,
        None => relay::listen_on(&info, port, port, run_dir.clone())
            .or_else(|_| relay::listen_on(&info, port, 0, run_dir))?,
    };
    let host = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "LOGIN_NODE".to_owned());
    printer.result(&format!("http://localhost:{local}"));
    printer.info(&format!(
        "forwarding {}'s Ray dashboard (port {port} on {}) to http://localhost:{local} until Ctrl-C\n  from a laptop: ssh -N -L {local}:localhost:{local} {host}, then open http://localhost:{local}",
        args.target, info.head_node
    ));
    if let Some(token) = token {
        printer.info(&format!(
            "  the dashboard asks for the cluster's token: it is in {}",
            token.display()
        ));
    }
    interrupt::install().context("cannot handle Ctrl-C")?;
    while interrupt::received().is_none() {
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(ExitCode::SUCCESS)
}

/// A `launch` run's dashboard, from its log (the head names it once it listens) and its script
/// (the node's rayslurm, which relays).
fn of_run(run: &StoredRun) -> Result<(ClusterInfo, u16, Option<std::path::PathBuf>)> {
    let record = &run.record;
    let log = std::fs::read_to_string(&record.log).unwrap_or_default();
    let (head, port) = log
        .lines()
        .find_map(dashboard_line)
        .ok_or_else(|| {
            UsageError::new(format!(
                "run {} has no dashboard yet (its log does not name one)",
                show(&record.exp_name)
            ))
            .hint("a run's head names its dashboard once Ray is up; runs with --include-dashboard=false have none")
        })?;
    let script = std::fs::read_to_string(&record.script).unwrap_or_default();
    let bin = node_binary(&script).context("the run's script does not name its rayslurm")?;
    let files = record.files();
    let info = ClusterInfo {
        job_id: record.job_id.clone(),
        head_node: head,
        head_ip: std::net::Ipv4Addr::LOCALHOST.into(),
        dashboard_port: port,
        nodes: Vec::new(),
        cpus_per_node: None,
        gpus_per_node: 0,
        ready_at: String::new(),
        token_file: files.and_then(|f| newest_token_file(&f.dir, &record.job_id)),
        rayslurm_bin: bin.into(),
        idle_timeout: None,
        attempt: 0,
    };
    let token = info.token_file.clone();
    Ok((info, port, token))
}

/// `... Ray dashboard on NODE at 127.0.0.1:PORT; ...` → (NODE, PORT).
fn dashboard_line(line: &str) -> Option<(String, u16)> {
    let rest = line.split("Ray dashboard on ").nth(1)?;
    let (node, rest) = rest.split_once(" at 127.0.0.1:")?;
    let port = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    Some((node.to_owned(), port))
}

/// `rayslurm_bin='/path'` in the script → `/path`.
fn node_binary(script: &str) -> Option<&Path> {
    let line = script.lines().find(|l| l.starts_with("rayslurm_bin="))?;
    let value = line.strip_prefix("rayslurm_bin=")?.trim();
    Some(Path::new(value.trim_matches('\'')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_dashboard_and_binary_are_read_from_its_log_and_script() {
        let line = "[rayslurm 09:00:01.000 node1] Ray dashboard on node1 at 127.0.0.1:13001; from the login node: ssh ...";
        assert_eq!(dashboard_line(line), Some(("node1".to_owned(), 13001)));
        assert_eq!(dashboard_line("hello"), None);
        let script = "#!/bin/bash\nrayslurm_bin='/shared/.rayslurm/bin/rayslurm-0.1.0-x'\n";
        assert_eq!(
            node_binary(script),
            Some(Path::new("/shared/.rayslurm/bin/rayslurm-0.1.0-x"))
        );
    }
}
