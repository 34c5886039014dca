//! Field values every Slurm client prints alike: empty markers and submit times.

use chrono::NaiveDateTime;

/// `None`, `(null)` and empty fields carry nothing.
pub(super) fn known(value: &str) -> Option<String> {
    match value {
        "" | "None" | "(null)" | "N/A" | "Unknown" => None,
        v => Some(v.to_owned()),
    }
}

/// A submit time as Slurm prints it (`2026-11-22T03:16:18`); `None` for `N/A`, `Unknown` or
/// anything else.
pub(super) fn parse_submit_time(text: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%dT%H:%M:%S").ok()
}
