//! A worker type as `up --worker-type 'NAME: OPTIONS'` takes it (the options shell words, each
//! a long option of `launch`'s syntax, docs/clusters.md): the one form into which Ray's cluster
//! YAML (`launch::ray_yaml`) and a task file's `rayslurm: worker_types:` section are turned, so
//! that `up`'s one parser checks them all. Here: a type's name checked, its options read from
//! a YAML mapping (`partition: gpu`, `num_gpus: l4:1`, `max_workers: 2`), and the flag's value
//! written.

use crate::launch::task_file::node::{Line, Node};
use crate::sys::quote::shell_quote;

/// The options a worker type takes, by their long names, and whether each takes a value
/// (else a switch).
pub(crate) const OPTIONS: &[(&str, bool)] = &[
    ("partition", true),
    ("account", true),
    ("qos", true),
    ("time", true),
    ("num-nodes", true),
    ("cpus-per-task", true),
    ("mem", true),
    ("mem-per-cpu", true),
    ("num-gpus", true),
    ("constraint", true),
    ("exclusive", false),
    ("sbatch-arg", true),
    ("container-image", true),
    ("setup", true),
    ("resources", true),
    ("labels", true),
    ("min-workers", true),
    ("max-workers", true),
    ("idle-timeout", true),
    ("preemptible", false),
    ("rollover", true),
    // The cluster's alone (Ray YAML's `provider:`), never a worker type's.
    ("load-env", true),
    ("gpu-directive", true),
];

/// The options only the cluster as a whole takes (its head's `up` flags, which its worker
/// types share), not a worker type.
pub(crate) const CLUSTER_ONLY: &[&str] = &["load-env", "gpu-directive"];

/// The long names of a worker type's options.
pub(crate) fn worker_options() -> Vec<&'static str> {
    OPTIONS
        .iter()
        .map(|(l, _)| *l)
        .filter(|l| !CLUSTER_ONLY.contains(l))
        .collect()
}

/// The options that are Slurm's (`launch`'s own, checked as `up` checks them); the others are
/// the worker type's own (Ray's resources and labels, scaling).
pub(crate) const SLURM_OPTIONS: &[&str] = &[
    "partition",
    "account",
    "qos",
    "time",
    "num-nodes",
    "cpus-per-task",
    "mem",
    "mem-per-cpu",
    "num-gpus",
    "constraint",
    "exclusive",
    "sbatch-arg",
    "container-image",
    "setup",
];

/// One option of a worker type: the field and line it came from, its long name, and its value
/// (`None` for a switch; `--no-exclusive` is the long name `no-exclusive`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeOption {
    pub(crate) field: String,
    pub(crate) line: u32,
    pub(crate) long: String,
    pub(crate) value: Option<String>,
}

impl TypeOption {
    pub(crate) fn new(field: &str, line: u32, long: &str, value: Option<String>) -> Self {
        Self {
            field: field.to_owned(),
            line,
            long: long.to_owned(),
            value,
        }
    }

    /// As words of a command line: `--long=value` or `--long`.
    pub(crate) fn words(&self) -> Vec<String> {
        match &self.value {
            Some(v) => vec![format!("--{}={v}", self.long)],
            None => vec![format!("--{}", self.long)],
        }
    }
}

/// A worker type: its name and options in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerType {
    pub(crate) name: String,
    pub(crate) options: Vec<TypeOption>,
}

impl WorkerType {
    /// The value of `--worker-type`: `NAME: --long value ...`, each word quoted for a shell
    /// where it needs to be.
    pub(crate) fn flag_value(&self) -> String {
        let mut text = format!("{}:", self.name);
        for option in &self.options {
            text.push_str(&format!(" --{}", option.long));
            if let Some(value) = &option.value {
                text.push(' ');
                text.push_str(&shell_quote(value));
            }
        }
        text
    }
}

