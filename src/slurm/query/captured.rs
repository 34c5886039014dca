//! What each Slurm the test cluster runs really printed (tests/slurm-samples/<version>/, made
//! by its capture.sh on the lab): every line parses, and into the phase, exit code and restart
//! count its job was in, on every version; `sacct` (the lab's slurmdbd) likewise.

use std::path::{Path, PathBuf};

use super::job_state::Phase;
use super::sacct::parse_sacct_line;
use super::scontrol::parse_scontrol_job;
use super::squeue::parse_squeue_line;

/// Each captured state, the phase it is, and the exit code Slurm keeps for it (if ended).
const STATES: &[(&str, Phase, Option<i32>)] = &[
    ("pending", Phase::Pending, None),
    ("running", Phase::Running, None),
    ("requeued", Phase::Pending, None),
    ("completing", Phase::Ending, None),
    ("completed", Phase::Ended, Some(0)),
    ("failed", Phase::Ended, Some(3)),
    ("cancelled", Phase::Ended, None),
    ("timeout", Phase::Ended, None),
];

fn versions() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm-samples");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_versions_lines_parse_into_their_jobs_phase() {
    let dirs = versions();
    assert!(
        dirs.len() >= 2,
        "samples of fewer than two versions: {dirs:?}"
    );
    for dir in dirs {
        for &(state, phase, code) in STATES {
            let read = |ext: &str| {
                let path = dir.join(format!("{state}.{ext}"));
                std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            };
            let where_ = format!("{} {state}", dir.display());
            let line = read("squeue");
            let entry = parse_squeue_line(line.trim_end())
                .unwrap_or_else(|| panic!("{where_}: squeue line not parsed: {line}"));
            assert_eq!(entry.state.phase(), phase, "{where_}: {line}");
            assert!(
                entry.submitted.is_some(),
                "{where_}: no submit time: {line}"
            );
            let text = read("scontrol");
            let job = parse_scontrol_job(&text)
                .unwrap_or_else(|| panic!("{where_}: scontrol not parsed: {text}"));
            assert_eq!(job.state.phase(), phase, "{where_}: {text}");
            if let Some(code) = code {
                assert_eq!(job.exit.map(|e| e.shell_code()), Some(code), "{where_}");
            }
            let restarts = job
                .restarts
                .unwrap_or_else(|| panic!("{where_}: no Restarts"));
            assert_eq!(restarts, u32::from(state == "requeued"), "{where_}");
            if phase != Phase::Pending {
                assert!(entry.nodelist.is_some(), "{where_}: no nodes: {line}");
            }
            let line = read("sacct");
            let acct = parse_sacct_line(line.trim_end())
                .unwrap_or_else(|| panic!("{where_}: sacct line not parsed: {line}"));
            // Accounting records the end when the batch script ends: COMPLETED while the
            // controller still says COMPLETING.
            let acct_phase = if state == "completing" {
                Phase::Ended
            } else {
                phase
            };
            assert_eq!(acct.state.phase(), acct_phase, "{where_}: {line}");
            assert!(acct.submitted.is_some(), "{where_}: no submit time: {line}");
            if let Some(code) = code {
                assert_eq!(acct.exit.map(|e| e.shell_code()), Some(code), "{where_}");
            }
        }
    }
}
