//! What the store tests are made of.

use std::path::Path;

use chrono::{FixedOffset, TimeZone};

use super::RunRecord;
use crate::handoff::run_files::RunFiles;

/// The record of run `exp`, job `job`, submitted at 09:`minute` on 2026-11-22.
pub(super) fn record(exp: &str, job: &str, minute: u32) -> RunRecord {
    let at = FixedOffset::east_opt(3600)
        .unwrap()
        .with_ymd_and_hms(2026, 11, 22, 9, minute, 0)
        .unwrap();
    let files = RunFiles::for_stem(Path::new("/logs"), &format!("{exp}_{job}"));
    RunRecord::new(
        exp,
        job,
        &files,
        at,
        Path::new("/work"),
        "python train.py",
        2,
    )
}
