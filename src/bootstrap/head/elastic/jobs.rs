//! The worker jobs an elastic cluster's head has: submitted (with the run's own script, from
//! a clean Slurm environment), followed in `squeue` and in the run's `workers/` directory
//! (where each says its node joined), given back with `scancel`, and written down in
//! `workers.json` for `status`, `scale` and the head's watchdog.

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::{DateTime, Local, SecondsFormat};

use super::deadlines::{Seen, Watch};
use super::drains::Drains;
use super::plan::{JobView, Phase};
use super::ray_status::Report;
use crate::bootstrap::node::say;
use crate::handoff::elastic::{WorkerJob, WorkerJobs, worker_dir};
use crate::handoff::worker_types::WorkerType;
use crate::slurm::{control, query, sbatch};

/// Start failures in a row (a refused submission, a job that ended before joining) after
/// which growing pauses.
pub(super) const MAX_FAILURES: u32 = 5;

/// One worker job.
#[derive(Debug, Clone)]
struct Tracked {
    id: String,
    /// Its worker type.
    kind: String,
    phase: Phase,
    node: Option<String>,
    ip: Option<String>,
    since: DateTime<Local>,
    idle_s: Option<u64>,
    /// Its end as Slurm says it, and what the head did about it.
    watch: Watch,
}

impl Tracked {
    /// Its node has joined Ray, at `ip`.
    fn joined(&mut self, ip: String, node: &str) {
        say(
            node,
            format!(
                "worker job {} joined{}",
                self.id,
                self.node
                    .as_deref()
                    .map_or(String::new(), |n| format!(": node {n}"))
            ),
        );
        self.ip = Some(ip);
        self.phase = Phase::Joined;
        self.since = Local::now();
    }
}

/// A worker type as the head submits it: the script its jobs run and sbatch's options for them.
pub(super) struct Kind {
    pub(super) spec: WorkerType,
    pub(super) script: PathBuf,
    pub(super) options: Vec<String>,
}

/// The head's worker jobs and what it knows of them.
pub(super) struct Jobs {
    jobs: Vec<Tracked>,
    pub(super) run_dir: PathBuf,
    pub(super) kinds: Vec<Kind>,
    pub(super) file: WorkerJobs,
    failures: u32,
    pub(super) paused: Option<String>,
    /// Lost worker jobs that `--replace-failed` wants back, by type.
    pub(super) replacements: BTreeMap<String, u32>,
    replace_failed: bool,
    pub(super) drains: Drains,
    /// Each partition's GraceTime, once asked.
    graces: BTreeMap<String, i64>,
}

impl Jobs {
    pub(super) fn new(
        run_dir: PathBuf,
        kinds: Vec<Kind>,
        file: WorkerJobs,
        replace_failed: bool,
        drains: Drains,
    ) -> Self {
        Self {
            jobs: Vec::new(),
            run_dir,
            kinds,
            file,
            failures: 0,
            paused: None,
            replacements: BTreeMap::new(),
            replace_failed,
            drains,
            graces: BTreeMap::new(),
        }
    }

    /// The jobs as the plan sees them.
    pub(super) fn views(&self) -> Vec<JobView> {
        self.jobs
            .iter()
            .map(|j| JobView {
                id: j.id.clone(),
                kind: j.kind.clone(),
                phase: j.phase,
                idle_s: j.idle_s,
                needed: false,
            })
            .collect()
    }

    /// Submits `n` jobs of worker type `kind`.
    pub(super) fn submit(&mut self, kind: &str, n: u32, node: &str) {
        let Some(k) = self.kinds.iter().find(|k| k.spec.name == kind) else {
            return;
        };
        for _ in 0..n {
            if let Some(r) = self.replacements.get_mut(kind) {
                *r = r.saturating_sub(1);
            }
            match sbatch::sbatch_from_job(&k.options, &k.script) {
                Ok(id) => {
                    say(node, format!("submitted worker job {id} ({kind})"));
                    self.jobs.push(Tracked {
                        id,
                        kind: kind.to_owned(),
                        phase: Phase::Pending,
                        node: None,
                        ip: None,
                        since: Local::now(),
                        idle_s: None,
                        watch: Watch::default(),
                    });
                }
                Err(why) => {
                    self.failed(node, format!("Slurm refused a worker job: {why}"));
                    break;
                }
            }
        }
    }

    /// Gives these jobs back.
    pub(super) fn cancel(&mut self, ids: &[String], node: &str, why: &str) {
        let given: std::collections::HashSet<&String> = ids.iter().collect();
        for job in self.jobs.iter_mut().filter(|j| given.contains(&j.id)) {
            // One given back already is cancelled again (in case), without a second word.
            if job.phase != Phase::Stopping {
                say(node, format!("giving back worker job {} ({why})", job.id));
            }
            job.phase = Phase::Stopping;
            job.since = Local::now();
        }
        if let Err(e) = control::cancel(ids) {
            say(node, format!("warning: {e}"));
        }
    }

