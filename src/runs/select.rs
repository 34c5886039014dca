//! Which recorded runs a command-line target (`exp-name | job-id`) means.
//!
//! A job id picks that run; an experiment name picks its runs (commands that act on one run
//! take the latest). A target that matches nothing is a usage error that lists the close
//! matches, so a typo costs one look, not a trip to `status --all`.

use std::path::Path;

use crate::error::UsageError;
use crate::error::show;
use crate::printer::Printer;
use crate::runs::store::{RunStore, StoredRun};

/// The runs a target names, newest first, never empty.
#[derive(Debug)]
pub(crate) struct Selection<'a> {
    pub(crate) runs: Vec<&'a StoredRun>,
}

impl<'a> Selection<'a> {
    /// The run a single-run command acts on: the newest.
    pub(crate) fn latest(&self) -> &'a StoredRun {
        self.runs[0]
    }

    /// Where the latest run is a task of a job array: the array's job id and its tasks here
    /// (all of them for an experiment name or the array's id, one for `JOBID_TASK`).
    pub(crate) fn latest_array(&self) -> Option<(&'a str, Vec<&'a StoredRun>)> {
        let array = self.latest().record.array_job.as_deref()?;
        let tasks = self
            .runs
            .iter()
            .copied()
            .filter(|r| r.record.array_job.as_deref() == Some(array))
            .collect();
        Some((array, tasks))
    }
}

/// The array job id, where every one of `runs` is a task of that one array.
pub(crate) fn one_array<'a>(runs: &[&'a StoredRun]) -> Option<&'a str> {
    let array = runs.first()?.record.array_job.as_deref()?;
    runs.iter()
        .all(|r| r.record.array_job.as_deref() == Some(array))
        .then_some(array)
}

/// The one run of an array a single-run command (`logs`) acts on: the task `task` names, or
/// the only one there is; a usage error that lists the tasks when there are several.
pub(crate) fn task_of<'a>(
    array: &str,
    tasks: &[&'a StoredRun],
    task: Option<u32>,
    command: &str,
) -> Result<&'a StoredRun, UsageError> {
    let ids: Vec<&str> = tasks
        .iter()
        .filter_map(|r| r.record.job_id.split_once('_').map(|(_, t)| t))
        .collect();
    let listed = || {
        let mut shown: Vec<&str> = ids.iter().copied().take(10).collect();
        if ids.len() > shown.len() {
            shown.push("...");
        }
        shown.join(", ")
    };
    match (task, tasks) {
        (Some(t), _) => tasks
            .iter()
            .copied()
            .find(|r| r.record.job_id == format!("{array}_{t}"))
            .ok_or_else(|| {
                UsageError::new(format!("job array {array} has no task {t}"))
                    .hint(format!("its tasks are {}", listed()))
            }),
        (None, [one]) => Ok(one),
        (None, _) => Err(UsageError::new(format!(
            "job {array} is an array of {} tasks, each a run with its own log: say which task",
            tasks.len()
        ))
        .hint(format!(
            "`rayslurm {command} {array}_{first}` or `--task {first}` (its tasks: {})",
            listed(),
            first = ids.first().copied().unwrap_or("0")
        ))),
    }
}

/// Resolves `target` among `runs` (newest first). A job id wins over an experiment of the
/// same name, since experiment names that are all digits are rare and job ids are not.
pub(crate) fn resolve<'a>(
    runs: &'a [StoredRun],
    target: &str,
    store_dir: &Path,
) -> Result<Selection<'a>, UsageError> {
    let by_job: Vec<&StoredRun> = runs.iter().filter(|r| r.record.job_id == target).collect();
    if !by_job.is_empty() {
        return Ok(Selection { runs: by_job });
    }
    // An array's job id: its tasks (each `JOBID_TASK`, a run of its own).
    let by_array: Vec<&StoredRun> = runs
        .iter()
        .filter(|r| r.record.array_job.as_deref() == Some(target))
        .collect();
    if !by_array.is_empty() {
        return Ok(Selection { runs: by_array });
    }
    let by_exp: Vec<&StoredRun> = runs
        .iter()
        .filter(|r| r.record.exp_name == target)
        .collect();
    if !by_exp.is_empty() {
        return Ok(Selection { runs: by_exp });
    }
    Err(unknown(runs, target, store_dir))
}

/// The run `target` names in the user's store (the latest of an experiment), with the store,
/// which keeps what becomes of it: how a command on one run starts.
pub(crate) fn open(target: &str, printer: &Printer) -> anyhow::Result<(RunStore, StoredRun)> {
    let (store, runs) = RunStore::open(printer)?;
    let run = resolve(&runs, target, store.dir())?.latest().clone();
    Ok((store, run))
}

fn unknown(runs: &[StoredRun], target: &str, store_dir: &Path) -> UsageError {
    if runs.is_empty() {
        return UsageError::new(format!(
            "no run matches {}: no runs are recorded in `{}`",
            show(target),
            store_dir.display()
        ))
        .hint(
            "runs are recorded by `rayslurm launch`; jobs submitted otherwise are not known here",
        );
    }
    let mut candidates: Vec<&str> = runs
        .iter()
        .flat_map(|r| [r.record.exp_name.as_str(), r.record.job_id.as_str()])
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    let close = close_matches(target, &candidates);
    let message = format!("no run has the experiment name or job id {}", show(target));
    let hint = if close.is_empty() {
        "`rayslurm status --all` lists every recorded run".to_owned()
    } else {
        let list: Vec<String> = close.iter().map(|c| format!("`{c}`")).collect();
        format!(
            "did you mean {}? (`rayslurm status --all` lists every recorded run)",
            list.join(", ")
        )
    };
    UsageError::new(message).hint(hint)
}

