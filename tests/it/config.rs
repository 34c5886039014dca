//! CLI tests of where `launch` takes its settings from, seen in the script `launch --dry-run`
//! writes: the command line, the environment (`RAYSLURM_*`), the project file
//! (`./rayslurm.toml`) and the user file (`$RAYSLURM_CONFIG`, else
//! `$XDG_CONFIG_HOME/rayslurm/config.toml`, else `~/.config/rayslurm/config.toml`), in that
//! order; and that a config file that cannot be used is a usage error that writes nothing.

use std::path::{Path, PathBuf};

use crate::harness::{Run, filter_stamps, rayslurm, text};

/// Where a setting is given, highest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    Cli,
    Env,
    Project,
    User,
}

const LAYERS: [Layer; 4] = [Layer::Cli, Layer::Env, Layer::Project, Layer::User];

/// A TOML value's type, for writing it into a file.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Number,
}

/// One setting of `launch` that a config file may give.
struct Key {
    /// Its name under `[launch]`.
    file: &'static str,
    /// Its environment variable, if it has one.
    env: Option<&'static str>,
    flag: &'static str,
    kind: Kind,
    /// A different value for each layer (in the order of [`LAYERS`]; unused for `Env` without
    /// `env`); `[DIR]` stands for the test's directory. Where a value equals the built-in
    /// default, it is the command line's, so that a file's value is never mistaken for it.
    values: [&'static str; 4],
    /// The script text that shows a value (`[DIR]` and `[STAMP]` as [`normalise`] leaves them).
    shown: fn(&str) -> String,
}

const KEYS: &[Key] = &[
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
        shown: |v| format!("#SBATCH --output={v}/exp_[STAMP].log\n"),
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
        env: None,
        flag: "--constraint",
        kind: Kind::Text,
        values: ["c-cli", "", "c-project", "c-user"],
        shown: |v| format!("#SBATCH --constraint={v}\n"),
    },
    Key {
        file: "template",
        env: None,
        flag: "--template",
        kind: Kind::Text,
        values: [
            "[DIR]/cli.tera",
            "",
            "[DIR]/project.tera",
            "[DIR]/user.tera",
        ],
        shown: |v| format!("\n# template {v}\n"),
    },
    Key {
        file: "gpu_directive",
        env: None,
        flag: "--gpu-directive",
        kind: Kind::Text,
        values: ["gpus-per-task", "", "gres", "gpus-per-node"],
        shown: |v| match v {
            "gres" => "#SBATCH --gres=gpu:2\n".to_owned(),
            other => format!("#SBATCH --{other}=2\n"),
        },
    },
    Key {
        file: "ip_family",
        env: None,
        flag: "--ip-family",
        kind: Kind::Text,
        values: ["auto", "", "6", "4"],
        shown: |v| format!("  --ip-family {v} \\\n"),
    },
    Key {
        file: "object_store_memory",
        env: None,
        flag: "--object-store-memory",
        kind: Kind::Number,
        values: ["1000001", "", "1000003", "1000004"],
        shown: |v| format!("  --object-store-memory {v} \\\n"),
    },
    Key {
        file: "ray_args",
        env: None,
        flag: "--ray-args",
        kind: Kind::Text,
        values: ["--r-cli=1", "", "--r-project=1", "--r-user=1"],
        shown: |v| format!("  --ray-args {v} \\\n"),
    },
    Key {
        file: "ray_head_args",
        env: None,
        flag: "--ray-head-args",
        kind: Kind::Text,
        values: ["--h-cli=1", "", "--h-project=1", "--h-user=1"],
        shown: |v| format!("  --ray-head-args {v} \\\n"),
    },
    Key {
        file: "ready_timeout",
        env: None,
        flag: "--ready-timeout",
        kind: Kind::Number,
        values: ["111", "", "113", "114"],
        shown: |v| format!("  --ready-timeout {v} \\\n"),
    },
    Key {
        file: "stop_grace",
        env: None,
        flag: "--stop-grace",
        kind: Kind::Number,
        values: ["21", "", "23", "24"],
        shown: |v| format!("  --stop-grace {v} \\\n"),
    },
];

