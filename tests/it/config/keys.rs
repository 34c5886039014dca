//! Every key a config file takes, with its variable, its flag and a value for each layer.

/// Where a setting is given, highest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layer {
    Cli,
    Env,
    Project,
    User,
}

pub(super) const LAYERS: [Layer; 4] = [Layer::Cli, Layer::Env, Layer::Project, Layer::User];

/// A TOML value's type, for writing it into a file.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Text,
    Number,
}

/// One setting of `launch` that a config file may give.
pub(super) struct Key {
    /// Its name under `[launch]`.
    pub(super) file: &'static str,
    /// Its environment variable, if it has one.
    pub(super) env: Option<&'static str>,
    pub(super) flag: &'static str,
    pub(super) kind: Kind,
    /// A different value for each layer (in the order of [`LAYERS`]; unused for `Env` without
    /// `env`); `[DIR]` stands for the test's directory. Where a value equals the built-in
    /// default, it is the command line's, so that a file's value is never mistaken for it.
    pub(super) values: [&'static str; 4],
    /// The script text that shows a value (`[DIR]` and `[STAMP]` as `World::normalise` leaves them).
    pub(super) shown: fn(&str) -> String,
}

pub(super) const KEYS: &[Key] = &[
    Key {
        file: "partition",
        env: Some("RAYSLURM_PARTITION"),
        flag: "--partition",
        kind: Kind::Text,
        values: ["p-cli", "p-env", "p-project", "p-user"],
        shown: |v| format!("#SBATCH --partition={v}\n"),
    },
    Key {
        file: "account",
        env: Some("RAYSLURM_ACCOUNT"),
        flag: "--account",
        kind: Kind::Text,
        values: ["a-cli", "a-env", "a-project", "a-user"],
        shown: |v| format!("#SBATCH --account={v}\n"),
    },
    Key {
        file: "qos",
        env: Some("RAYSLURM_QOS"),
        flag: "--qos",
        kind: Kind::Text,
        values: ["q-cli", "q-env", "q-project", "q-user"],
        shown: |v| format!("#SBATCH --qos={v}\n"),
    },
    Key {
        file: "time",
        env: Some("RAYSLURM_TIME"),
        flag: "--time",
        kind: Kind::Text,
        values: ["10:00", "20:00", "30:00", "40:00"],
        shown: |v| format!("#SBATCH --time={v}\n"),
    },
    Key {
        file: "log_dir",
        env: Some("RAYSLURM_LOG_DIR"),
        flag: "--log-dir",
        kind: Kind::Text,
        values: [
            "[DIR]/logs-cli",
            "[DIR]/logs-env",
            "[DIR]/logs-project",
            "[DIR]/logs-user",
        ],
        shown: |v| format!("(linked from {v}/exp_[STAMP].log)\n"),
    },
    Key {
        file: "load_env",
        env: Some("RAYSLURM_LOAD_ENV"),
        flag: "--load-env",
        kind: Kind::Text,
        values: ["source cli", "source env", "source project", "source user"],
        shown: |v| format!("\neval '{v}' || "),
    },
    Key {
        file: "interface",
        env: Some("RAYSLURM_INTERFACE"),
        flag: "--interface",
        kind: Kind::Text,
        values: ["ib-cli", "ib-env", "ib-project", "ib-user"],
        shown: |v| format!("  --interface {v} \\\n"),
    },
    Key {
        file: "constraint",
        env: Some("RAYSLURM_CONSTRAINT"),
        flag: "--constraint",
        kind: Kind::Text,
        values: ["c-cli", "c-env", "c-project", "c-user"],
        shown: |v| format!("#SBATCH --constraint={v}\n"),
    },
    Key {
        file: "template",
        env: Some("RAYSLURM_TEMPLATE"),
        flag: "--template",
        kind: Kind::Text,
        values: [
            "[DIR]/cli.tera",
            "[DIR]/env.tera",
            "[DIR]/project.tera",
            "[DIR]/user.tera",
        ],
        shown: |v| format!("\n# template {v}\n"),
    },
    Key {
        file: "gpu_directive",
        env: Some("RAYSLURM_GPU_DIRECTIVE"),
        flag: "--gpu-directive",
        kind: Kind::Text,
        // Three values for four layers: each differs from the layer below it.
        values: ["gpus-per-task", "gres", "gpus-per-node", "gres"],
        shown: |v| match v {
            "gres" => "#SBATCH --gres=gpu:2\n".to_owned(),
            other => format!("#SBATCH --{other}=2\n"),
        },
    },
    Key {
        file: "ip_family",
        env: Some("RAYSLURM_IP_FAMILY"),
        flag: "--ip-family",
        kind: Kind::Text,
        values: ["auto", "4", "6", "4"],
        shown: |v| format!("  --ip-family {v} \\\n"),
    },
    Key {
        file: "object_store_memory",
        env: Some("RAYSLURM_OBJECT_STORE_MEMORY"),
        flag: "--object-store-memory",
        kind: Kind::Number,
        values: ["1000001", "1000002", "1000003", "1000004"],
        shown: |v| format!("  --object-store-memory {v} \\\n"),
    },
    Key {
        file: "ray_args",
        env: Some("RAYSLURM_RAY_ARGS"),
        flag: "--ray-args",
        kind: Kind::Text,
        values: ["--r-cli=1", "--r-env=1", "--r-project=1", "--r-user=1"],
        shown: |v| format!("  --ray-args {v} \\\n"),
    },
    Key {
        file: "ray_head_args",
        env: Some("RAYSLURM_RAY_HEAD_ARGS"),
        flag: "--ray-head-args",
        kind: Kind::Text,
        values: ["--h-cli=1", "--h-env=1", "--h-project=1", "--h-user=1"],
        shown: |v| format!("  --ray-head-args {v} \\\n"),
    },
    Key {
        file: "ready_timeout",
        env: Some("RAYSLURM_READY_TIMEOUT"),
        flag: "--ready-timeout",
        kind: Kind::Number,
        values: ["111", "112", "113", "114"],
        shown: |v| format!("  --ready-timeout {v} \\\n"),
    },
    Key {
        file: "setup_timeout",
        env: Some("RAYSLURM_SETUP_TIMEOUT"),
        flag: "--setup-timeout",
        kind: Kind::Number,
        values: ["121", "122", "123", "124"],
        shown: |v| format!("  --setup-timeout {v} \\\n"),
    },
    Key {
        file: "stop_grace",
        env: Some("RAYSLURM_STOP_GRACE"),
        flag: "--stop-grace",
        kind: Kind::Number,
        values: ["21", "22", "23", "24"],
        shown: |v| format!("  --stop-grace {v} \\\n"),
    },
    Key {
        file: "signal",
        env: Some("RAYSLURM_SIGNAL"),
        flag: "--signal",
        kind: Kind::Text,
        values: ["USR1", "USR2", "HUP", "INT"],
        shown: |v| format!("  --signal {v} \\\n"),
    },
    Key {
        file: "max_requeues",
        env: Some("RAYSLURM_MAX_REQUEUES"),
        flag: "--max-requeues",
        kind: Kind::Number,
        values: ["5", "6", "7", "8"],
        shown: |v| format!("  --max-requeues {v} \\\n"),
    },
    Key {
        file: "idle_timeout",
        env: Some("RAYSLURM_IDLE_TIMEOUT"),
        flag: "--idle-timeout",
        kind: Kind::Text,
        values: ["11m", "12m", "13m", "14m"],
        shown: |v| {
            let minutes: u32 = v.trim_end_matches('m').parse().unwrap();
            format!("  --idle-timeout {} \\\n", minutes * 60)
        },
    },
    // An image that is a path must exist: each layer names a directory of the world's.
    Key {
        file: "container_image",
        env: Some("RAYSLURM_CONTAINER_IMAGE"),
        flag: "--container-image",
        kind: Kind::Text,
        values: [
            "[DIR]/logs-cli",
            "[DIR]/logs-env",
            "[DIR]/logs-project",
            "[DIR]/logs-user",
        ],
        shown: |v| format!("  --container-image {v} \\\n"),
    },
    // One comma-separated string (a file's list is `tests/it/container`'s).
    Key {
        file: "container_mounts",
        env: Some("RAYSLURM_CONTAINER_MOUNTS"),
        flag: "--container-mounts",
        kind: Kind::Text,
        values: ["/m-cli,/n:/o:ro", "/m-env", "/m-project", "/m-user"],
        shown: |v| {
            let mounts: Vec<String> = v
                .split(',')
                .map(|m| match m.split_once(':') {
                    Some(_) => m.to_owned(),
                    None => format!("{m}:{m}"),
                })
                .collect();
            format!("  --container-mounts {} \\\n", mounts.join(","))
        },
    },
    Key {
        file: "container_workdir",
        env: Some("RAYSLURM_CONTAINER_WORKDIR"),
        flag: "--container-workdir",
        kind: Kind::Text,
        values: ["/w-cli", "/w-env", "/w-project", "/w-user"],
        shown: |v| format!("  --container-workdir {v} \\\n"),
    },
    Key {
        file: "container_runtime",
        env: Some("RAYSLURM_CONTAINER_RUNTIME"),
        flag: "--container-runtime",
        kind: Kind::Text,
        values: ["pyxis", "apptainer", "singularity", "charliecloud"],
        shown: |v| format!("  --container-runtime {v} \\\n"),
    },
];

/// Keys of `up` alone; the others are `launch`'s (and `up`'s too).
pub(super) const UP_ONLY: &[&str] = &["idle_timeout"];
/// Keys of `launch` alone: a cluster of `up` is never signalled for its command nor requeued.
pub(super) const LAUNCH_ONLY: &[&str] = &["signal", "max_requeues"];

impl Key {
    pub(super) fn value(&self, layer: Layer) -> &'static str {
        self.values[LAYERS.iter().position(|l| *l == layer).unwrap()]
    }

    /// Whether the key can be given in `layer` at all.
    pub(super) fn has(&self, layer: Layer) -> bool {
        layer != Layer::Env || self.env.is_some()
    }
}

/// Layers from the lowest up to `top`.
pub(super) fn up_to(top: Layer) -> Vec<Layer> {
    let at = LAYERS.iter().position(|l| *l == top).unwrap();
    LAYERS[at..].to_vec()
}
