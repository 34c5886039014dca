//! Whether Ray itself ended this node's raylet because the node was drained (the head asked
//! Ray to drain the workers before a deadline, see `head/drain.rs`): Ray then stops a
//! raylet as soon as it is idle, which is no failure of the node. The raylet says why in
//! its log (`raylet.out`): "Raylet graceful shutdown triggered with death info: reason:
//! AUTOSCALER_DRAIN_PREEMPTED" (or `_IDLE`).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::bootstrap::kept_logs::session_logs;

/// What the raylet writes when a drain ends it, before the reason's name.
const DRAINED: &str = "graceful shutdown triggered with death info: reason: AUTOSCALER_DRAIN_";

/// How much of the end of `raylet.out` is read: the line is among its last.
const TAIL_BYTES: u64 = 64 * 1024;

/// The drain's reason (`PREEMPTED`, `IDLE`) when Ray drained the node whose temp root this
/// is; none when its raylet ended for any other reason.
pub(super) fn reason(temp_root: &Path) -> Option<String> {
    let log = session_logs(temp_root)?.join("raylet.out");
    let mut file = std::fs::File::open(log).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))
        .ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    reason_in(&String::from_utf8_lossy(&tail))
}

fn reason_in(log: &str) -> Option<String> {
    log.lines().rev().find_map(|line| {
        let rest = &line[line.find(DRAINED)? + DRAINED.len()..];
        Some(rest.split_whitespace().next().unwrap_or("").to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drained_raylet_is_told_from_one_that_died() {
        let drained = "[2026-11-25 19:07:13,796 I 5543 5543] (raylet) main.cc:481: Raylet graceful shutdown triggered with death info: reason: AUTOSCALER_DRAIN_PREEMPTED\n";
        assert_eq!(reason_in(drained).as_deref(), Some("PREEMPTED"));
        let killed = "[2026-11-25 19:07:13,796 I 5543 5543] (raylet) main.cc:300: Raylet received SIGTERM, shutting down...\n";
        assert_eq!(reason_in(killed), None);
    }

    #[test]
    fn the_reason_is_read_from_the_sessions_raylet_log() {
        let temp = tempfile::tempdir().unwrap();
        let logs = temp
            .path()
            .join("session_2026-11-25_19-07-01_000000_1/logs");
        std::fs::create_dir_all(&logs).unwrap();
        assert_eq!(reason(temp.path()), None);
        let mut text = "x\n".repeat(50_000);
        text.push_str("(raylet) main.cc:481: Raylet graceful shutdown triggered with death info: reason: AUTOSCALER_DRAIN_IDLE\n");
        std::fs::write(logs.join("raylet.out"), text).unwrap();
        assert_eq!(reason(temp.path()).as_deref(), Some("IDLE"));
    }
}
