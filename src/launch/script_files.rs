//! Writing the script under a new name: `{exp}_{MMDD}-{HHMMSS}.sh` beside the other files of
//! its run ([`RunFiles`]), never overwriting anything, never leaving a half-written file.
//!
//! The script is written to a temporary file in the same directory and put in place only if
//! that name is still free (`Staged::place_new`), so concurrent launches in the same second
//! each get their own name (`-2`, `-3`, ... suffixes).

use std::path::Path;

use anyhow::Result;
use chrono::{DateTime, Local};

use crate::handoff::run_files::RunFiles;
use crate::sys::staged_file::Staged;

/// The stem for the `n`th try (0 first) at a launch time.
pub(crate) fn stem(exp_name: &str, time: &DateTime<Local>, n: u32) -> String {
    let base = format!("{exp_name}_{}", time.format("%m%d-%H%M%S"));
    if n == 0 {
        base
    } else {
        format!("{base}-{}", n + 1)
    }
}

/// Renders and writes the script under the first free name.
pub(crate) fn write_new(
    dir: &Path,
    exp_name: &str,
    time: &DateTime<Local>,
    render: impl Fn(&RunFiles) -> Result<String>,
) -> Result<RunFiles> {
    const TRIES: u32 = 1000;
    for n in 0..TRIES {
        let files = RunFiles::for_stem(dir, &stem(exp_name, time, n));
        if files.any_exists() {
            continue;
        }
        let text = render(&files)?;
        let mut script = Staged::new(dir, "rayslurm", 0o755)?;
        script.write_all(text.as_bytes())?;
        // `Some`: a launch in the same second took the name first; try the next.
        if script.place_new(&files.script)?.is_none() {
            return Ok(files);
        }
    }
    anyhow::bail!(
        "no free file name for `{exp_name}` in `{}` after {TRIES} tries",
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at() -> DateTime<Local> {
        Local.with_ymd_and_hms(2026, 11, 22, 9, 30, 5).unwrap()
    }

    #[test]
    fn stems_follow_the_seed_with_seconds() {
        assert_eq!(stem("x", &at(), 0), "x_1122-093005");
        assert_eq!(stem("x", &at(), 1), "x_1122-093005-2");
    }

    #[test]
    fn never_overwrites_script_or_log() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x_1122-093005.log"), "old log").unwrap();
        let a = write_new(dir.path(), "x", &at(), |_| Ok("a".into())).unwrap();
        let b = write_new(dir.path(), "x", &at(), |_| Ok("b".into())).unwrap();
        assert_eq!(a.script, dir.path().join("x_1122-093005-2.sh"));
        assert_eq!(b.script, dir.path().join("x_1122-093005-3.sh"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("x_1122-093005.log")).unwrap(),
            "old log"
        );
        assert_eq!(std::fs::read_to_string(&a.script).unwrap(), "a");
    }

    #[test]
    fn concurrent_launches_get_distinct_names() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<std::path::PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16)
                .map(|i| {
                    let d = dir.path();
                    s.spawn(move || {
                        write_new(d, "x", &at(), |_| Ok(format!("{i}")))
                            .unwrap()
                            .script
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 16);
    }

    #[test]
    fn a_failed_render_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(write_new(dir.path(), "x", &at(), |_| anyhow::bail!("boom")).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
