//! How GPUs are requested from Slurm: sites differ, so `--gpu-directive` (or the config files'
//! `gpu_directive`) picks the `#SBATCH` line the job's GPUs are asked with; `--num-gpus
//! [TYPE:]N` is always a count per node ([`GpuRequest`]), whatever `--tasks-per-node` is.

/// How GPUs are requested from Slurm (sites differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum GpuDirective {
    /// `#SBATCH --gpus-per-task=N` (as Ray's own launcher does).
    GpusPerTask,
    /// `#SBATCH --gpus-per-node=N`.
    GpusPerNode,
    /// `#SBATCH --gres=gpu:N`.
    Gres,
}

/// `--num-gpus [TYPE:]N` (or a task file's `accelerators: TYPE:N`): N GPUs on each node, of
/// TYPE where given (Slurm's GRES type, as the site names it, e.g. `a100`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct GpuRequest {
    pub(crate) kind: Option<String>,
    pub(crate) per_node: u32,
}

impl std::str::FromStr for GpuRequest {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        let value = value.trim();
        let (kind, count) = match value.rsplit_once(':') {
            Some((kind, count)) => (Some(kind), count),
            None => (None, value),
        };
        let per_node = count.trim().parse::<u32>().map_err(|_| {
            match count.trim().parse::<f64>() {
                Ok(f) if f.is_finite() && f > 0.0 && f.fract() != 0.0 => fraction(value, kind, f),
                _ => format!(
                    "`{}` is not a GPU count per node: give `N` or `TYPE:N` (for example `4` or `a100:4`)",
                    value.escape_debug()
                ),
            }
        })?;
        if let Some(k) = kind
            && (k.is_empty()
                || !k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)))
        {
            return Err(format!(
                "`{}` is not a GPU type: letters, digits, `_`, `-` and `.` only (for example `a100:4`)",
                k.escape_debug()
            ));
        }
        Ok(Self {
            kind: kind.map(str::to_owned),
            per_node,
        })
    }
}

/// Why `TYPE:0.5` is refused, and what to write instead.
fn fraction(value: &str, kind: Option<&str>, count: f64) -> String {
    let whole = format!(
        "{}{}",
        kind.map(|k| format!("{k}:")).unwrap_or_default(),
        count.ceil()
    );
    format!(
        "`{}` asks for a part of a GPU, which Slurm does not give (a job gets whole GPUs): ask for `{whole}` and share it inside the job (Ray: `@ray.remote(num_gpus={count})` on each task)",
        value.escape_debug()
    )
}

/// The `#SBATCH` option that asks for `gpus` on each node of a job with `tasks_per_node`
/// tasks a node, or `None` for no GPUs. `--gpus-per-task` counts per task, so it carries
/// N / tasks where that divides evenly (each task then gets its own share); else the request
/// falls back to `--gpus-per-node`, which means N per node whatever the tasks.
pub(crate) fn directive(
    how: GpuDirective,
    gpus: &GpuRequest,
    tasks_per_node: u32,
) -> Option<String> {
    let n = gpus.per_node;
    if n == 0 {
        return None;
    }
    let typed = |count: u32| match &gpus.kind {
        Some(kind) => format!("{kind}:{count}"),
        None => count.to_string(),
    };
    let tasks = tasks_per_node.max(1);
    Some(match how {
        GpuDirective::GpusPerTask if n.is_multiple_of(tasks) => {
            format!("--gpus-per-task={}", typed(n / tasks))
        }
        GpuDirective::GpusPerTask | GpuDirective::GpusPerNode => {
            format!("--gpus-per-node={}", typed(n))
        }
        GpuDirective::Gres => format!("--gres=gpu:{}", typed(n)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(text: &str) -> GpuRequest {
        text.parse().unwrap()
    }

    #[test]
    fn counts_and_types_parse() {
        assert_eq!(
            req("4"),
            GpuRequest {
                kind: None,
                per_node: 4
            }
        );
        assert_eq!(
            req("a100:8"),
            GpuRequest {
                kind: Some("a100".into()),
                per_node: 8
            }
        );
        for bad in [
            "", "x", ":4", "a100:", "a 100:2", "a100:-1", "a100:1.5", "a;b:2",
        ] {
            assert!(bad.parse::<GpuRequest>().is_err(), "{bad}");
        }
        // A part of a GPU says what to ask for instead.
        let why = "A100:0.5".parse::<GpuRequest>().unwrap_err();
        assert!(why.contains("asks for a part of a GPU"), "{why}");
        assert!(why.contains("ask for `A100:1`"), "{why}");
    }

    /// `--per-node --tasks-per-node 8 --num-gpus 8` once rendered `--gpus-per-task=8`: 64
    /// GPUs a node.
    #[test]
    fn gpus_per_task_never_multiplies_the_count_per_node() {
        use GpuDirective::*;
        for (how, gpus, tasks, want) in [
            (GpusPerTask, "8", 8, Some("--gpus-per-task=1")),
            (GpusPerTask, "8", 1, Some("--gpus-per-task=8")),
            (GpusPerTask, "a100:8", 4, Some("--gpus-per-task=a100:2")),
            (GpusPerTask, "3", 2, Some("--gpus-per-node=3")),
            (GpusPerNode, "h100:4", 8, Some("--gpus-per-node=h100:4")),
            (Gres, "a100:8", 8, Some("--gres=gpu:a100:8")),
            (Gres, "2", 1, Some("--gres=gpu:2")),
            (Gres, "a100:0", 1, None),
        ] {
            assert_eq!(
                directive(how, &req(gpus), tasks).as_deref(),
                want,
                "{how:?} {gpus} {tasks}"
            );
        }
    }
}
