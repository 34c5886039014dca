//! What an elastic cluster's head does next with its worker jobs, decided from what it knows
//! (a pure function, tested here): grow by one job while Ray reports work it cannot place,
//! give back a joined job whose node has been idle too long, replace lost ones under
//! `--replace-failed`, and carry out what `rayslurm scale` asked, always within the limits.

use std::time::Duration;

use crate::handoff::elastic::ScaleRequest;

/// How long after a submission the head waits before growing again: a node that joins needs
/// a few seconds to take the work that made it grow.
pub(super) const GROW_EVERY: Duration = Duration::from_secs(15);

/// Where a worker job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// In Slurm's queue.
    Pending,
    /// Running, its Ray not yet joined.
    Starting,
    /// Its node is one of Ray's.
    Joined,
    /// Given back (`scancel` sent), not yet gone.
    Stopping,
}

/// A worker job as the plan sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct JobView {
    pub(super) id: String,
    pub(super) phase: Phase,
    /// Seconds its Ray node has run nothing (once joined).
    pub(super) idle_s: Option<u64>,
}

/// The cluster's limits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) max_nodes: u32,
    pub(super) head_nodes: u32,
    pub(super) max_pending: u32,
    pub(super) idle_timeout: u64,
}

/// What the head knows now.
#[derive(Debug, Clone, Default)]
pub(super) struct Inputs {
    pub(super) jobs: Vec<JobView>,
    /// Tasks, actors and placement groups Ray cannot place (0 when Ray's report is stale).
    pub(super) demand: u32,
    /// Lost worker jobs that `--replace-failed` wants back.
    pub(super) replacements: u32,
    /// Growing is paused after repeated failures.
    pub(super) paused: bool,
    /// Time since the last submission, if any.
    pub(super) since_submit: Option<Duration>,
    pub(super) request: Option<ScaleRequest>,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Action {
    Submit(u32),
    Cancel(Vec<String>),
}

pub(super) fn plan(limits: &Limits, now: &Inputs) -> Vec<Action> {
    let live: Vec<&JobView> = now
        .jobs
        .iter()
        .filter(|j| j.phase != Phase::Stopping)
        .collect();
    let nodes = limits.head_nodes + live.len() as u32;
    let room = limits.max_nodes.saturating_sub(nodes);
    if let Some(request) = now.request {
        return asked(request, limits, &live, nodes, room);
    }
    let mut actions = Vec::new();
    if now.demand == 0 {
        let idle: Vec<String> = live
            .iter()
            .filter(|j| {
                j.phase == Phase::Joined && j.idle_s.is_some_and(|s| s >= limits.idle_timeout)
            })
            .map(|j| j.id.clone())
            .collect();
        if !idle.is_empty() {
            actions.push(Action::Cancel(idle));
        }
    }
    let waiting = live
        .iter()
        .filter(|j| matches!(j.phase, Phase::Pending | Phase::Starting))
        .count() as u32;
    let want = u32::from(now.demand > 0) + now.replacements;
    let due = now.since_submit.is_none_or(|t| t >= GROW_EVERY);
    let n = want
        .min(room)
        .min(limits.max_pending.saturating_sub(waiting));
    if n > 0 && due && !now.paused {
        actions.push(Action::Submit(n));
    }
    actions
}

/// `rayslurm scale`: `+N` and `=N` within the limits; `-N` gives back waiting jobs first
/// (newest first), then joined ones, idlest first.
fn asked(
    request: ScaleRequest,
    limits: &Limits,
    live: &[&JobView],
    nodes: u32,
    room: u32,
) -> Vec<Action> {
    let remove = |n: u32| {
        let mut order: Vec<&&JobView> = live.iter().collect();
        order.sort_by_key(|j| {
            (
                j.phase == Phase::Joined,
                std::cmp::Reverse(j.idle_s.unwrap_or(0)),
            )
        });
        let waiting_newest_first = order
            .iter()
            .filter(|j| j.phase != Phase::Joined)
            .rev()
            .chain(order.iter().filter(|j| j.phase == Phase::Joined));
        let ids: Vec<String> = waiting_newest_first
            .take(n as usize)
            .map(|j| j.id.clone())
            .collect();
        if ids.is_empty() {
            Vec::new()
        } else {
            vec![Action::Cancel(ids)]
        }
    };
    let add = |n: u32| {
        let n = n.min(room);
        if n == 0 {
            Vec::new()
        } else {
            vec![Action::Submit(n)]
        }
    };
    match request {
        ScaleRequest::Add(n) => add(n),
        ScaleRequest::Remove(n) => remove(n),
        ScaleRequest::To(total) => {
            let total = total.clamp(limits.head_nodes, limits.max_nodes);
            if total >= nodes {
                add(total - nodes)
            } else {
                remove(nodes - total)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_nodes: 3,
        head_nodes: 1,
        max_pending: 2,
        idle_timeout: 60,
    };

    fn job(id: &str, phase: Phase, idle_s: Option<u64>) -> JobView {
        JobView {
            id: id.into(),
            phase,
            idle_s,
        }
    }

    #[test]
    fn demand_grows_by_one_job_at_a_time_within_the_limits() {
        let mut now = Inputs {
            demand: 4,
            ..Inputs::default()
        };
        assert_eq!(plan(&LIMITS, &now), [Action::Submit(1)]);
        now.since_submit = Some(Duration::from_secs(3));
        now.jobs = vec![job("9", Phase::Pending, None)];
        assert_eq!(plan(&LIMITS, &now), [], "too soon after the last");
        now.since_submit = Some(GROW_EVERY);
        assert_eq!(plan(&LIMITS, &now), [Action::Submit(1)]);
        now.jobs.push(job("10", Phase::Joined, Some(0)));
        assert_eq!(plan(&LIMITS, &now), [], "3 nodes is the most");
        now.paused = true;
        now.jobs.pop();
        assert_eq!(plan(&LIMITS, &now), [], "paused");
    }

    #[test]
    fn no_more_jobs_wait_in_the_queue_than_allowed() {
        let now = Inputs {
            demand: 1,
            jobs: vec![
                job("9", Phase::Pending, None),
                job("10", Phase::Starting, None),
            ],
            ..Inputs::default()
        };
        let limits = Limits {
            max_nodes: 8,
            ..LIMITS
        };
        assert_eq!(plan(&limits, &now), []);
    }

    #[test]
    fn an_idle_node_is_given_back_only_without_demand() {
        let mut now = Inputs {
            jobs: vec![
                job("9", Phase::Joined, Some(61)),
                job("10", Phase::Joined, Some(5)),
            ],
            ..Inputs::default()
        };
        assert_eq!(plan(&LIMITS, &now), [Action::Cancel(vec!["9".into()])]);
        now.demand = 1;
        assert_eq!(plan(&LIMITS, &now), []);
    }

    #[test]
    fn lost_jobs_are_replaced_without_demand() {
        let now = Inputs {
            replacements: 1,
            ..Inputs::default()
        };
        assert_eq!(plan(&LIMITS, &now), [Action::Submit(1)]);
    }

    #[test]
    fn scale_adds_removes_and_sets_within_the_limits() {
        let mut now = Inputs {
            request: Some(ScaleRequest::Add(5)),
            paused: true,
            ..Inputs::default()
        };
        assert_eq!(plan(&LIMITS, &now), [Action::Submit(2)], "at most 3 nodes");
        now.jobs = vec![
            job("9", Phase::Joined, Some(50)),
            job("10", Phase::Joined, Some(90)),
            job("11", Phase::Pending, None),
        ];
        now.request = Some(ScaleRequest::Remove(2));
        assert_eq!(
            plan(&LIMITS, &now),
            [Action::Cancel(vec!["11".into(), "10".into()])]
        );
        now.request = Some(ScaleRequest::To(1));
        assert_eq!(
            plan(&LIMITS, &now),
            [Action::Cancel(vec!["11".into(), "10".into(), "9".into()])]
        );
        now.jobs.clear();
        now.request = Some(ScaleRequest::To(9));
        assert_eq!(plan(&LIMITS, &now), [Action::Submit(2)]);
        now.request = Some(ScaleRequest::Remove(1));
        assert_eq!(plan(&LIMITS, &now), []);
    }
}
