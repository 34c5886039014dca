//! A test's turn on the test cluster: at most `RAYSLURM_TEST_AT_ONCE` end-to-end tests hold it
//! at once, the longest ([`LONG_FIRST`]) first, and each turn's times go to
//! `RAYSLURM_TEST_TIMES` when asked for.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

/// A test's turn on the cluster: shared with other tests, or the crash partition for a test
/// that kills a node (one such test at a time). Held until the test ends; then, when
/// `RAYSLURM_TEST_TIMES` names a file, one line is added to it: the test's name, its kind of
/// turn, the seconds it waited for the turn and the seconds it held it, and when it got it
/// (seconds after the first test asked for a turn; see docs/testing.md, "Timing a run").
pub struct Turn {
    crash: Option<MutexGuard<'static, ()>>,
    /// Its place among the tests that hold the cluster at once; given up after the line.
    _admitted: Admitted,
    test: String,
    asked: Instant,
    given: Instant,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let Some(file) = std::env::var_os("RAYSLURM_TEST_TIMES") else {
            return;
        };
        let line = format!(
            "{}\t{}\twaited {:.1}\tran {:.1}\tat {:.1}\n",
            self.test,
            if self.crash.is_some() {
                "crash"
            } else {
                "shared"
            },
            (self.given - self.asked).as_secs_f64(),
            self.given.elapsed().as_secs_f64(),
            (self.given - *FIRST_ASKED.get_or_init(Instant::now)).as_secs_f64(),
        );
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        if let Err(e) = appended {
            eprintln!("cannot add to RAYSLURM_TEST_TIMES: {e}");
        }
    }
}

/// The tests that hold the cluster longest, longest first (as a whole run measured them with
/// `RAYSLURM_TEST_TIMES`, docs/testing.md): they get their turn first, so that the suite does
/// not end with one of them running alone.
/// Each is named as libtest lists it; `long_first_names_are_tests` keeps the list true.
pub const LONG_FIRST: &[&str] = &[
    "elastic::e2e_elastic::an_elastic_cluster_grows_with_demand_and_shrinks_when_idle",
    "doc_examples::e2e_doc_examples::e2e_doc_examples_clusters",
    "python_api::e2e_python::the_python_docs_examples_run",
    "clusters::e2e_exec_ranks::exec_per_node_runs_one_rank_on_each_node",
    "clusters::e2e_clusters::two_clusters_on_one_node_see_only_their_own_jobs_and_the_time_limit_ends_one",
    "doc_examples::e2e_doc_examples::e2e_doc_examples_readme_every_command",
    "elastic::e2e_elastic::a_lost_worker_job_is_replaced_and_queued_jobs_still_succeed",
    "shared_cluster::e2e_auth::a_client_without_the_token_is_refused_on_every_port",
    "runs::e2e_slurm_calls::a_followed_run_asks_slurm_once_every_ten_seconds_and_its_nodes_never_poll",
    "shared_cluster::e2e_token_doors::another_member_can_neither_use_the_victims_dashboard_forward_nor_get_the_token_on_its_port",
    "elastic::e2e_elastic::the_time_limit_drains_and_ends_an_elastic_clusters_worker_jobs",
    "clusters::e2e_clusters::a_cluster_runs_many_jobs_through_rays_queue",
    "long_runs::e2e_long_runs::a_job_slurm_requeues_as_preemption_does_resumes_on_its_next_attempt",
    "runs::e2e_slurm_calls::an_idle_cluster_and_its_queue_ask_slurm_almost_never",
    "gpus::e2e_gpus::e2e_candidates_take_the_type_with_free_nodes_and_gpus_shows_what_is_held",
    "gpus::e2e_gpus::e2e_a_whole_node_tells_ray_the_gpus_asked_for_not_all_it_has",
    "ray_yaml::e2e_ray_yaml::e2e_a_ray_cluster_yamls_node_types_grow_with_the_work_that_needs_them",
    "ray_yaml::e2e_ray_yaml::e2e_a_ray_cluster_yaml_drives_up_exec_submit_rsync_up_attach_dashboard_and_down",
    "doc_examples::e2e_doc_examples::e2e_doc_examples_clusters_from_ray_up",
    "bootstrap::e2e_bootstrap::three_nodes_form_a_cluster_and_the_command_sees_them",
    "bootstrap::e2e_stops::the_time_limit_stops_the_run_cleanly",
    "bootstrap::e2e_setup::ray_jobs_set_up_every_node_first_and_a_setup_longer_than_the_ready_timeout_does_not_fail_them",
    "bootstrap::e2e_failures::a_ready_timeout_fails_the_job_and_stops_starting_workers",
    "clusters::e2e_clusters::an_idle_cluster_releases_its_allocation",
    "shared_cluster::e2e_shared::a_group_member_can_neither_run_code_as_the_victim_nor_read_or_destroy_their_files",
    "bootstrap::e2e_bootstrap::two_jobs_share_a_node_and_ray_is_told_each_ones_cpu_and_memory",
    "shared_cluster::e2e_token_doors::a_squatter_on_a_launch_runs_dashboard_port_is_never_sent_the_token",
    "doc_examples::e2e_doc_examples::e2e_doc_examples_readme_a_first_run_there",
    "launch::e2e_secrets::an_exec_secret_reaches_the_job_and_never_ray",
    "per_node::e2e_per_node::a_setup_that_fails_on_one_node_fails_the_run_naming_it",
    "long_runs::e2e_long_runs::the_time_limit_warns_the_command_which_checkpoints_and_the_requeued_run_resumes",
    "per_node::e2e_per_node::a_rank_that_fails_gives_its_code_and_the_others_are_stopped",
    "shared_cluster::e2e_ports::several_runs_share_one_node_while_another_user_holds_ports_there",
    // Measured at 8 at once (2026-11-27): 40 to 60 s each, and they had started last.
    "gpus::e2e_gpus::e2e_a_node_without_gpus_never_counts_the_batch_nodes",
    "per_node::e2e_per_node::two_per_node_runs_on_one_node_get_different_master_ports",
    "python_api::e2e_python::functions_from_python",
    "python_api::e2e_python::a_cluster_from_python",
    "bootstrap::e2e_worker_start::a_workers_ray_start_that_fails_once_is_tried_again_and_the_run_goes_on",
    "bootstrap::e2e_bootstrap::a_temp_root_name_taken_on_the_nodes_does_not_fail_the_run",
];

