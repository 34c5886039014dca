//! Writing the script under a new name: `{exp}_{MMDD}-{HHMMSS}.sh` beside the other files of
//! its run ([`RunFiles`], in the user's private tree), never overwriting anything, never
//! leaving a half-written file. The script is the user's alone (mode 0700): it holds the
//! values of `--env`.
//!
//! The log is made with the script, empty and the user's alone (mode 0600): Slurm opens the
//! file it finds, so it keeps that mode (one Slurm makes takes the job's umask: 0664 under a
//! group's umask 002).
//!
//! The log directory the user sees (`--log-dir`, by default the working directory) gets a
//! link `{stem}.log` to the run's log: only a link, made where other users may write, so
//! nothing rayslurm or Slurm writes or reads goes through it.
//!
//! The script is written to a temporary file in the same directory and put in place only if
//! that name is still free (`Staged::place_new`), so concurrent launches in the same second
//! each get their own name (`-2`, `-3`, ... suffixes).

use std::path::{Path, PathBuf};

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

/// The name of the link to a run's log in the log directory.
pub(crate) fn log_link(log_dir: &Path, files: &RunFiles) -> Option<PathBuf> {
    Some(log_dir.join(files.log.file_name()?))
}

/// Makes `path`, empty and the user's alone, never through a link or over a file.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

/// Renders and writes the script under the first free name in `dir` (whose log link's name
/// in `log_dir` is free too), and links the log from `log_dir`. An array's (`tasks` not empty)
/// has a log and a link for each task ([`RunFiles::of_task`]) instead of one.
pub(crate) fn write_new(
    dir: &Path,
    log_dir: Option<&Path>,
    exp_name: &str,
    time: &DateTime<Local>,
    tasks: &[u32],
    render: impl Fn(&RunFiles) -> Result<String>,
) -> Result<RunFiles> {
    const TRIES: u32 = 1000;
    for n in 0..TRIES {
        let files = RunFiles::for_stem(dir, &stem(exp_name, time, n));
        // Each log with its link in the log directory: the run's one, or each task's.
        let runs: Vec<RunFiles> = if tasks.is_empty() {
            vec![files.clone()]
        } else {
            tasks.iter().filter_map(|&t| files.of_task(t)).collect()
        };
        let logs: Vec<(&Path, Option<PathBuf>)> = runs
            .iter()
            .map(|r| (r.log.as_path(), log_dir.and_then(|d| log_link(d, r))))
            .collect();
        // `symlink_metadata`: a dangling link is not a free name.
        let taken = |p: &Path| p.symlink_metadata().is_ok();
        if files.any_exists()
            || runs.iter().any(RunFiles::any_exists)
            || logs.iter().any(|(_, l)| l.as_deref().is_some_and(taken))
        {
            continue;
        }
        let text = render(&files)?;
        let mut script = Staged::new(dir, "rayslurm", 0o700)?;
        script.write_all(text.as_bytes())?;
        // `Some`: a launch in the same second took the name first; try the next.
        if script.place_new(&files.script)?.is_some() {
            continue;
        }
        if make_logs(&logs, log_dir.is_some()).is_err() {
            let _ = std::fs::remove_file(&files.script);
            continue;
        }
        return Ok(files);
    }
    anyhow::bail!(
        "no free file name for `{exp_name}` in `{}` after {TRIES} tries",
        dir.display()
    )
}

/// Links each log from the log directory and (for a run to be submitted: a dry run has no log
/// directory) makes it, private from the start. A name taken since the check undoes what was
/// made, and the run goes on under the next name.
fn make_logs(logs: &[(&Path, Option<PathBuf>)], submitted: bool) -> std::io::Result<()> {
    let mut made: Vec<&Path> = Vec::new();
    let undo = |made: &[&Path]| {
        for path in made {
            let _ = std::fs::remove_file(path);
        }
    };
    for (log, link) in logs {
        // A link made in a directory others may write: `symlink` never follows the name.
        if let Some(link) = link {
            if let Err(e) = std::os::unix::fs::symlink(log, link) {
                undo(&made);
                return Err(e);
            }
            made.push(link);
        }
        if submitted {
            if let Err(e) = private_file(log) {
                undo(&made);
                return Err(e);
            }
            made.push(log);
        }
    }
    Ok(())
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
        let a = write_new(dir.path(), None, "x", &at(), &[], |_| Ok("a".into())).unwrap();
        let b = write_new(dir.path(), None, "x", &at(), &[], |_| Ok("b".into())).unwrap();
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
                        write_new(d, None, "x", &at(), &[], |_| Ok(format!("{i}")))
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
        assert!(write_new(dir.path(), None, "x", &at(), &[], |_| anyhow::bail!("boom")).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_log_is_linked_from_the_log_directory_and_a_planted_name_is_skipped() {
        use std::os::unix::fs::PermissionsExt;
        let private = tempfile::tempdir().unwrap();
        let shared = tempfile::tempdir().unwrap();
        // Another user's dangling link at the first name: taken, never followed.
        std::os::unix::fs::symlink(
            "/nonexistent/victim",
            shared.path().join("x_1122-093005.log"),
        )
        .unwrap();
        let files = write_new(private.path(), Some(shared.path()), "x", &at(), &[], |_| {
            Ok("s".into())
        })
        .unwrap();
        assert_eq!(files.script, private.path().join("x_1122-093005-2.sh"));
        let link = shared.path().join("x_1122-093005-2.log");
        assert_eq!(std::fs::read_link(&link).unwrap(), files.log);
        let mode = std::fs::metadata(&files.script)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(
            mode, 0o700,
            "the script holds --env values: the user's alone"
        );
        let log = std::fs::symlink_metadata(&files.log).unwrap();
        assert_eq!(
            (log.is_file(), log.len(), log.permissions().mode() & 0o777),
            (true, 0, 0o600),
            "the log, made before Slurm opens it, is the user's alone"
        );
    }

    #[test]
    fn an_array_has_a_private_log_and_a_link_for_each_task_and_no_log_of_its_own() {
        use std::os::unix::fs::PermissionsExt;
        let private = tempfile::tempdir().unwrap();
        let shared = tempfile::tempdir().unwrap();
        // A task's name taken in the log directory: the whole array takes the next stem.
        std::fs::write(shared.path().join("x_1122-093005_3.log"), "other").unwrap();
        let files = write_new(
            private.path(),
            Some(shared.path()),
            "x",
            &at(),
            &[1, 3],
            |_| Ok("s".into()),
        )
        .unwrap();
        assert_eq!(files.script, private.path().join("x_1122-093005-2.sh"));
        assert!(
            files.log.symlink_metadata().is_err(),
            "no log for the array itself"
        );
        for task in [1, 3] {
            let log = private.path().join(format!("x_1122-093005-2_{task}.log"));
            let meta = std::fs::symlink_metadata(&log).unwrap();
            assert_eq!((meta.len(), meta.permissions().mode() & 0o777), (0, 0o600));
            let link = shared.path().join(format!("x_1122-093005-2_{task}.log"));
            assert_eq!(std::fs::read_link(&link).unwrap(), log);
        }
        assert_eq!(
            std::fs::read_to_string(shared.path().join("x_1122-093005_3.log")).unwrap(),
            "other"
        );
    }
}