    /// Gives every job back, at the cluster's end.
    pub(super) fn stop_all(&mut self, node: &str) {
        let ids: Vec<String> = self.jobs.iter().map(|j| j.id.clone()).collect();
        if !ids.is_empty() {
            self.cancel(&ids, node, "the cluster ends");
        }
        self.jobs.clear();
        self.write(node);
    }

    /// Notes the running jobs whose node has joined since the last look (a file in the run's
    /// directory: no call to Slurm); whether any has.
    pub(super) fn note_joined(&mut self, node: &str) -> bool {
        let mut any = false;
        for job in self
            .jobs
            .iter_mut()
            .filter(|j| matches!(j.phase, Phase::Pending | Phase::Starting))
        {
            if let Some(ip) = joined_ip(&self.run_dir, &job.id) {
                job.joined(ip, node);
                any = true;
            }
        }
        any
    }

    /// Brings every job up to date: Slurm's word on where it stands, whether its node joined,
    /// and Ray's on how long the node has been idle.
    pub(super) fn poll(&mut self, report: Option<&Report>, node: &str) {
        if self.jobs.is_empty() {
            return;
        }
        let ids: Vec<&str> = self.jobs.iter().map(|j| j.id.as_str()).collect();
        let Ok(queue) = query::squeue(&ids) else {
            return; // Slurm not answering: nothing is taken for ended.
        };
        let mut ended = Vec::new();
        let now = Local::now().naive_local();
        let seen = self.ends();
        for job in &mut self.jobs {
            let entry = query::own_line(&queue, &job.id);
            let state = entry.map(|e| e.state.clone());
            let phase = state.as_ref().map_or(query::Phase::Ended, |s| s.phase());
            job.node = entry.and_then(|e| e.nodelist.clone()).or(job.node.take());
            if matches!(phase, query::Phase::Ended | query::Phase::Ending) {
                let name = state.map_or("gone from Slurm's queue".to_owned(), |s| {
                    s.as_str().to_owned()
                });
                ended.push((job.clone(), name));
                continue;
            }
            let next = match (job.phase, phase) {
                (Phase::Stopping, _) => Phase::Stopping,
                (Phase::Leaving, _) => Phase::Leaving,
                (_, query::Phase::Pending) => Phase::Pending,
                (Phase::Joined, _) => Phase::Joined,
                _ => match joined_ip(&self.run_dir, &job.id) {
                    Some(ip) => {
                        job.joined(ip, node);
                        Phase::Joined
                    }
                    None => Phase::Starting,
                },
            };
            if next != job.phase {
                job.phase = next;
                job.since = Local::now();
            }
            job.idle_s = report.and_then(|r| {
                r.idle_s_of_instance(&job.id)
                    .or_else(|| r.idle_s(job.ip.as_deref()?))
            });
            if matches!(job.phase, Phase::Joined | Phase::Leaving)
                && let Some(k) = self.kinds.iter().find(|k| k.spec.name == job.kind)
                && let Some(seen) = seen.get(&job.id)
            {
                let step = job.watch.see(*seen, now, &k.spec, self.replace_failed);
                if let Some((why, within)) = step.drain {
                    self.drains.deadline(node, &job.id, why, within);
                }
                if step.replace {
                    say(
                        node,
                        format!(
                            "submitting a replacement for worker job {} ({})",
                            job.id, job.kind
                        ),
                    );
                    *self.replacements.entry(job.kind.clone()).or_default() += 1;
                }
                if job.watch.going.is_some() && job.phase == Phase::Joined {
                    job.phase = Phase::Leaving;
                    job.since = Local::now();
                }
            }
        }
        self.jobs
            .retain(|j| !ended.iter().any(|(e, _)| e.id == j.id));
        if self.jobs.iter().any(|j| j.phase == Phase::Joined) {
            self.failures = 0;
        }
        for (job, state) in ended {
            self.ended(job, &state, node);
        }
    }