impl Key {
    fn value(&self, layer: Layer) -> &'static str {
        self.values[LAYERS.iter().position(|l| *l == layer).unwrap()]
    }

    /// Whether the key can be given in `layer` at all.
    fn has(&self, layer: Layer) -> bool {
        layer != Layer::Env || self.env.is_some()
    }
}

/// A fresh directory: `work/` (the working directory), a log directory and a template for each
/// layer's value.
struct World {
    root: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("work")).unwrap();
        let builtin = text(&rayslurm(["template"]).output()).0;
        let (shebang, rest) = builtin.split_once('\n').unwrap();
        for layer in ["cli", "env", "project", "user"] {
            std::fs::create_dir(root.path().join(format!("logs-{layer}"))).unwrap();
            let template = root.path().join(format!("{layer}.tera"));
            std::fs::write(
                &template,
                format!("{shebang}\n# template {}\n{rest}", template.display()),
            )
            .unwrap();
        }
        Self { root }
    }

    fn dir(&self) -> &Path {
        self.root.path()
    }

    fn work(&self) -> PathBuf {
        self.dir().join("work")
    }

    /// `[DIR]` made this world's directory.
    fn real(&self, value: &str) -> String {
        value.replace("[DIR]", &self.dir().display().to_string())
    }

    /// The script, this world's directory as `[DIR]`, launch times as `[STAMP]`.
    fn normalise(&self, script: &str) -> String {
        filter_stamps(&script.replace(&self.dir().display().to_string(), "[DIR]"))
    }

    /// A config file with `keys` under `[launch]`, each with its value for `layer`.
    fn write_config(&self, path: &Path, keys: &[&Key], layer: Layer) {
        let mut launch = toml::Table::new();
        for key in keys {
            let value = self.real(key.value(layer));
            let value = match key.kind {
                Kind::Text => toml::Value::String(value),
                Kind::Number => toml::Value::Integer(value.parse().unwrap()),
            };
            launch.insert(key.file.to_owned(), value);
        }
        let mut file = toml::Table::new();
        file.insert("launch".to_owned(), toml::Value::Table(launch));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, toml::to_string(&file).unwrap()).unwrap();
    }

    /// `launch --dry-run` with each key given in the layers `given(key)` names; returns the
    /// normalised script.
    fn launch(&self, given: impl Fn(&Key) -> Vec<Layer>) -> String {
        let in_layer = |layer: Layer| -> Vec<&Key> {
            KEYS.iter()
                .filter(|k| k.has(layer) && given(k).contains(&layer))
                .collect()
        };
        let user_file = self.dir().join("user.toml");
        self.write_config(
            &self.work().join("rayslurm.toml"),
            &in_layer(Layer::Project),
            Layer::Project,
        );
        self.write_config(&user_file, &in_layer(Layer::User), Layer::User);
        let mut args = vec![
            "launch".to_owned(),
            "--dry-run".to_owned(),
            "--exp-name".to_owned(),
            "exp".to_owned(),
            "--command".to_owned(),
            "true".to_owned(),
            "--num-gpus".to_owned(),
            "2".to_owned(),
        ];
        for key in in_layer(Layer::Cli) {
            args.push(key.flag.to_owned());
            args.push(self.real(key.value(Layer::Cli)));
        }
        let mut run = rayslurm(args)
            .cwd(&self.work())
            .env("RAYSLURM_CONFIG", &user_file);
        for key in in_layer(Layer::Env) {
            run = run.env(key.env.unwrap(), self.real(key.value(Layer::Env)));
        }
        let out = run.output();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        self.normalise(&stdout)
    }
}

/// Layers from the lowest up to `top`.
fn up_to(top: Layer) -> Vec<Layer> {
    let at = LAYERS.iter().position(|l| *l == top).unwrap();
    LAYERS[at..].to_vec()
}

