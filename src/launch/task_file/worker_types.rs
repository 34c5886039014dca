//! A task file's `rayslurm: {worker_types: {NAME: {OPTION: VALUE, ...}}}` (for `up NAME
//! TASK.yaml`): each type one `--worker-type 'NAME: --option value ...'`, the form `up` takes
//! (`launch::worker_type`), each option by `launch`'s long name with `_` or `-`.

use super::Refusal;
use super::given::Given;
use super::node::{Line, Node};
use crate::launch::worker_type::{WorkerType, check_name, option_of, worker_options};

/// The `--worker-type` flags of `rayslurm.worker_types` (`field`), each at its type's line.
pub(super) fn read(field: &str, value: &Line<Node>) -> Result<Vec<Given>, Refusal> {
    let Node::Map(types) = &value.value else {
        return Err(Refusal::new(
            field,
            value.line,
            "give one mapping a worker type: `gpu: {partition: gpu, num_gpus: l4:1, max_workers: 2}`",
        ));
    };
    let allowed = worker_options();
    let mut given = Vec::new();
    for (name, options) in types {
        let at = format!("{field}.{}", name.value);
        check_name(&name.value).map_err(|why| Refusal::new(&at, name.line, why))?;
        let entries = match &options.value {
            Node::Map(entries) => entries.as_slice(),
            Node::Null => &[],
            other => {
                return Err(Refusal::new(
                    &at,
                    options.line,
                    format!(
                        "is {}: give its options as a mapping (`partition: gpu`)",
                        other.kind()
                    ),
                ));
            }
        };
        let mut read = Vec::new();
        for (key, v) in entries {
            let option_field = format!("{at}.{}", key.value);
            read.extend(
                option_of(&option_field, key, v, &allowed)
                    .map_err(|(line, why)| Refusal::new(&option_field, line, why))?,
            );
        }
        let worker_type = WorkerType {
            name: name.value.clone(),
            options: read,
        };
        given.push(Given::one(
            &at,
            name.line,
            "worker-type",
            worker_type.flag_value(),
        ));
    }
    Ok(given)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::launch::task_file::{Value, read};

    fn task(text: &str) -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.yaml"), text).unwrap();
        read(Path::new("t.yaml"), dir.path())
            .map(|t| {
                t.given
                    .into_iter()
                    .filter(|g| g.long == "worker-type")
                    .flat_map(|g| match g.value {
                        Value::Values(v) => v,
                        Value::Switch(_) => Vec::new(),
                    })
                    .collect()
            })
            .map_err(|e| e.message)
    }

    #[test]
    fn worker_types_are_the_words_of_up() {
        let words = task("run: x\nrayslurm:\n  worker_types:\n    gpu: {partition: gpu, num_gpus: l4:1, max_workers: 2}\n    spot:\n      partition: scavenger\n      preemptible: true\n      rollover: 120\n      min-workers: 1\n      resources: {CPU: 2}\n").unwrap();
        assert_eq!(
            words,
            [
                "gpu: --partition gpu --num-gpus l4:1 --max-workers 2",
                "spot: --partition scavenger --preemptible --rollover 120 --min-workers 1 --resources '{\"CPU\":2}'",
            ]
        );
    }

    #[test]
    fn a_worker_type_that_cannot_be_is_refused_by_line() {
        let e = task("run: x\nrayslurm:\n  worker_types:\n    gpu:\n      partition: gpu\n      max_worker: 2\n").unwrap_err();
        assert!(
            e.contains(
                "t.yaml:6: rayslurm.worker_types.gpu.max_worker: not an option of a worker type"
            ) && e.contains("did you mean `max_workers`?"),
            "{e}"
        );
        let e = task("run: x\nrayslurm:\n  worker_types:\n    head: {}\n").unwrap_err();
        assert!(
            e.contains("t.yaml:4: rayslurm.worker_types.head: `head` names"),
            "{e}"
        );
        let e = task("run: x\nrayslurm:\n  worker_types: [gpu]\n").unwrap_err();
        assert!(
            e.contains("t.yaml:3: rayslurm.worker_types: give one mapping a worker type"),
            "{e}"
        );
        let e = task("run: x\nrayslurm:\n  worker_types:\n    gpu: {load_env: x}\n").unwrap_err();
        assert!(
            e.contains("rayslurm.worker_types.gpu.load_env: not an option of a worker type"),
            "{e}"
        );
    }
}