/// What Ray is told of a node beyond what Slurm gives it, as `ray start`'s words: its `CPU`,
/// `GPU`, `memory` and `object_store_memory` as Ray's own flags (which `ray start` requires for
/// them), the others as one `--resources` JSON object, then `--labels` (`K=V,...`), if any.
/// Ray's own four take whole numbers: a fraction of one is the caller's to refuse.
pub(crate) fn ray_start_words(
    resources: &std::collections::BTreeMap<String, f64>,
    labels: Option<&str>,
) -> Vec<String> {
    let number = |n: f64| {
        if n.fract() == 0.0 && n >= 0.0 {
            serde_json::Value::from(n as u64)
        } else {
            serde_json::json!(n)
        }
    };
    let mut words = Vec::new();
    let mut custom = serde_json::Map::new();
    for (key, amount) in resources {
        let flag = match key.as_str() {
            "CPU" => "--num-cpus",
            "GPU" => "--num-gpus",
            "memory" => "--memory",
            "object_store_memory" => "--object-store-memory",
            _ => {
                custom.insert(key.clone(), number(*amount));
                continue;
            }
        };
        words.push(format!("{flag}={}", number(*amount)));
    }
    if !custom.is_empty() {
        words.push(format!("--resources={}", serde_json::Value::Object(custom)));
    }
    if let Some(labels) = labels.filter(|l| !l.is_empty()) {
        words.push(format!("--labels={labels}"));
    }
    words
}

/// A worker type's name: `[A-Za-z0-9_-]+`, 1-40 characters, not `head`.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !fine {
        let shown: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        return Err(format!(
            "a worker type's name is 1 to 40 letters, digits, `_` and `-` (Ray's node-group label): write e.g. `{shown}`"
        ));
    }
    if name == "head" {
        return Err(
            "`head` names the head node's own type: give the worker type another name".into(),
        );
    }
    Ok(())
}