/// Each key of the script shows the value of the highest layer that gives it, and no other.
#[test]
fn command_line_beats_environment_beats_project_file_beats_user_file() {
    type Given = Box<dyn Fn(&Key) -> Vec<Layer>>;
    let cases: Vec<(&str, Given)> = vec![
        ("the user file alone", Box::new(|_| up_to(Layer::User))),
        ("project over user", Box::new(|_| up_to(Layer::Project))),
        ("environment over files", Box::new(|_| up_to(Layer::Env))),
        ("command line over all", Box::new(|_| up_to(Layer::Cli))),
        ("the project file alone", Box::new(|_| vec![Layer::Project])),
        ("the environment alone", Box::new(|_| vec![Layer::Env])),
        // Each key is resolved on its own: the keys' winners differ within one launch.
        (
            "a different top for each key",
            Box::new(|k| {
                let at = KEYS.iter().position(|o| o.file == k.file).unwrap();
                up_to(LAYERS[at % LAYERS.len()])
            }),
        ),
    ];
    let world = World::new();
    for (case, given) in &cases {
        let script = world.launch(given);
        let mut wrong = Vec::new();
        for key in KEYS {
            let layers: Vec<Layer> = given(key).into_iter().filter(|l| key.has(*l)).collect();
            let Some(winner) = LAYERS.into_iter().find(|l| layers.contains(l)) else {
                continue;
            };
            let want = (key.shown)(key.value(winner));
            if !script.contains(&want) {
                wrong.push(format!(
                    "{} from {winner:?}: no `{}`",
                    key.file,
                    want.trim()
                ));
            }
            for loser in layers.iter().filter(|l| **l != winner) {
                let not = (key.shown)(key.value(*loser));
                if not != want && script.contains(&not) {
                    wrong.push(format!("{} from {loser:?}: `{}`", key.file, not.trim()));
                }
            }
        }
        assert!(wrong.is_empty(), "{case}: {wrong:#?}\n{script}");
    }
}

/// Where the user file is looked for: `$RAYSLURM_CONFIG`, else
/// `$XDG_CONFIG_HOME/rayslurm/config.toml` (only if absolute), else
/// `$HOME/.config/rayslurm/config.toml`.
#[test]
fn the_user_file_is_found_by_rayslurm_config_then_xdg_config_home_then_home() {
    // (The regression: an empty XDG_CONFIG_HOME read `./rayslurm/config.toml`.)
    let world = World::new();
    let named = world.dir().join("named.toml");
    let xdg = world.dir().join("xdg");
    let home = world.dir().join("home");
    let partition = |p: &Path, name: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("[launch]\npartition = \"{name}\"\n")).unwrap();
    };
    partition(&named, "named");
    partition(&xdg.join("rayslurm/config.toml"), "xdg");
    partition(&home.join(".config/rayslurm/config.toml"), "home");
    partition(&world.work().join("rayslurm/config.toml"), "cwd-empty-xdg");
    partition(
        &world.work().join("xdg/rayslurm/config.toml"),
        "cwd-relative-xdg",
    );
    let launch = || {
        rayslurm([
            "launch",
            "--dry-run",
            "--exp-name",
            "exp",
            "--command",
            "true",
        ])
        .cwd(&world.work())
    };
    let cases: Vec<(&str, Run, &str)> = vec![
        (
            "RAYSLURM_CONFIG before the others",
            launch()
                .env("RAYSLURM_CONFIG", &named)
                .env("XDG_CONFIG_HOME", &xdg)
                .env("HOME", &home),
            "named",
        ),
        (
            "XDG_CONFIG_HOME before HOME",
            launch()
                .env_remove("RAYSLURM_CONFIG")
                .env("XDG_CONFIG_HOME", &xdg)
                .env("HOME", &home),
            "xdg",
        ),
        (
            "HOME",
            launch().env_remove("RAYSLURM_CONFIG").env("HOME", &home),
            "home",
        ),
        // The XDG rule: an empty or relative XDG_CONFIG_HOME is ignored. Both would otherwise
        // find a file below the working directory.
        (
            "XDG_CONFIG_HOME empty",
            launch()
                .env_remove("RAYSLURM_CONFIG")
                .env("XDG_CONFIG_HOME", "")
                .env("HOME", &home),
            "home",
        ),
        (
            "XDG_CONFIG_HOME relative",
            launch()
                .env_remove("RAYSLURM_CONFIG")
                .env("XDG_CONFIG_HOME", "xdg")
                .env("HOME", &home),
            "home",
        ),
    ];
    for (case, run, partition) in cases {
        let out = run.output();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{case}: {stderr}");
        assert!(
            stdout.contains(&format!("\n#SBATCH --partition={partition}\n")),
            "{case}: {stdout}"
        );
    }
}

