//! Draining Ray before a deadline: when Slurm warns of the time limit or is preempting the
//! job, the head tells Ray, through its drain API (`drain.py`, one Python process), that the
//! run's worker nodes go away when the grace is over. Ray then places nothing new on them,
//! and programs that watch for drained nodes (Ray Train, Tune, a user's own actor) have that
//! long to checkpoint. The head's own node is not drained: Ray ends a drained raylet as soon
//! as it is idle, and the command's driver (or each Jobs API job's) is attached to it.
//!
//! The drain runs beside the head's loop and never delays the command's signal or its stop;
//! the process carries the run's mark, so the teardown stops it if Ray does not answer.

use std::io::{BufReader, Read};
use std::process::Stdio;
use std::time::Duration;

use super::cluster::RayHead;
use super::python::ray_python;
use crate::bootstrap::byte_lines;
use crate::bootstrap::in_image;
use crate::bootstrap::node::say;
use crate::handoff::job_env;
use crate::sys::process::describe_status;

/// The script: GCS address, seconds until the deadline, and the reason's message.
const DRAIN_PY: &str = include_str!("drain.py");

/// Why the nodes go away, as Ray is told it.
pub(super) enum Deadline {
    /// Slurm's warning of the time limit.
    TimeLimit,
    /// Slurm is requeuing the job (preemption or `scontrol requeue`).
    Preemption,
}

/// Starts the drain of every worker node of the head's Ray, `within` from now; its lines go to
/// the log as they come.
pub(super) fn start(
    ray: &RayHead,
    mark: &str,
    node: &str,
    why: Deadline,
    job_id: &str,
    within: Duration,
) {
    let seconds = within.as_secs();
    let message = match why {
        Deadline::TimeLimit => {
            format!("Slurm's time limit of job {job_id} ends this node in {seconds} s")
        }
        Deadline::Preemption => {
            format!("Slurm is preempting job {job_id}: this node goes away in {seconds} s")
        }
    };
    let args = ["-c", DRAIN_PY, &ray.address, &seconds.to_string(), &message].map(Into::into);
    let mut cmd = ray_python(&args).env(job_env::RUN_MARK, mark);
    for (k, v) in ray.auth.env() {
        cmd = cmd.env(k, v);
    }
    let mut command = cmd.command();
    command.env_remove(job_env::RAY_AUTH_TOKEN);
    let spawned = in_image::wrap(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            say(
                node,
                format!(
                    "warning: cannot tell Ray to drain its nodes: {}",
                    cmd.spawn_error(e)
                ),
            );
            return;
        }
    };
    say(
        node,
        format!("telling Ray that the worker nodes go away in {seconds} s (Ray's drain API)"),
    );
    let node = node.to_owned();
    std::thread::spawn(move || {
        if let Some(out) = child.stdout.take() {
            byte_lines::for_each(BufReader::new(out), |line| {
                say(&node, format!("Ray drain: {}", byte_lines::text(line)));
                true
            });
        }
        let mut bytes = Vec::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_end(&mut bytes);
        }
        let err = String::from_utf8_lossy(&bytes);
        match child.wait() {
            Ok(status) if status.success() => {}
            // Stopped with the rest of the run (the teardown stops every marked process).
            Ok(status) if std::os::unix::process::ExitStatusExt::signal(&status).is_some() => {}
            Ok(status) => {
                let last = err
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                say(
                    &node,
                    format!(
                        "warning: Ray's drain API failed ({}): {last}",
                        describe_status(status)
                    ),
                );
            }
            Err(e) => say(&node, format!("warning: cannot wait for Ray's drain: {e}")),
        }
    });
}
