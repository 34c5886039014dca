//! CLI tests of where `launch` takes its settings from, seen in the script `launch --dry-run`
//! writes: the command line, the environment (`RAYSLURM_*`), the project file
//! (`./rayslurm.toml`) and the user file (`$RAYSLURM_CONFIG`, else
//! `$XDG_CONFIG_HOME/rayslurm/config.toml`, else `~/.config/rayslurm/config.toml`), in that
//! order, for every key a file takes (each has its variable); and that a config file or a
//! variable that cannot be used is a usage error that writes nothing.

use std::path::{Path, PathBuf};

use crate::harness::{Run, filter_stamps, rayslurm, text};

/// `launch --dry-run` of a run that does nothing: the script shows the settings resolved.
fn dry_run() -> Run {
    rayslurm([
        "launch",
        "--dry-run",
        "--exp-name",
        "x",
        "--command",
        "true",
    ])
}

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
];

/// Keys of `up` alone; the others are `launch`'s (and `up`'s too).
const UP_ONLY: &[&str] = &["idle_timeout"];
/// Keys of `launch` alone: a cluster of `up` is never signalled for its command nor requeued.
const LAUNCH_ONLY: &[&str] = &["signal", "max_requeues"];

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

    /// `launch --dry-run` (and `up --dry-run`, for [`UP_ONLY`] keys) with each key given in the
    /// layers `given(key)` names; returns the normalised scripts.
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
        let mut scripts = String::new();
        for up in [false, true] {
            let mut args: Vec<String> = if up {
                vec!["up".into(), "cluster".into(), "--dry-run".into()]
            } else {
                [
                    "launch",
                    "--dry-run",
                    "--exp-name",
                    "exp",
                    "--command",
                    "true",
                ]
                .map(str::to_owned)
                .to_vec()
            };
            args.extend(["--num-gpus".to_owned(), "2".to_owned()]);
            if !up {
                // `max_requeues` means something with it (and the flag alone is refused).
                args.push("--requeue".to_owned());
            }
            for key in in_layer(Layer::Cli) {
                // `up` takes `launch`'s keys too: given the same, its script agrees.
                let for_this = if up {
                    !LAUNCH_ONLY.contains(&key.file)
                } else {
                    !UP_ONLY.contains(&key.file)
                };
                if for_this {
                    args.push(key.flag.to_owned());
                    args.push(self.real(key.value(Layer::Cli)));
                }
            }
            let mut run = rayslurm(args)
                .cwd(&self.work())
                .env("RAYSLURM_CONFIG", &user_file)
                .env("RAYSLURM_STATE_DIR", self.dir().join("state"));
            for key in in_layer(Layer::Env) {
                run = run.env(key.env.unwrap(), self.real(key.value(Layer::Env)));
            }
            let ran = run.case(format!("up: {up}")).expect_status(0).run();
            scripts.push_str(&self.normalise(&ran.stdout));
        }
        scripts
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
        run.case(case)
            .expect_status(0)
            .expect_stdout_contains(&format!("\n#SBATCH --partition={partition}\n"))
            .run();
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
        let run = dry_run().cwd(&work);
        let run = match place {
            Place::Project => run,
            Place::Named => run.env("RAYSLURM_CONFIG", &file),
            Place::Xdg => run
                .env_remove("RAYSLURM_CONFIG")
                .env("XDG_CONFIG_HOME", &xdg),
        };
        let case = format!("{place:?} {content:?}");
        let ran = run
            .case(&case)
            .expect_status(2)
            .expect_stdout("")
            // It names the file.
            .expect_stderr_contains(&format!("`{}`", file.display()))
            .expect_stderr_contains(needle)
            .run();
        assert!(ran.stderr.starts_with("error:"), "{ran}");
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
    dry_run()
        .cwd(root.path())
        .expect_status(2)
        .expect_stderr_contains(&format!(
            "`{}`",
            root.path().join("rayslurm.toml").display()
        ))
        .run();
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
}

/// Every key a config file takes is in [`KEYS`] (or has its own test below), and every one has
/// its environment variable: the file's own error lists the keys it expects.
#[test]
fn every_config_file_key_is_tested_and_has_a_variable() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("rayslurm.toml"),
        "[launch]\nnot_a_key = 1\n",
    )
    .unwrap();
    let ran = dry_run().cwd(root.path()).expect_status(2).run();
    let expected = ran
        .stderr
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("no key list in:\n{ran}"));
    let mut in_file: Vec<&str> = regex::Regex::new(r"`([a-z_]+)`")
        .unwrap()
        .captures_iter(expected)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    in_file.sort_unstable();
    let mut tested: Vec<&str> = KEYS.iter().map(|k| k.file).collect();
    tested.push("ray_auth");
    tested.sort_unstable();
    assert_eq!(in_file, tested);
    for key in KEYS {
        assert_eq!(
            key.env,
            Some(format!("RAYSLURM_{}", key.file.to_uppercase())).as_deref(),
            "{}",
            key.file
        );
    }
}