/// A config file that cannot be used is refused, naming the file, before anything is written.
#[test]
fn an_invalid_config_file_exits_2_names_the_file_and_writes_nothing() {
    #[derive(Debug, Clone, Copy)]
    enum Place {
        Project,
        /// Named by `RAYSLURM_CONFIG`.
        Named,
        /// Under `XDG_CONFIG_HOME`.
        Xdg,
    }
    let cases: &[(Place, &str, &str)] = &[
        (Place::Project, "[launch]\nparition = \"x\"\n", "parition"),
        (Place::Project, "[launch\npartition = \"x\"\n", "TOML"),
        (Place::Project, "partition = \"x\"\n", "partition"),
        (
            Place::Project,
            "[launch]\nready_timeout = \"soon\"\n",
            "ready_timeout",
        ),
        (
            Place::Project,
            "[launch]\ngpu_directive = \"gpus\"\n",
            "gpu_directive",
        ),
        (Place::Named, "[launch]\nparition = \"x\"\n", "parition"),
        (Place::Named, "[launch]\npartition = \"x\n", "TOML"),
        (Place::Xdg, "[lunch]\npartition = \"x\"\n", "lunch"),
    ];
    for (place, content, needle) in cases {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        let xdg = root.path().join("xdg");
        std::fs::create_dir(&work).unwrap();
        let file = match place {
            Place::Project => work.join("rayslurm.toml"),
            Place::Named => root.path().join("named.toml"),
            Place::Xdg => xdg.join("rayslurm/config.toml"),
        };
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, content).unwrap();
        let mut run = rayslurm([
            "launch",
            "--dry-run",
            "--exp-name",
            "x",
            "--command",
            "true",
        ])
        .cwd(&work);
        run = match place {
            Place::Project => run,
            Place::Named => run.env("RAYSLURM_CONFIG", &file),
            Place::Xdg => run
                .env_remove("RAYSLURM_CONFIG")
                .env("XDG_CONFIG_HOME", &xdg),
        };
        let out = run.output();
        let (stdout, stderr) = text(&out);
        let case = format!("{place:?} {content:?}");
        assert_eq!(out.status.code(), Some(2), "{case}: {stderr}");
        assert!(stderr.starts_with("error:"), "{case}: {stderr}");
        assert!(
            stderr.contains(&format!("`{}`", file.display())),
            "{case}: names the file: {stderr}"
        );
        assert!(stderr.contains(needle), "{case}: {stderr}");
        assert_eq!(stdout, "", "{case}");
        let mut written: Vec<_> = std::fs::read_dir(&work)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        written.retain(|n| n != "rayslurm.toml");
        assert!(written.is_empty(), "{case} wrote {written:?}");
    }
}

/// A project file that cannot be read at all (here: a directory) is refused the same way.
#[test]
fn an_unreadable_project_file_exits_2_and_names_it() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("rayslurm.toml")).unwrap();
    let out = rayslurm([
        "launch",
        "--dry-run",
        "--exp-name",
        "x",
        "--command",
        "true",
    ])
    .cwd(root.path())
    .output();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "`{}`",
            root.path().join("rayslurm.toml").display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
}
