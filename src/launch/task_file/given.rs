//! What a task file gives: flags of the command it is given to, each with the field and line it
//! came from (so that a value the command refuses is reported as `FILE:LINE: FIELD: why`).

/// One flag from a task file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Given {
    /// The field as the user wrote it, e.g. `resources.accelerators` or `rayslurm.time`.
    pub(crate) field: String,
    pub(crate) line: u32,
    /// The flag's long name, without `--` (e.g. `num-gpus`).
    pub(crate) long: String,
    pub(crate) value: Value,
}

/// A flag's value as the file gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// `true`/`false` (a switch such as `per_node: true`).
    Switch(bool),
    /// One value, or several for a repeatable flag (`sbatch_arg: [..]`).
    Values(Vec<String>),
}

impl Given {
    pub(crate) fn one(field: &str, line: u32, long: &str, value: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            line,
            long: long.to_owned(),
            value: Value::Values(vec![value.into()]),
        }
    }

    pub(crate) fn switch(field: &str, line: u32, long: &str) -> Self {
        Self {
            field: field.to_owned(),
            line,
            long: long.to_owned(),
            value: Value::Switch(true),
        }
    }
}
