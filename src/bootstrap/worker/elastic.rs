//! A worker job of an elastic cluster (`up --max-nodes`): a Slurm job of its own, submitted by
//! the head with the run's own script and `RAYSLURM_ELASTIC_WORKER` set, that joins the head's Ray as
//! a worker node. It may have waited hours in Slurm's queue, so it reads where the head is and
//! the current attempt's token from the run's private files when it starts, and goes away at
//! once if the head it was meant for is gone. Once Ray has started it says so in the run's
//! `workers/` directory (its IP, which the head matches with Ray's nodes), then runs until
//! `scancel` (the head gives it back, or ends), Slurm's time limit, or the end of its Ray.
//! The cluster's file mounts are placed on the node before its Ray starts.

use std::sync::atomic::AtomicBool;

use crate::bootstrap::allocation::Allocation;
use crate::bootstrap::in_image;
use crate::bootstrap::marked::{self, RunMark};
use crate::bootstrap::node::{RAY_STOP_GRACE, memory_note, node_ip, say};
use crate::bootstrap::ray_auth::RayAuth;
use crate::bootstrap::workdir::NodeWorkdir;
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::cluster_info::ClusterInfo;
use crate::handoff::elastic::worker_dir;
use crate::sys::staged_file::Staged;

/// Runs the worker job; `head` is the head's job and attempt it was submitted for
/// (`JOB.RESTART`, the value of `RAYSLURM_ELASTIC_WORKER`).
pub(in crate::bootstrap) fn run(args: &BootstrapArgs, alloc: &Allocation, head: &str) -> i32 {
    let node = alloc.node.clone();
    let joined = match joins(args, alloc, head) {
        Ok(Some(joined)) => joined,
        Ok(None) => return 0,
        Err(why) => {
            say(&node, format!("error: {why}"));
            return 1;
        }
    };
    // The cluster's file mounts, placed as the node joins (kept until the job ends).
    let workdir = match NodeWorkdir::prepare(&joined.args, alloc) {
        Ok(made) => made,
        Err(why) => {
            say(&node, format!("error: {why}"));
            return 1;
        }
    };
    let mark = format!("{}-elastic-{}", alloc.job_id, std::process::id());
    let never = AtomicBool::new(false);
    let mut temp = None;
    let started = super::start(
        &joined.args,
        alloc,
        1,
        &mark,
        &joined.auth,
        &never,
        &mut temp,
    );
    let run = RunMark {
        mark,
        temp_root: temp.as_ref().map(|t| t.path.clone()),
    };
    let joined_file = worker_dir(&joined.run_dir).join(format!("{}.joined", alloc.job_id));
    let code = match started.and_then(|()| say_joined(&joined_file, alloc, args)) {
        Ok(()) => {
            say(
                &node,
                format!(
                    "joined the cluster's head at {} (job {head}) as a worker node",
                    joined.gcs
                ),
            );
            super::watch(&joined.args, &node, &run, &never, false)
        }
        Err(message) => {
            say(&node, format!("error: {message}"));
            1
        }
    };
    marked::stop_all(&run, RAY_STOP_GRACE);
    in_image::remove_container(&node);
    if let Some(temp) = temp {
        temp.remove();
    }
    let _ = std::fs::remove_file(&joined_file);
    drop(workdir);
    say(
        &node,
        format!("worker job done, exit code {code}{}", memory_note()),
    );
    code
}

/// What a worker job joins: the head's GCS, the token, and the worker's arguments.
struct Joining {
    args: BootstrapArgs,
    auth: RayAuth,
    gcs: String,
    run_dir: std::path::PathBuf,
}

/// Where the head this job was submitted for is; none (and a line in the log) when the
/// cluster has moved on to another job or attempt.
fn joins(args: &BootstrapArgs, alloc: &Allocation, head: &str) -> Result<Option<Joining>, String> {
    let run_dir = args
        .run_dir
        .clone()
        .ok_or("a worker job needs the run's directory (--run-dir)")?;
    let info = ClusterInfo::read(&run_dir)
        .map_err(|e| format!("{e:#}"))?
        .ok_or_else(|| {
            format!(
                "the cluster's head has written no `cluster.json` in {}",
                run_dir.display()
            )
        })?;
    let current = format!("{}.{}", info.job_id, info.attempt);
    if current != head {
        say(
            &alloc.node,
            format!(
                "the cluster's head is now job {current}, not {head}: this worker job is not needed"
            ),
        );
        return Ok(None);
    }
    let gcs = info
        .gcs_address
        .clone()
        .ok_or("the cluster's `cluster.json` names no GCS (a head of an older rayslurm)")?;
    let auth = match &info.token_file {
        Some(token) => RayAuth::Token(token.clone()),
        None => RayAuth::Disabled,
    };
    let args = BootstrapArgs {
        head_address: Some(gcs.clone()),
        cluster: args.cluster.for_workers(),
        ..args.clone()
    };
    Ok(Some(Joining {
        args,
        auth,
        gcs,
        run_dir,
    }))
}

/// Tells the head that this job's node joined, and at which IP: `workers/JOB.joined`.
fn say_joined(
    path: &std::path::Path,
    alloc: &Allocation,
    args: &BootstrapArgs,
) -> Result<(), String> {
    let ip = node_ip(alloc, &args.cluster).map_err(|e| e.to_string())?;
    let dir = path.parent().ok_or("no workers directory")?;
    let mut file = Staged::new(dir, "joined", 0o600).map_err(|e| format!("{e:#}"))?;
    file.write_all(format!("{ip}\n").as_bytes())
        .and_then(|()| file.replace(path))
        .map_err(|e| format!("cannot say that node {} joined: {e:#}", alloc.node))
}