/// Which tests hold the cluster now, and which wait: at most `RAYSLURM_TEST_AT_ONCE` (8) at
/// once, whatever the number of libtest's threads (tests/run.sh gives it one for every test,
/// so that every test asks at the start and the long ones can go first).
struct Gate {
    holding: usize,
    /// (rank in [`LONG_FIRST`], or its length for any other test; order of asking).
    waiting: Vec<(usize, u64)>,
    asked: u64,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    holding: 0,
    waiting: Vec::new(),
    asked: 0,
});
static GATE_OPENED: Condvar = Condvar::new();

/// A test's place among those holding the cluster.
pub struct Admitted;

impl Drop for Admitted {
    fn drop(&mut self) {
        GATE.lock().unwrap_or_else(PoisonError::into_inner).holding -= 1;
        GATE_OPENED.notify_all();
    }
}

/// Waits until the test may hold the cluster: a place is free and no test before it in line
/// waits. First in line is a test that kills a node (they run one after another, on nodes of
/// their own: a chain that must start early), then the [`LONG_FIRST`], then the others in
/// the order they asked.
pub(super) fn admit(test: &str, kills_a_node: bool) -> Admitted {
    let at_once: usize = std::env::var("RAYSLURM_TEST_AT_ONCE")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(8);
    let rank = if kills_a_node {
        0
    } else {
        1 + LONG_FIRST
            .iter()
            .position(|t| *t == test)
            .unwrap_or(LONG_FIRST.len())
    };
    let mut gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
    gate.asked += 1;
    let me = (rank, gate.asked);
    gate.waiting.push(me);
    while gate.holding >= at_once || gate.waiting.iter().min() != Some(&me) {
        gate = GATE_OPENED
            .wait(gate)
            .unwrap_or_else(PoisonError::into_inner);
    }
    gate.waiting.retain(|w| *w != me);
    gate.holding += 1;
    // The next in line may be admitted too, if there is room.
    GATE_OPENED.notify_all();
    Admitted
}

/// When the first test asked for a turn.
static FIRST_ASKED: OnceLock<Instant> = OnceLock::new();

pub(super) fn turn(
    test: &str,
    crash: Option<MutexGuard<'static, ()>>,
    admitted: Admitted,
    asked: Instant,
) -> Turn {
    FIRST_ASKED.get_or_init(|| asked);
    Turn {
        crash,
        _admitted: admitted,
        test: test.to_owned(),
        asked,
        given: Instant::now(),
    }
}

/// Every name in [`LONG_FIRST`] is a test of this binary, as libtest lists it: a renamed or
/// moved test would silently lose its place in line.
#[test]
fn long_first_names_are_tests() {
    let tests = super::steps::tests_of_this_binary();
    for name in LONG_FIRST {
        assert!(
            tests.iter().any(|t| t == name),
            "{name} is in LONG_FIRST but is no test of this binary (`cargo test --test it -- --list`)"
        );
    }
}
