//! What `rayslurm cancel --signal` leaves in the run's private directory before it sends a
//! TERM, INT or HUP, so that the bootstrap passes the signal on to the command instead of
//! stopping the run: the signal and the attempt it is meant for (`TERM 4242.1`).
//!
//! The run directory outlives the attempt (a requeue) and is shared with `--after` runs, so a
//! request that was never used up (the signal came during start-up, `scancel --batch` failed)
//! must not turn a later real SIGTERM (scancel, preemption) into one that only reaches the
//! command: a request counts only for its own job and attempt, and every attempt clears what
//! it finds when it starts.

use std::fmt;

use super::signal_name::SignalName;

/// A request for one signal to reach the command of one attempt of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignalRequest {
    pub(crate) signal: SignalName,
    pub(crate) job_id: String,
    /// Slurm's restart count of the attempt; `None` when the login node could not learn it
    /// (then any attempt of the job takes it; the attempt's own clearing at start still holds).
    pub(crate) restart: Option<u32>,
}

impl SignalRequest {
    /// The request's file content, one line.
    pub(crate) fn line(&self) -> String {
        match self.restart {
            Some(r) => format!("{} {}.{r}\n", self.signal, self.job_id),
            None => format!("{} {}\n", self.signal, self.job_id),
        }
    }

    /// The request in a file's content; `None` for anything else (an older format with the
    /// signal's name alone is not anyone's request).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut words = text.split_whitespace();
        let signal = words.next()?.parse().ok()?;
        let attempt = words.next()?;
        if words.next().is_some() {
            return None;
        }
        let (job_id, restart) = match attempt.split_once('.') {
            Some((job, r)) => (job, Some(r.parse().ok()?)),
            None => (attempt, None),
        };
        if job_id.is_empty() {
            return None;
        }
        Some(Self {
            signal,
            job_id: job_id.to_owned(),
            restart,
        })
    }

    /// Whether the request is meant for this attempt of this job.
    pub(crate) fn is_for(&self, job_id: &str, restart: u32) -> bool {
        self.job_id == job_id && self.restart.is_none_or(|r| r == restart)
    }
}

impl fmt::Display for SignalRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.line().trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::signal::Signal;

    #[test]
    fn a_request_names_its_job_and_attempt_and_counts_for_them_alone() {
        let r = SignalRequest {
            signal: SignalName(Signal::SIGTERM),
            job_id: "4242".into(),
            restart: Some(1),
        };
        assert_eq!(r.line(), "TERM 4242.1\n");
        assert_eq!(SignalRequest::parse(&r.line()), Some(r.clone()));
        assert!(r.is_for("4242", 1));
        assert!(!r.is_for("4242", 0), "an earlier attempt's");
        assert!(!r.is_for("4242", 2), "a later attempt's");
        assert!(!r.is_for("4243", 1), "an --after run's");
        let any = SignalRequest::parse("INT 4242\n").unwrap();
        assert_eq!(any.restart, None);
        assert!(any.is_for("4242", 3) && !any.is_for("42", 3));
        for stale in [
            "TERM\n",
            "",
            "TERM 4242.x",
            "TERM .1",
            "NOPE 4242.0",
            "TERM 1.0 2",
        ] {
            assert_eq!(SignalRequest::parse(stale), None, "{stale:?}");
        }
    }
}
