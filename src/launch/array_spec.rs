//! `launch --array SPEC`: a Slurm job array's indices as sbatch reads them (`0-7`, `1,3,5`,
//! `0-15:4`, with `%N` the most tasks running at once), checked before anything is written,
//! and the list of task ids it makes: `launch` makes each task's log and record from it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// The most tasks one array may have here: each gets its log made and its record written at
/// launch (Slurm's own `MaxArraySize` is 1001 unless a site raises it).
pub(crate) const MAX_TASKS: usize = 10_000;

/// A checked `--array` value: as given (sbatch reads it), with the task ids it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub(crate) struct ArraySpec {
    text: String,
    tasks: Vec<u32>,
    /// `%N`: the most tasks running at once.
    limit: Option<u32>,
}

impl ArraySpec {
    /// Parses and checks `text` as sbatch's `--array` reads it; the error says what is wrong.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (list, limit) = match text.split_once('%') {
            Some((list, limit)) => (list, Some(limit)),
            None => (text, None),
        };
        let limit = limit
            .map(|l| match l.parse::<u32>() {
                Ok(0) => Err(
                    "`%0` lets no task run; `%N` is the most tasks at once, 1 or more".to_owned(),
                ),
                Ok(n) => Ok(n),
                Err(_) => Err(format!(
                    "`%{l}` is not a number of tasks (`%2`: at most 2 at once)"
                )),
            })
            .transpose()?;
        if list.is_empty() {
            return Err("no task ids: give ids (`1,3,5`), a range (`0-7`) or a range with a step (`0-15:4`)".to_owned());
        }
        let mut tasks = BTreeSet::new();
        for item in list.split(',') {
            for id in items(item)? {
                tasks.insert(id);
                if tasks.len() > MAX_TASKS {
                    return Err(format!(
                        "more than {MAX_TASKS} tasks: split the work into fewer, larger tasks"
                    ));
                }
            }
        }
        Ok(Self {
            text: text.to_owned(),
            tasks: tasks.into_iter().collect(),
            limit,
        })
    }

    /// The task ids, in order, each once.
    pub(crate) fn tasks(&self) -> &[u32] {
        &self.tasks
    }

    /// `%N`, if given.
    pub(crate) fn limit(&self) -> Option<u32> {
        self.limit
    }

    /// The `#SBATCH` line's option.
    pub(crate) fn directive(&self) -> String {
        format!("--array={}", self.text)
    }
}

/// The ids one comma-separated item names: `3`, `0-7`, `0-15:4`.
fn items(item: &str) -> Result<std::iter::StepBy<std::ops::RangeInclusive<u32>>, String> {
    let number = |s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("`{item}` is not a task id, a range `A-B` or `A-B:STEP`"))
    };
    let (range, step) = match item.split_once(':') {
        Some((range, step)) => (range, number(step)?),
        None => (item, 1),
    };
    if step == 0 {
        return Err(format!(
            "`{item}` has a step of 0; a step is 1 or more (`0-15:4`)"
        ));
    }
    let (first, last) = match range.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None if item.contains(':') => {
            return Err(format!("`{item}`: a step goes with a range (`0-15:4`)"));
        }
        None => {
            let id = number(range)?;
            (id, id)
        }
    };
    if last < first {
        return Err(format!(
            "`{item}` is an empty range: it ends before it starts"
        ));
    }
    Ok((first..=last).step_by(step as usize))
}

impl From<ArraySpec> for String {
    fn from(spec: ArraySpec) -> Self {
        spec.text
    }
}

impl TryFrom<String> for ArraySpec {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_lists_steps_and_limits_name_their_tasks() {
        let cases: &[(&str, &[u32], Option<u32>)] = &[
            ("0-7%2", &[0, 1, 2, 3, 4, 5, 6, 7], Some(2)),
            ("1,3,5", &[1, 3, 5], None),
            ("0-15:4", &[0, 4, 8, 12], None),
            ("0-14:4%1", &[0, 4, 8, 12], Some(1)),
            ("5", &[5], None),
            ("3,1-2,3", &[1, 2, 3], None),
            ("7-7", &[7], None),
        ];
        for (text, tasks, limit) in cases {
            let spec = ArraySpec::parse(text).unwrap();
            assert_eq!((spec.tasks(), spec.limit()), (*tasks, *limit), "{text}");
            assert_eq!(spec.directive(), format!("--array={text}"));
        }
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let cases = [
            ("", "no task ids"),
            ("%2", "no task ids"),
            ("5-3", "`5-3` is an empty range"),
            ("0-7:0", "`0-7:0` has a step of 0"),
            ("0-7%0", "`%0` lets no task run"),
            ("0-7%x", "`%x` is not a number"),
            ("1,,2", "`` is not a task id"),
            ("a-b", "`a-b` is not a task id"),
            ("-1", "`-1` is not a task id"),
            ("4:2", "a step goes with a range"),
            ("0-20000", "more than 10000 tasks"),
        ];
        for (text, said) in cases {
            let err = ArraySpec::parse(text).unwrap_err();
            assert!(err.contains(said), "{text}: {err}");
        }
    }

    #[test]
    fn a_spec_is_kept_as_its_text() {
        let spec = ArraySpec::parse("0-3%2").unwrap();
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(json, "\"0-3%2\"");
        assert_eq!(serde_json::from_str::<ArraySpec>(&json).unwrap(), spec);
        assert!(serde_json::from_str::<ArraySpec>("\"3-1\"").is_err());
    }
}