/// Up to five candidates close to `target`: within a small edit distance, or one a prefix of
/// the other; closest first.
pub(crate) fn close_matches<'c>(target: &str, candidates: &[&'c str]) -> Vec<&'c str> {
    const SHOWN: usize = 5;
    let limit = (target.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = candidates
        .iter()
        .filter_map(|&c| {
            let distance = strsim::levenshtein(target, c);
            let prefix = !target.is_empty() && (c.starts_with(target) || target.starts_with(c));
            (distance <= limit || prefix).then_some((distance, c))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(SHOWN).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use chrono::{FixedOffset, TimeZone};

    use super::*;
    use crate::handoff::run_files::RunFiles;
    use crate::runs::store::RunRecord;

    fn run(exp: &str, job: &str, minute: u32) -> StoredRun {
        let at = FixedOffset::east_opt(0)
            .unwrap()
            .with_ymd_and_hms(2026, 11, 22, 9, minute, 0)
            .unwrap();
        let files = RunFiles::for_stem(Path::new("/logs"), exp);
        StoredRun {
            path: PathBuf::from(format!("/store/{job}.json")),
            record: RunRecord::new(exp, job, &files, at, Path::new("/w"), "true", 1),
        }
    }

    /// Newest first, as the store loads them.
    fn runs() -> Vec<StoredRun> {
        vec![
            run("resnet", "103", 4),
            run("bert-large", "102", 3),
            run("resnet", "101", 2),
            run("77", "100", 1),
        ]
    }

    #[test]
    fn experiment_name_picks_its_latest_run() {
        let runs = runs();
        let sel = resolve(&runs, "resnet", Path::new("/store")).unwrap();
        assert_eq!(sel.runs.len(), 2);
        assert_eq!(sel.latest().record.job_id, "103");
    }

    #[test]
    fn job_id_picks_that_run() {
        let runs = runs();
        let sel = resolve(&runs, "101", Path::new("/store")).unwrap();
        assert_eq!(sel.runs.len(), 1);
        assert_eq!(sel.latest().record.job_id, "101");
        let sel = resolve(&runs, "77", Path::new("/store")).unwrap();
        assert_eq!(sel.latest().record.exp_name, "77");
    }

    #[test]
    fn unknown_target_lists_close_matches() {
        let runs = runs();
        let err = resolve(&runs, "resnt", Path::new("/store")).unwrap_err();
        assert_eq!(
            err.message,
            "no run has the experiment name or job id `resnt`"
        );
        let hint = err.hint.unwrap();
        assert!(hint.starts_with("did you mean `resnet`?"), "{hint}");
        let err = resolve(&runs, "bert", Path::new("/store")).unwrap_err();
        assert!(err.hint.unwrap().contains("`bert-large`"));
        let err = resolve(&runs, "104", Path::new("/store")).unwrap_err();
        assert!(err.hint.unwrap().contains("`103`"));
        let err = resolve(&runs, "zzzzzzzzzz", Path::new("/store")).unwrap_err();
        assert!(!err.hint.unwrap().contains("did you mean"));
    }

    #[test]
    fn empty_store_says_so() {
        let err = resolve(&[], "x", Path::new("/store")).unwrap_err();
        assert!(
            err.message.contains("no runs are recorded in `/store`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn close_matches_are_ordered_and_bounded() {
        let c = ["abc", "abd", "abcdef", "xyz", "ab", "abx", "aby", "abz"];
        let m = close_matches("abc", &c);
        assert_eq!(m.len(), 5);
        assert_eq!(m[0], "abc");
        assert!(!m.contains(&"xyz"));
    }

    fn array() -> Vec<StoredRun> {
        let mut tasks: Vec<StoredRun> = ["7_0", "7_1", "7_2"]
            .into_iter()
            .map(|id| {
                let mut r = run("sweep", id, 5);
                r.record.array_job = Some("7".into());
                r
            })
            .collect();
        tasks.extend(runs());
        tasks
    }

    #[test]
    fn an_array_is_named_by_its_name_its_job_id_or_one_task() {
        let runs = array();
        for target in ["sweep", "7"] {
            let sel = resolve(&runs, target, Path::new("/store")).unwrap();
            let (id, tasks) = sel.latest_array().unwrap();
            assert_eq!((id, tasks.len()), ("7", 3), "{target}");
            assert_eq!(one_array(&sel.runs), Some("7"));
            let err = task_of(id, &tasks, None, "logs").unwrap_err();
            assert_eq!(
                err.message,
                "job 7 is an array of 3 tasks, each a run with its own log: say which task"
            );
            assert!(
                err.hint
                    .as_deref()
                    .unwrap()
                    .contains("`rayslurm logs 7_0` or `--task 0`")
            );
            assert_eq!(
                task_of(id, &tasks, Some(2), "logs").unwrap().record.job_id,
                "7_2"
            );
            let err = task_of(id, &tasks, Some(9), "logs").unwrap_err();
            assert_eq!(err.message, "job array 7 has no task 9");
        }
        let sel = resolve(&runs, "7_1", Path::new("/store")).unwrap();
        let (id, tasks) = sel.latest_array().unwrap();
        assert_eq!(
            task_of(id, &tasks, None, "logs").unwrap().record.job_id,
            "7_1"
        );
        let sel = resolve(&runs, "resnet", Path::new("/store")).unwrap();
        assert!(sel.latest_array().is_none());
        assert_eq!(one_array(&sel.runs), None);
    }
}
