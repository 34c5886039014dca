//! The end-to-end tests that run in a step of their own, not in tests/run.sh's: each step
//! needs a part of the lab the other tests do not (container runtimes and an image, the login
//! node's sshd and a laptop, the
//! preemptible partitions and minutes of Slurm's own time, 64 more nodes) and is run by
//! `bash tests/step.sh STEP`, which .ci/run runs with a budget. tests/run.sh sets each step's
//! variable to `0`; [`left_to_its_step`] then skips those tests, naming the command that runs
//! them (a skip on purpose: not a failure under CI).

use super::test_skip::skip;

/// A step of its own: the variable that leaves its tests to it when `0`, the command that
/// runs it, what it needs, and its tests (paths, or the start of paths, as libtest lists them).
pub struct Step {
    pub var: &'static str,
    pub command: &'static str,
    pub needs: &'static str,
    pub tests: &'static [&'static str],
}

/// Every step of its own (tests/step.sh has the same names, filters and budgets).
pub const STEPS: &[Step] = &[
    Step {
        var: "RAYSLURM_TEST_CONTAINERS",
        command: "bash tests/step.sh containers",
        needs: "container runtimes (Charliecloud, enroot and pyxis) and the lab's image",
        tests: &["containers::e2e_"],
    },
    Step {
        var: "RAYSLURM_TEST_SSH",
        command: "bash tests/step.sh ssh",
        needs: "the login node's sshd and a laptop",
        tests: &["laptop::e2e_", "ray_yaml::e2e_from_laptop::"],
    },
    Step {
        var: "RAYSLURM_TEST_PREEMPTION",
        command: "bash tests/step.sh preemption",
        needs: "the preemptible partitions and minutes of Slurm's own time limits",
        tests: &[
            "elastic::e2e_worker_types::",
            "task_file::e2e_stages::e2e_task_file_spot_task_is_requeued_when_preempted_and_finishes",
        ],
    },
    Step {
        var: "RAYSLURM_TEST_SCALE",
        command: "bash tests/step.sh scale",
        needs: "the scale partition's 64 nodes, each test alone on it",
        tests: &["scale::"],
    },
];

/// The step `test` belongs to, if any.
pub fn step_of(test: &str) -> Option<&'static Step> {
    STEPS
        .iter()
        .find(|step| step.tests.iter().any(|t| test.starts_with(t)))
}

/// Whether `test` is left to its own step now (its variable is `0`): then it is skipped,
/// loudly, with the command that runs it.
pub fn left_to_its_step(test: &str) -> bool {
    let Some(step) = step_of(test) else {
        return false;
    };
    if std::env::var(step.var).as_deref() != Ok("0") {
        return false;
    }
    let why = format!(
        "it needs {} and runs in its own step ({})",
        step.needs, step.command
    );
    skip(test, &why, Some(step.var));
    true
}

/// Each step's tests are tests of this binary: a name that matches none would leave a test in
/// tests/run.sh that its step was meant to hold (or a step with nothing to run).
#[test]
fn every_steps_tests_are_tests_of_this_binary() {
    let tests = tests_of_this_binary();
    for step in STEPS {
        for start in step.tests {
            assert!(
                tests.iter().any(|t| t.starts_with(start)),
                "{start} is in {}'s step but starts no test of this binary",
                step.var
            );
        }
    }
    // A test beside a step's own in the same file stays in tests/run.sh.
    assert!(
        step_of("task_file::e2e_stages::e2e_task_file_two_small_tasks_share_one_node").is_none()
    );
    assert_eq!(
        step_of("laptop::e2e_host::e2e_a_refused_key_is_a_clear_error_and_nothing_runs")
            .map(|s| s.var),
        Some("RAYSLURM_TEST_SSH")
    );
}

/// Every test of this binary, by its path (`it --list`).
#[cfg(test)]
pub(super) fn tests_of_this_binary() -> Vec<String> {
    let listed = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--list", "--format", "terse"])
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect()
}
