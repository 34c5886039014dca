//! The Python API on the real test cluster (`tests/python/e2e_api.py`), one test a class of it,
//! side by side, each with a directory and run store of its own: `launch` of a `--no-ray` job
//! and of a small Ray job, `Job.wait/state/exit_code/logs/cancel/run_dir`, `Job.from_name`,
//! `status` (`Runs`); `Executor.submit` of a function using Ray on 2 nodes, of one that raises,
//! of one cancelled, and the local mode (`Functions`); `as_completed` over 10 runs, its Slurm
//! calls counted (`ManyFunctions`); `map_array` of 4 calls 2 at once and a `batch` of 2
//! functions, each one job array, a task cancelled alone (`Arrays`); a 1-node cluster through `up`, `exec` (`--per-node` too), `queue`,
//! `logs`, `cancel`, `dashboard` and `down` (`Clusters`); the examples of docs/python.md
//! (`Docs`). Skipped loudly without the cluster.

use std::ffi::OsString;

use crate::harness::lab;
use crate::python_package::{passed, unittest};

/// Runs the tests of `e2e_api.py`'s class `class` (there are `count`).
fn run_class(class: &str, count: usize) {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir(&format!("e2e-python-{class}"));
    let state = lab.workdir(&format!("e2e-python-{class}-state"));
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let out = unittest(
        &lab.venv.join("bin/python"),
        &tests,
        "e2e_*.py",
        Some(&format!("e2e_api.{class}.")),
        &dir,
        &[
            ("RAYSLURM_STATE_DIR", state.into_os_string()),
            ("RAYSLURM_LAB_LOAD_ENV", OsString::from(lab.load_env())),
        ],
    );
    let report = passed(&out);
    let ran = format!("Ran {count} test{}", if count == 1 { "" } else { "s" });
    assert!(report.contains(&ran), "{report}");
    assert!(report.contains("\nOK"), "{report}");
}

#[test]
fn jobs_from_python() {
    run_class("Runs", 4);
}

#[test]
fn functions_from_python() {
    run_class("Functions", 2);
}

#[test]
fn many_functions_watched_with_one_slurm_call_a_poll() {
    run_class("ManyFunctions", 1);
}

#[test]
fn arrays_of_functions_from_python() {
    run_class("Arrays", 1);
}

#[test]
fn a_cluster_from_python() {
    run_class("Clusters", 1);
}

#[test]
fn the_python_docs_examples_run() {
    run_class("Docs", 1);
}