    /// What Slurm says of the running jobs' ends (one `squeue`), with a preempted job's grace
    /// from its partition (asked once a partition).
    fn ends(&mut self) -> BTreeMap<String, Seen> {
        let running: Vec<&str> = self
            .jobs
            .iter()
            .filter(|j| matches!(j.phase, Phase::Joined | Phase::Leaving))
            .map(|j| j.id.as_str())
            .collect();
        let Ok(ends) = query::job_ends(&running) else {
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        for e in ends {
            let preempted_end = e.preempted_at.map(|at| {
                let grace = e.partition.as_deref().map_or(0, |p| {
                    *self
                        .graces
                        .entry(p.to_owned())
                        .or_insert_with(|| query::partition_grace(p).unwrap_or(0))
                });
                at + chrono::Duration::seconds(grace)
            });
            out.insert(
                e.job_id,
                Seen {
                    end: e.end,
                    preempted_end,
                },
            );
        }
        out
    }

    /// A job that has left: given back, lost after joining, or failed before.
    fn ended(&mut self, job: Tracked, state: &str, node: &str) {
        let _ = std::fs::remove_file(worker_dir(&self.run_dir).join(format!("{}.joined", job.id)));
        self.drains.forget(&job.id);
        match job.phase {
            Phase::Stopping | Phase::Leaving => {
                say(node, format!("worker job {} has ended ({state})", job.id));
            }
            Phase::Joined => {
                say(
                    node,
                    format!(
                        "warning: worker job {} (node {}) ended while in the cluster ({state}); Ray goes on with the other nodes{}",
                        job.id,
                        job.node.as_deref().unwrap_or("?"),
                        if self.replace_failed {
                            ", and a replacement is submitted"
                        } else {
                            ""
                        }
                    ),
                );
                if self.replace_failed {
                    *self.replacements.entry(job.kind.clone()).or_default() += 1;
                }
            }
            Phase::Pending | Phase::Starting => {
                let log = worker_dir(&self.run_dir).join(format!("{}.log", job.id));
                self.failed(
                    node,
                    format!(
                        "worker job {} ended before its node joined ({state}); its log: {}",
                        job.id,
                        log.display()
                    ),
                );
            }
        }
    }

    fn failed(&mut self, node: &str, why: String) {
        self.failures += 1;
        say(node, format!("warning: {why}"));
        if self.failures >= MAX_FAILURES && self.paused.is_none() {
            let paused = format!(
                "growing paused after {} failures in a row; the last: {why}",
                self.failures
            );
            say(
                node,
                format!("warning: {paused}; `rayslurm scale` tries again"),
            );
            self.paused = Some(paused);
        }
    }

    /// A manual request un-pauses growing.
    pub(super) fn resume(&mut self) {
        self.paused = None;
        self.failures = 0;
    }

    /// Writes `workers.json`.
    pub(super) fn write(&mut self, node: &str) {
        let stamp = |t: &DateTime<Local>| t.to_rfc3339_opts(SecondsFormat::Secs, false);
        self.file.jobs = self
            .jobs
            .iter()
            .map(|j| WorkerJob {
                job_id: j.id.clone(),
                worker_type: j.kind.clone(),
                state: match j.phase {
                    Phase::Pending => "PENDING",
                    Phase::Starting => "STARTING",
                    Phase::Joined => "RUNNING",
                    Phase::Stopping => "STOPPING",
                    Phase::Leaving => "DRAINING",
                }
                .to_owned(),
                node: j.node.clone(),
                since: stamp(&j.since),
                idle_s: j.idle_s,
            })
            .collect();
        self.file.paused = self.paused.clone();
        self.file.updated_at = stamp(&Local::now());
        if let Err(e) = self.file.write(&self.run_dir) {
            say(node, format!("warning: {e:#}"));
        }
    }
}

/// The IP a worker job's node joined at, once it has (`workers/JOB.joined`).
fn joined_ip(run_dir: &std::path::Path, job_id: &str) -> Option<String> {
    let text =
        std::fs::read_to_string(worker_dir(run_dir).join(format!("{job_id}.joined"))).ok()?;
    Some(text.trim().to_owned()).filter(|ip| !ip.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs() -> Jobs {
        let file = WorkerJobs {
            head_job: "7".into(),
            attempt: 0,
            max_nodes: 3,
            head_nodes: 1,
            jobs: Vec::new(),
            paused: None,
            unplaceable: Vec::new(),
            waiting_for_room: Vec::new(),
            updated_at: String::new(),
        };
        Jobs::new(
            "/nonexistent".into(),
            Vec::new(),
            file,
            true,
            Drains::new(None),
        )
    }

    #[test]
    fn growing_pauses_after_five_failures_in_a_row_and_a_request_resumes_it() {
        let mut j = jobs();
        for k in 1..MAX_FAILURES {
            j.failed("n1", format!("failure {k}"));
            assert_eq!(j.paused, None);
        }
        j.failed(
            "n1",
            "Slurm refused a worker job: QOSMaxSubmitJobPerUserLimit".into(),
        );
        let paused = j.paused.clone().unwrap();
        assert!(
            paused.contains("after 5 failures in a row")
                && paused.contains("QOSMaxSubmitJobPerUserLimit"),
            "{paused}"
        );
        j.resume();
        assert_eq!(j.paused, None);
        j.failed("n1", "again".into());
        assert_eq!(j.paused, None, "the count starts again");
    }

    #[test]
    fn a_lost_joined_job_is_replaced_and_a_job_that_never_joined_is_a_failure() {
        let mut j = jobs();
        let job = |phase| Tracked {
            id: "9".into(),
            kind: "gpu".into(),
            phase,
            node: Some("node2".into()),
            ip: None,
            since: Local::now(),
            idle_s: None,
            watch: Watch::default(),
        };
        let gpu = |j: &Jobs| j.replacements.get("gpu").copied().unwrap_or(0);
        j.ended(job(Phase::Joined), "NODE_FAIL", "n1");
        assert_eq!((gpu(&j), j.failures), (1, 0));
        j.ended(job(Phase::Starting), "FAILED", "n1");
        assert_eq!((gpu(&j), j.failures), (1, 1));
        j.ended(job(Phase::Stopping), "CANCELLED", "n1");
        assert_eq!((gpu(&j), j.failures), (1, 1));
    }
}
