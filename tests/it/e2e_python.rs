//! The Python API on the real test cluster (`tests/python/e2e_api.py`): `launch` of a
//! `--no-ray` job and of a small Ray job, `Job.wait/state/exit_code/logs/cancel/run_dir`,
//! `Job.from_name`, `status`, and a 1-node cluster through `up`, `exec` (`--per-node` too),
//! `queue`, `logs`, `cancel`, `dashboard` and `down`. Skipped loudly without the cluster.

use std::ffi::OsString;

use crate::harness::lab;
use crate::python_package::{passed, unittest};

#[test]
fn jobs_and_a_cluster_from_python() {
    let Some((lab, _turn)) = lab("jobs_and_a_cluster_from_python") else {
        return;
    };
    let dir = lab.workdir("e2e-python");
    let state = lab.workdir("e2e-python-state");
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let out = unittest(
        &lab.venv.join("bin/python"),
        &tests,
        "e2e_*.py",
        &dir,
        &[
            ("RAYSLURM_STATE_DIR", state.into_os_string()),
            ("RAYSLURM_LAB_LOAD_ENV", OsString::from(lab.load_env())),
        ],
    );
    let report = passed(&out);
    assert!(report.contains("Ran 6 tests"), "{report}");
    assert!(report.contains("\nOK"), "{report}");
}