/// How a run is told whether Ray's token auth is off: `--no-ray-auth`, the variable
/// `RAYSLURM_NO_RAY_AUTH`, and `ray_auth` in the project and the user file.
#[derive(Clone, Copy)]
struct AuthGiven {
    flag: bool,
    var: Option<&'static str>,
    project: Option<bool>,
    user: Option<bool>,
}

const NOTHING: AuthGiven = AuthGiven {
    flag: false,
    var: None,
    project: None,
    user: None,
};

/// (case, what is given, whether the run is open)
const AUTH_CASES: &[(&str, AuthGiven, bool)] = &[
    ("nothing: token auth", NOTHING, false),
    (
        "the user file",
        AuthGiven {
            user: Some(false),
            ..NOTHING
        },
        true,
    ),
    (
        "project over user",
        AuthGiven {
            project: Some(true),
            user: Some(false),
            ..NOTHING
        },
        false,
    ),
    (
        "the variable over files",
        AuthGiven {
            var: Some("true"),
            project: Some(true),
            ..NOTHING
        },
        true,
    ),
    (
        "the variable as 1",
        AuthGiven {
            var: Some("1"),
            ..NOTHING
        },
        true,
    ),
    (
        "a false variable",
        AuthGiven {
            var: Some("false"),
            ..NOTHING
        },
        false,
    ),
    (
        "an empty variable is unset",
        AuthGiven {
            var: Some(""),
            user: Some(false),
            ..NOTHING
        },
        true,
    ),
    (
        "the flag",
        AuthGiven {
            flag: true,
            project: Some(true),
            ..NOTHING
        },
        true,
    ),
];

impl AuthGiven {
    /// `launch --dry-run` in `root`, told as this says (the files written into `root`).
    fn dry_run(self, root: &Path) -> Run {
        let user_file = root.join("user.toml");
        for (path, value) in [
            (root.join("rayslurm.toml"), self.project),
            (user_file.clone(), self.user),
        ] {
            if let Some(v) = value {
                std::fs::write(path, format!("[launch]\nray_auth = {v}\n")).unwrap();
            }
        }
        let mut run = dry_run().cwd(root).env("RAYSLURM_CONFIG", &user_file);
        if self.flag {
            run = run.arg("--no-ray-auth");
        }
        match self.var {
            Some(v) => run.env("RAYSLURM_NO_RAY_AUTH", v),
            None => run,
        }
    }
}

/// `ray_auth = false` in a file, `RAYSLURM_NO_RAY_AUTH` (`true`, `1`, ... / `false`, `0`, ...)
/// and `--no-ray-auth`: the run is open when the flag says so, or the variable does, or else the
/// highest file that sets `ray_auth` says `false`. A false variable is as good as none.
#[test]
fn ray_auth_from_the_flag_the_variable_and_the_files() {
    let open_flag = "\n  --no-ray-auth \\\n";
    for (case, given, open) in AUTH_CASES {
        let root = tempfile::tempdir().unwrap();
        let run = given.dry_run(root.path()).case(*case).expect_status(0);
        if *open {
            run.expect_stdout_contains(open_flag).run();
        } else {
            run.expect_stdout_lacks(open_flag).run();
        }
    }
    dry_run()
        .env("RAYSLURM_NO_RAY_AUTH", "maybe")
        .expect_status(2)
        .expect_stderr_contains("the value comes from the variable RAYSLURM_NO_RAY_AUTH")
        .run();
}

/// `export RAYSLURM_X=` clears a default rather than giving an empty value: the files (or the
/// built-in default) decide, for text and numbers alike.
#[test]
fn an_empty_variable_counts_as_unset() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("rayslurm.toml"),
        "[launch]\npartition = \"p-project\"\nready_timeout = 113\n",
    )
    .unwrap();
    dry_run()
        .cwd(root.path())
        .env("RAYSLURM_PARTITION", "")
        .env("RAYSLURM_READY_TIMEOUT", "")
        .env("RAYSLURM_STOP_GRACE", "")
        .expect_status(0)
        .expect_stdout_contains("\n#SBATCH --partition=p-project\n")
        .expect_stdout_contains("\n  --ready-timeout 113 \\\n")
        .expect_stdout_contains("\n  --stop-grace 60 \\\n")
        .run();
}

/// A bad value in a variable is refused like the same value on the command line, naming the
/// variable.
#[test]
fn a_bad_variable_exits_2_and_names_it() {
    for (var, value) in [
        ("RAYSLURM_READY_TIMEOUT", "soon"),
        ("RAYSLURM_GPU_DIRECTIVE", "gpus"),
        ("RAYSLURM_IDLE_TIMEOUT", "5d"),
    ] {
        let root = tempfile::tempdir().unwrap();
        let run = if var == "RAYSLURM_IDLE_TIMEOUT" {
            rayslurm(["up", "c", "--dry-run"])
        } else {
            dry_run()
        };
        run.cwd(root.path())
            .env("RAYSLURM_STATE_DIR", root.path().join("state"))
            .env(var, value)
            .expect_status(2)
            .expect_stdout("")
            .expect_stderr_contains(value)
            .expect_stderr_contains(&format!("the value comes from the variable {var}"))
            .run();
    }
}
