//! A scratch world for the config tests: a working directory, log directories and a
//! template for each layer, and `launch --dry-run` run with keys given in chosen layers.

use std::path::{Path, PathBuf};

use super::keys::{KEYS, Key, Kind, LAUNCH_ONLY, Layer, UP_ONLY};
use crate::harness::{filter_stamps, rayslurm, text};

/// A fresh directory: `work/` (the working directory), a log directory and a template for each
/// layer's value.
pub(super) struct World {
    root: tempfile::TempDir,
}

impl World {
    pub(super) fn new() -> Self {
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

    pub(super) fn dir(&self) -> &Path {
        self.root.path()
    }

    pub(super) fn work(&self) -> PathBuf {
        self.dir().join("work")
    }

    /// `[DIR]` made this world's directory.
    pub(super) fn real(&self, value: &str) -> String {
        value.replace("[DIR]", &self.dir().display().to_string())
    }

    /// The script, this world's directory as `[DIR]`, launch times as `[STAMP]`.
    pub(super) fn normalise(&self, script: &str) -> String {
        filter_stamps(&script.replace(&self.dir().display().to_string(), "[DIR]"))
    }

    /// A config file with `keys` under `[launch]`, each with its value for `layer`.
    pub(super) fn write_config(&self, path: &Path, keys: &[&Key], layer: Layer) {
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
    pub(super) fn launch(&self, given: impl Fn(&Key) -> Vec<Layer>) -> String {
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
            // `setup_timeout` means something with it.
            args.extend(["--setup".to_owned(), "true".to_owned()]);
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