/// One option of a mapping (`partition: gpu`): `key` with `_` or `-`, among `allowed` (long
/// names); its value as the option takes it. `resources:` (a mapping of numbers) becomes its
/// JSON, `labels:` `K=V,K=V`, a list one option each (`sbatch_arg`), `exclusive: false`
/// `--no-exclusive`, another switch's `false` nothing.
pub(crate) fn option_of(
    field: &str,
    key: &Line<String>,
    value: &Line<Node>,
    allowed: &[&str],
) -> Result<Vec<TypeOption>, (u32, String)> {
    let long = key.value.replace('_', "-");
    let Some((_, takes_value)) = OPTIONS
        .iter()
        .find(|(l, _)| *l == long && allowed.contains(l))
    else {
        return Err((key.line, unknown_option(&key.value, allowed)));
    };
    let one = |v: String| Ok(vec![TypeOption::new(field, key.line, &long, Some(v))]);
    match (&value.value, takes_value) {
        (Node::Bool(true), false) => Ok(vec![TypeOption::new(field, key.line, &long, None)]),
        (Node::Bool(false), false) if long == "exclusive" => {
            Ok(vec![TypeOption::new(field, key.line, "no-exclusive", None)])
        }
        (Node::Bool(false), false) => Ok(Vec::new()),
        (_, false) => Err((
            key.line,
            format!("`{long}` is a switch: give true or false"),
        )),
        (Node::Map(entries), true) if long == "resources" => one(resources_json(entries)?),
        (Node::Map(entries), true) if long == "labels" => one(labels(entries)?),
        (Node::Seq(items), true) if long == "sbatch-arg" || long == "setup" => {
            let texts = items
                .iter()
                .map(|i| {
                    i.value
                        .scalar_text()
                        .ok_or((i.line, "give a list of text".to_owned()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            if long == "setup" {
                return one(texts.join("\n"));
            }
            Ok(texts
                .into_iter()
                .map(|t| TypeOption::new(field, key.line, &long, Some(t)))
                .collect())
        }
        (other, true) => match other.scalar_text() {
            Some(text) => one(text),
            None => Err((value.line, format!("is {}: give a value", other.kind()))),
        },
    }
}

/// A key that is no option of a worker type: what is, and the closest by spelling.
fn unknown_option(key: &str, allowed: &[&str]) -> String {
    let long = key.replace('_', "-");
    let near = allowed
        .iter()
        .map(|a| (strsim::levenshtein(&long, a), a))
        .filter(|(d, _)| *d <= 2)
        .min();
    let names: Vec<String> = allowed.iter().map(|a| a.replace('-', "_")).collect();
    let mut why = format!(
        "not an option of a worker type (these are: {})",
        names.join(", ")
    );
    if let Some((_, near)) = near {
        why.push_str(&format!("; did you mean `{}`?", near.replace('-', "_")));
    }
    why
}

/// `resources: {CPU: 8, accel: 2}` as the JSON object `--resources` takes.
fn resources_json(entries: &[(Line<String>, Line<Node>)]) -> Result<String, (u32, String)> {
    let mut object = serde_json::Map::new();
    for (key, value) in entries {
        let number = match value.value {
            Node::Int(n) if n >= 0 => serde_json::Value::from(n),
            Node::Float(f) if f >= 0.0 && f.is_finite() => serde_json::Value::from(f),
            _ => {
                return Err((
                    key.line,
                    format!(
                        "resources.{}: give a number of at least 0 (Ray's resources are counts)",
                        key.value
                    ),
                ));
            }
        };
        object.insert(key.value.clone(), number);
    }
    Ok(serde_json::Value::Object(object).to_string())
}

/// `labels: {zone: a, tier: spot}` as `zone=a,tier=spot`.
fn labels(entries: &[(Line<String>, Line<Node>)]) -> Result<String, (u32, String)> {
    let mut pairs = Vec::new();
    for (key, value) in entries {
        let text = value
            .value
            .scalar_text()
            .ok_or((key.line, format!("labels.{}: give text", key.value)))?;
        if key.value.contains([',', '=']) || text.contains(',') {
            return Err((
                key.line,
                format!(
                    "labels.{}: a label holds no `,` (nor `=` in its key)",
                    key.value
                ),
            ));
        }
        pairs.push(format!("{}={text}", key.value));
    }
    Ok(pairs.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::task_file::node::parse_all;

    fn options(yaml: &str) -> Result<Vec<TypeOption>, (u32, String)> {
        let Node::Map(entries) = parse_all(yaml).unwrap().remove(0).value else {
            panic!("a map")
        };
        let all = worker_options();
        let mut out = Vec::new();
        for (k, v) in &entries {
            out.extend(option_of("t", k, v, &all)?);
        }
        Ok(out)
    }

    #[test]
    fn a_mapping_becomes_the_options_of_a_worker_type_and_its_flag_value() {
        let read = options(
            "partition: gpu\nnum_gpus: l4:1\nmax-workers: 2\nexclusive: false\npreemptible: true\nresources: {CPU: 4, accel: 1}\nlabels: {tier: spot}\nsetup: [pip install x, echo 'ok']\nsbatch_arg: [--mail-type=END, --comment=a b]\n",
        )
        .unwrap();
        let value = WorkerType {
            name: "gpu".into(),
            options: read,
        }
        .flag_value();
        assert_eq!(
            value,
            r#"gpu: --partition gpu --num-gpus l4:1 --max-workers 2 --no-exclusive --preemptible --resources '{"CPU":4,"accel":1}' --labels tier=spot --setup 'pip install x
echo '\''ok'\''' --sbatch-arg --mail-type=END --sbatch-arg '--comment=a b'"#
        );
        // Read back as a shell (and `up`'s parser) reads it.
        let words = shlex::split(value.split_once(": ").unwrap().1).unwrap();
        assert!(
            words.contains(&"pip install x\necho 'ok'".to_owned()),
            "{words:?}"
        );
        assert!(
            words.contains(&r#"{"CPU":4,"accel":1}"#.to_owned()),
            "{words:?}"
        );
    }

    #[test]
    fn what_a_worker_type_cannot_take_is_refused_by_line() {
        let (line, why) = options("partition: gpu\npartiton: x\n").unwrap_err();
        assert_eq!(line, 2);
        assert!(why.contains("did you mean `partition`?"), "{why}");
        let (line, why) = options("qos: a\nresources: {GPU: -1}\n").unwrap_err();
        assert_eq!((line, why.contains("at least 0")), (2, true), "{why}");
        let (_, why) = options("preemptible: maybe\n").unwrap_err();
        assert!(why.contains("give true or false"), "{why}");
        let (_, why) = options("partition: {a: 1}\n").unwrap_err();
        assert!(why.contains("a mapping"), "{why}");
        assert_eq!(options("preemptible: false\n").unwrap(), []);
    }

    #[test]
    fn a_worker_types_name_is_a_node_group_label() {
        for ok in ["gpu", "cpu_2", "spot-a", &"x".repeat(40)] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        let why = check_name("ray.worker.gpu").unwrap_err();
        assert!(why.contains("`ray-worker-gpu`"), "{why}");
        assert!(check_name("head").is_err());
        assert!(check_name("").is_err());
        assert!(check_name(&"x".repeat(41)).is_err());
    }
}
