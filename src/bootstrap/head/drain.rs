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
use std::sync::mpsc::Sender;
use std::time::Duration;

use super::cluster::RayHead;
use super::python::ray_python;
use crate::bootstrap::byte_lines;
use crate::bootstrap::in_image;
use crate::bootstrap::node::say;
use crate::bootstrap::ray_auth::RayAuth;
use crate::handoff::job_env;
use crate::sys::process::describe_status;

/// The script: GCS address, seconds until the deadline, the reason's message, the reason, and
/// the nodes' instances.
const DRAIN_PY: &str = include_str!("drain.py");

/// Why the nodes go away, as Ray is told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Deadline {
    /// Slurm's warning of the time limit.
    TimeLimit,
    /// Slurm is requeuing the job (preemption or `scontrol requeue`).
    Preemption,
    /// The head gives an idle worker back: Ray refuses if the node has work again.
    Idle,
}

/// One node's answer: its instance (an elastic worker's job id; `-` for another node), and
/// whether Ray took the drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Answer {
    pub(super) instance: String,
    pub(super) accepted: bool,
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
    let message = match why {
        Deadline::TimeLimit => format!(
            "Slurm's time limit of job {job_id} ends this node in {} s",
            within.as_secs()
        ),
        Deadline::Preemption | Deadline::Idle => format!(
            "Slurm is preempting job {job_id}: this node goes away in {} s",
            within.as_secs()
        ),
    };
    let target = Target {
        address: &ray.address,
        auth: &ray.auth,
        mark,
    };
    say(
        node,
        format!(
            "telling Ray that the worker nodes go away in {} s (Ray's drain API)",
            within.as_secs()
        ),
    );
    spawn(&target, node, (why, within, &message), &[], None);
}

/// The head's Ray, as a drain reaches it.
pub(super) struct Target<'a> {
    pub(super) address: &'a str,
    pub(super) auth: &'a RayAuth,
    pub(super) mark: &'a str,
}

/// Drains the nodes of these instances (none: every worker node) for `why`, `within` from now
/// (Ray's deadline), saying `message`; each node's answer goes to the log, and to `answers`.
pub(super) fn spawn(
    target: &Target,
    node: &str,
    (why, within, message): (Deadline, Duration, &str),
    instances: &[String],
    answers: Option<Sender<Answer>>,
) {
    let kind = if why == Deadline::Idle {
        "idle"
    } else {
        "preemption"
    };
    let seconds = within.as_secs().to_string();
    let mut args: Vec<std::ffi::OsString> =
        ["-c", DRAIN_PY, target.address, &seconds, message, kind]
            .into_iter()
            .map(Into::into)
            .collect();
    args.extend(instances.iter().map(Into::into));
    let mut cmd = ray_python(&args).env(job_env::RUN_MARK, target.mark);
    for (k, v) in target.auth.env() {
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
    let node = node.to_owned();
    std::thread::spawn(move || {
        if let Some(out) = child.stdout.take() {
            byte_lines::for_each(BufReader::new(out), |line| {
                let text = byte_lines::text(line);
                say(&node, format!("Ray drain: {text}"));
                if let (Some(answers), Some(answer)) = (&answers, answer_of(&text)) {
                    let _ = answers.send(answer);
                }
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

/// A line of `drain.py` as an answer: `drained|refused ADDRESS[ (worker job ID)][: why]`; a
/// node of no worker job is answered as instance `-`.
fn answer_of(line: &str) -> Option<Answer> {
    let accepted = if line.starts_with("drained ") {
        true
    } else if line.starts_with("refused ") {
        false
    } else {
        return None;
    };
    let instance = line
        .split_once("(worker job ")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map_or("-", |(id, _)| id)
        .to_owned();
    Some(Answer { instance, accepted })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_nodes_answer_is_read_from_its_line() {
        assert_eq!(
            answer_of("drained 10.0.0.2 (worker job 42)"),
            Some(Answer {
                instance: "42".into(),
                accepted: true
            })
        );
        assert_eq!(
            answer_of("refused 10.0.0.3 (worker job 43): The node is not idle"),
            Some(Answer {
                instance: "43".into(),
                accepted: false
            })
        );
        assert_eq!(
            answer_of("drained 10.0.0.4"),
            Some(Answer {
                instance: "-".into(),
                accepted: true
            })
        );
        assert_eq!(answer_of("Traceback (most recent call last):"), None);
    }
}
