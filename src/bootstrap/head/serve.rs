//! The head of a persistent cluster (`rayslurm up`): once the cluster is ready it writes where
//! Ray's Jobs API is (`cluster.json` in the run's directory) and keeps the cluster alive for
//! the jobs `rayslurm exec` submits, watching the nodes as a command's run does. It ends when
//! asked to stop (`down`, scancel, the time limit: running jobs are stopped first, with the
//! stop grace), when a node fails, or, with `--idle-timeout`, after that long without a running
//! or pending job: it then releases the allocation itself. Every poll first checks that no other
//! user holds the dashboard's port on any address of the node (`JobsApi` does): if another user
//! took it, the token is not sent, the log says so, and `port-held` tells the login node.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::cluster::Head;
use super::command::check_nodes;
use super::drain::Deadline;
use super::elastic::Elastic;
use super::outcome::Outcome;
use crate::bootstrap::node::{TICK, say};
use crate::bootstrap::signals;
use crate::handoff::final_state::Ending;
use crate::handoff::port_held::PortHeld;
use crate::ray::jobs_api::{ApiError, JobsApi};

/// How often the head asks Ray whether any job runs or waits.
const IDLE_CHECK_EVERY: Duration = Duration::from_secs(5);

/// Whether a cluster last busy `idle_for` ago has been idle too long.
pub(super) fn idle_too_long(idle_for: Duration, idle_timeout: Option<u32>) -> bool {
    idle_timeout.is_some_and(|t| idle_for > Duration::from_secs(u64::from(t)))
}

/// Whether the cluster has gone without a job for too long, from the Jobs API's answers.
struct Idle {
    last_busy: Instant,
    last_asked: Option<Instant>,
    /// Another user holds the dashboard's port (said once until it is the user's again).
    squatted: bool,
    /// Where the login node is told that a port is held (`port-held`), and by which attempt.
    run_dir: PathBuf,
    attempt: u32,
}

impl Idle {
    /// Asks Ray, every [`IDLE_CHECK_EVERY`], whether a job runs or waits; the outcome of a
    /// cluster idle longer than `idle_timeout`.
    fn check(&mut self, api: &JobsApi, idle_timeout: Option<u32>, node: &str) -> Option<Outcome> {
        if self
            .last_asked
            .is_some_and(|t| t.elapsed() < IDLE_CHECK_EVERY)
        {
            return None;
        }
        self.last_asked = Some(Instant::now());
        // A cluster whose API does not answer counts as busy: never released by mistake.
        let jobs = api.jobs();
        // Another user on the dashboard's port, on any address of the node (Ray's dashboard
        // died and the port was taken): the token is not sent, the log says so once, and the
        // login node is told, so that `exec`, `queue` and `down` say why they send nothing.
        match &jobs {
            Err(ApiError::NotYours(why)) if !self.squatted => {
                self.squatted = true;
                say(node, format!("warning: {why}"));
                let held = PortHeld {
                    attempt: self.attempt,
                    message: why.to_string(),
                };
                if let Err(e) = held.write(&self.run_dir) {
                    say(node, format!("warning: {e:#}"));
                }
            }
            Err(ApiError::NotYours(_)) => {}
            _ if self.squatted => {
                self.squatted = false;
                PortHeld::clear(&self.run_dir);
            }
            _ => {}
        }
        if jobs.map_or(true, |jobs| jobs.iter().any(|j| j.active())) {
            self.last_busy = Instant::now();
        }
        idle_too_long(self.last_busy.elapsed(), idle_timeout).then(|| Outcome {
            code: 0,
            ending: Ending::Completed,
            message: Some(format!(
                "no job for {} s (--idle-timeout): the cluster released its allocation",
                self.last_busy.elapsed().as_secs()
            )),
        })
    }
}

impl Head<'_> {
    /// Serves jobs until the cluster is told to stop, fails or idles out.
    pub(super) fn serve(&mut self) -> Outcome {
        // No command here to give the rendezvous port to: let it go.
        self.master_held = None;
        let node = self.alloc.node.clone();
        let c = &self.args.cluster;
        let info = match self.publish() {
            Ok(Some(info)) => info,
            Ok(None) => {
                return Outcome::startup_failed(
                    "a persistent cluster needs Ray's dashboard (its Jobs API) and a run directory",
                );
            }
            Err(e) => return Outcome::startup_failed(format!("{e:#}")),
        };
        let token = info.token_file.as_deref();
        let api = match JobsApi::new(&format!("127.0.0.1:{}", info.dashboard_port), token) {
            Ok(api) => api,
            Err(e) => return Outcome::startup_failed(format!("cannot read Ray's token: {e}")),
        };
        say(
            &node,
            format!(
                "cluster up: Ray's Jobs API at {}{}; submit jobs with `rayslurm exec`",
                info.api_address(),
                c.serve
                    .idle_timeout
                    .map(|t| format!(", released after {t} s without a job"))
                    .unwrap_or_default()
            ),
        );
        let mut elastic = match Elastic::start(self) {
            Ok(elastic) => elastic,
            Err(why) => return Outcome::startup_failed(why),
        };
        let ray_mark = Some(self.started.run_mark());
        let mut last_check = Instant::now();
        let Some(run_dir) = self.args.run_dir.clone() else {
            return Outcome::startup_failed("a persistent cluster needs a run directory");
        };
        let mut idle = Idle {
            last_busy: Instant::now(),
            last_asked: None,
            squatted: false,
            run_dir,
            attempt: self.alloc.restart_count,
        };
        let outcome = loop {
            if let Some(signal) = signals::take().into_iter().find(|s| signals::stops(*s)) {
                // Jobs that run get the grace: Ray is told first that the worker nodes go away
                // (a cluster without one stops at once, with nothing to tell).
                if signal == signals::TIME_WARNING && api.any_active().unwrap_or(false) {
                    self.drain(Deadline::TimeLimit, c.nodes.command_grace(), &mut false);
                }
                break stopped(&api, signal, c.nodes.command_grace());
            }
            if let Some(why) = check_nodes(
                &mut self.started.workers,
                ray_mark.as_ref(),
                &node,
                &mut last_check,
            ) {
                break Outcome::of_command(1, Some(why), None);
            }
            if let Some(outcome) = idle.check(&api, c.serve.idle_timeout, &node) {
                break outcome;
            }
            if let Some(elastic) = &mut elastic {
                elastic.tick(&node);
            }
            std::thread::sleep(TICK);
        };
        if let Some(elastic) = elastic {
            elastic.stop(&node);
        }
        outcome
    }
}

/// A cluster told to stop: its running jobs are stopped, with the stop grace. Slurm's
/// warning is a signal of its own: the time limit is told from `down`.
fn stopped(api: &JobsApi, signal: Signal, grace: Duration) -> Outcome {
    // A failed request ends it: Ray's own stop follows.
    let stopped = api.stop_all(grace).map_or(0, |s| s.running);
    let (ending, why) = if signal == signals::TIME_WARNING {
        (Ending::TimeLimit, "the allocation's time limit".to_owned())
    } else {
        (
            Ending::Stopped,
            format!("{} (down or scancel)", signal.as_str()),
        )
    };
    Outcome {
        code: 0,
        ending,
        message: Some(format!(
            "the cluster was stopped by {why}; {stopped} running job(s) were stopped with the stop grace"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_idle_timeout_releases_a_cluster() {
        assert!(!idle_too_long(Duration::from_secs(10_000), None));
        assert!(!idle_too_long(Duration::from_secs(30), Some(30)));
        assert!(idle_too_long(Duration::from_secs(31), Some(30)));
    }
}
