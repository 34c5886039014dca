//! The head's drains of its worker jobs' Ray nodes (Ray's drain API, `drain.py`): a node whose
//! job Slurm preempts or whose time limit comes is drained with that deadline, so that Ray
//! places nothing new on it and Ray Train checkpoints in time; an idle node is drained before
//! its job is given back, and kept if Ray refuses because work landed on it since the last look
//! (the job is cancelled once Ray has taken the drain, or if Ray does not answer in time).

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use super::super::drain::{self, Answer, Deadline, Target};
use super::deadlines::Why;
use crate::bootstrap::node::say;
use crate::bootstrap::ray_auth::RayAuth;

/// How long the head waits for Ray's answer to an idle drain before it gives the job back
/// anyway (as it did before it asked).
const IDLE_ANSWER: Duration = Duration::from_secs(30);

/// The head's Ray, as the drains reach it.
pub(super) struct DrainTo {
    pub(super) address: String,
    pub(super) auth: RayAuth,
    pub(super) mark: String,
}

pub(super) struct Drains {
    to: Option<DrainTo>,
    answers: (Sender<Answer>, Receiver<Answer>),
    /// Idle jobs whose drain was asked, and since when.
    idle: BTreeMap<String, Instant>,
}

/// What came of idle drains since the last look.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Settled {
    /// Jobs to give back now.
    pub(super) cancel: Vec<String>,
    /// Jobs Ray found busy again: kept.
    pub(super) kept: Vec<String>,
}

impl Drains {
    /// Drains through the head's Ray; none without one (then idle jobs are given back at once).
    pub(super) fn new(to: Option<DrainTo>) -> Self {
        Self {
            to,
            answers: channel(),
            idle: BTreeMap::new(),
        }
    }

    fn target(&self) -> Option<Target<'_>> {
        self.to.as_ref().map(|t| Target {
            address: &t.address,
            auth: &t.auth,
            mark: &t.mark,
        })
    }

    /// Drains worker job `job_id`'s node, `within` seconds before it goes.
    pub(super) fn deadline(&self, node: &str, job_id: &str, why: Why, within: i64) {
        let Some(target) = self.target() else {
            return;
        };
        let within = Duration::from_secs(within.max(0).unsigned_abs());
        let message = match why {
            Why::Preempted => format!(
                "Slurm is preempting worker job {job_id}: this node goes away in {} s",
                within.as_secs()
            ),
            Why::TimeLimit => format!(
                "worker job {job_id}'s time limit ends this node in {} s",
                within.as_secs()
            ),
        };
        say(
            node,
            format!("draining worker job {job_id}'s node: {message}"),
        );
        drain::spawn(
            &target,
            node,
            (Deadline::Preemption, within, &message),
            &[job_id.to_owned()],
            None,
        );
    }

    /// Asks Ray to drain these idle jobs' nodes; returns those to give back at once (all, when
    /// there is no Ray to ask). Jobs already asked for are left as they are.
    pub(super) fn idle(&mut self, node: &str, ids: &[String]) -> Vec<String> {
        let fresh: Vec<String> = ids
            .iter()
            .filter(|id| !self.idle.contains_key(*id))
            .cloned()
            .collect();
        let Some(target) = self.target() else {
            return fresh;
        };
        if fresh.is_empty() {
            return fresh;
        }
        let message = "the elastic cluster's head gives this idle worker back";
        drain::spawn(
            &target,
            node,
            (Deadline::Idle, Duration::ZERO, message),
            &fresh,
            Some(self.answers.0.clone()),
        );
        let now = Instant::now();
        for id in fresh {
            self.idle.insert(id, now);
        }
        Vec::new()
    }

    /// Ray's answers so far, and the drains it has not answered in time.
    pub(super) fn settle(&mut self) -> Settled {
        let mut out = Settled::default();
        while let Ok(answer) = self.answers.1.try_recv() {
            if self.idle.remove(&answer.instance).is_none() {
                continue;
            }
            if answer.accepted {
                out.cancel.push(answer.instance);
            } else {
                out.kept.push(answer.instance);
            }
        }
        let late: Vec<String> = self
            .idle
            .iter()
            .filter(|(_, at)| at.elapsed() >= IDLE_ANSWER)
            .map(|(id, _)| id.clone())
            .collect();
        for id in late {
            self.idle.remove(&id);
            out.cancel.push(id);
        }
        out
    }

    /// Forgets a job that has ended.
    pub(super) fn forget(&mut self, id: &str) {
        self.idle.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_ray_idle_jobs_go_at_once_and_with_it_on_its_answer() {
        let mut d = Drains::new(None);
        assert_eq!(d.idle("n1", &["9".into()]), ["9"]);
        assert!(!d.idle.contains_key("9"));
        // Answers as drain.py's thread sends them, for drains asked.
        d.idle.insert("9".into(), Instant::now());
        d.idle.insert("10".into(), Instant::now());
        d.idle.insert("11".into(), Instant::now() - IDLE_ANSWER);
        let tx = d.answers.0.clone();
        tx.send(Answer {
            instance: "9".into(),
            accepted: true,
        })
        .unwrap();
        tx.send(Answer {
            instance: "10".into(),
            accepted: false,
        })
        .unwrap();
        tx.send(Answer {
            instance: "12".into(),
            accepted: true,
        })
        .unwrap();
        assert_eq!(
            d.settle(),
            Settled {
                cancel: vec!["9".into(), "11".into()],
                kept: vec!["10".into()]
            }
        );
        assert_eq!(d.settle(), Settled::default());
    }
}
