//! The config files `launch` and `up` read: the user's own (`$RAYSLURM_CONFIG`, else
//! `$XDG_CONFIG_HOME/rayslurm/config.toml`, else `~/.config/rayslurm/config.toml`) and the
//! project file (`./rayslurm.toml`, admitted by [`super::project_file`]), read once into
//! [`Sources`], from which resolution takes the values the command line and environment leave.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::env_vars;
use crate::error::UsageError;
use crate::handoff::cluster::IpFamily;
use crate::launch::config::project_file;
use crate::launch::config::trust::TrustStore;
use crate::launch::gpu_directive::GpuDirective;
use crate::printer::Printer;

/// Defaults a config file may set, under `[launch]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileDefaults {
    pub(crate) partition: Option<String>,
    pub(crate) account: Option<String>,
    pub(crate) qos: Option<String>,
    pub(crate) constraint: Option<String>,
    pub(crate) time: Option<String>,
    pub(crate) log_dir: Option<PathBuf>,
    pub(crate) load_env: Option<String>,
    pub(crate) template: Option<PathBuf>,
    pub(crate) gpu_directive: Option<GpuDirective>,
    pub(crate) interface: Option<String>,
    pub(crate) ip_family: Option<IpFamily>,
    pub(crate) object_store_memory: Option<u64>,
    pub(crate) ray_args: Option<String>,
    pub(crate) ray_head_args: Option<String>,
    pub(crate) ready_timeout: Option<u32>,
    /// `--setup-timeout`: how long every node's `--setup` may take (no limit without it).
    pub(crate) setup_timeout: Option<u32>,
    pub(crate) stop_grace: Option<u32>,
    /// `false` starts Ray without token authentication (`--no-ray-auth`).
    pub(crate) ray_auth: Option<bool>,
    /// `--signal`: what the command gets before the time limit (a site's or project's choice).
    pub(crate) signal: Option<String>,
    /// `--max-requeues`, for the runs launched with `--requeue`.
    pub(crate) max_requeues: Option<u32>,
    /// `up --idle-timeout`: `"30m"`, `"2h"`, `"90s"`, or a number of minutes; in seconds.
    #[serde(default, deserialize_with = "idle_timeout_in_file")]
    pub(crate) idle_timeout: Option<u32>,
}

/// `idle_timeout` as a file gives it: text as `--idle-timeout` takes it, or whole minutes.
fn idle_timeout_in_file<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Minutes(u64),
        Text(String),
    }
    let text = match Given::deserialize(d)? {
        Given::Minutes(m) => m.to_string(),
        Given::Text(t) => t,
    };
    super::idle_duration(&text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    launch: FileDefaults,
}

/// Everything resolution reads besides the arguments (and the variables clap read into them).
#[derive(Debug, Default)]
pub(crate) struct Sources {
    pub(crate) project: FileDefaults,
    pub(crate) user: FileDefaults,
    pub(crate) cwd: PathBuf,
}

impl Sources {
    /// Reads the environment and both config files; the project file only as
    /// `launch::project_file` admits it, with its notice printed.
    pub(crate) fn load(printer: &Printer) -> Result<Self, UsageError> {
        let env: HashMap<String, String> = std::env::vars().collect();
        let cwd = std::env::current_dir()
            .map_err(|e| UsageError::new(format!("cannot read the current directory: {e}")))?;
        let user_path = user_config_path(&env);
        let user = match &user_path {
            Some(path) => read_config(path)?,
            None => FileDefaults::default(),
        };
        // `RAYSLURM_CONFIG=./rayslurm.toml` names the project file: the user chose it, so it
        // is read once, as their own.
        let same = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
        let named = user_path
            .as_deref()
            .is_some_and(|u| same(u, &cwd.join(project_file::NAME)));
        let store = TrustStore::from_env()?;
        let euid = nix::unistd::geteuid().as_raw();
        let project = if named {
            None
        } else {
            project_file::load(&cwd, euid, &|p| store.lookup(p))?
        };
        let project = match project {
            Some(file) => {
                printer.info(&file.notice);
                file.defaults
            }
            None => FileDefaults::default(),
        };
        Ok(Self { project, user, cwd })
    }
}

/// The user file: `$RAYSLURM_CONFIG`, else `$XDG_CONFIG_HOME/rayslurm/config.toml`, else
/// `$HOME/.config/rayslurm/config.toml`. An `XDG_CONFIG_HOME` that is empty or relative is
/// ignored, as the XDG rules say (an empty one would read `./rayslurm/config.toml`).
fn user_config_path(env: &HashMap<String, String>) -> Option<PathBuf> {
    if let Some(named) = env.get(env_vars::CONFIG).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(named));
    }
    let base = env
        .get(env_vars::XDG_CONFIG_HOME)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            env.get(env_vars::HOME)
                .filter(|h| !h.is_empty())
                .map(|h| Path::new(h).join(".config"))
        })?;
    Some(base.join("rayslurm").join("config.toml"))
}

/// A config file named by its owner (the user file, or `$RAYSLURM_CONFIG`): trusted as it is.
fn read_config(path: &Path) -> Result<FileDefaults, UsageError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FileDefaults::default()),
        Err(e) => {
            return Err(UsageError::new(format!(
                "cannot read config file `{}`: {e}",
                path.display()
            )));
        }
    };
    parse_config(path, &text)
}

/// The `[launch]` table of a config file's `text` (read from `path`).
pub(crate) fn parse_config(path: &Path, text: &str) -> Result<FileDefaults, UsageError> {
    toml::from_str::<ConfigFile>(text)
        .map(|c| c.launch)
        .map_err(|e| {
            let e = e.to_string();
            UsageError::new(format!(
                "invalid config file `{}`: {}",
                path.display(),
                e.trim_end()
            ))
            .hint("fix or remove the file; keys go under `[launch]`")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_user_file_ignores_an_empty_or_relative_xdg_config_home() {
        let home = "/home/u/.config/rayslurm/config.toml";
        for (env, want) in [
            (vec![(env_vars::HOME, "/home/u")], Some(home)),
            (
                vec![
                    (env_vars::XDG_CONFIG_HOME, "/xdg"),
                    (env_vars::HOME, "/home/u"),
                ],
                Some("/xdg/rayslurm/config.toml"),
            ),
            (
                vec![(env_vars::XDG_CONFIG_HOME, ""), (env_vars::HOME, "/home/u")],
                Some(home),
            ),
            (
                vec![
                    (env_vars::XDG_CONFIG_HOME, "conf"),
                    (env_vars::HOME, "/home/u"),
                ],
                Some(home),
            ),
            (vec![(env_vars::XDG_CONFIG_HOME, "")], None),
            (
                vec![
                    (env_vars::CONFIG, "/named.toml"),
                    (env_vars::HOME, "/home/u"),
                ],
                Some("/named.toml"),
            ),
            (
                vec![(env_vars::CONFIG, ""), (env_vars::HOME, "/home/u")],
                Some(home),
            ),
        ] {
            assert_eq!(
                user_config_path(&vars(&env)),
                want.map(PathBuf::from),
                "{env:?}"
            );
        }
    }

    #[test]
    fn idle_timeout_in_a_file_is_text_or_minutes() {
        for (text, want) in [("\"30m\"", 1800), ("\"90s\"", 90), ("5", 300)] {
            let file = format!("[launch]\nidle_timeout = {text}\n");
            let c = toml::from_str::<ConfigFile>(&file).unwrap();
            assert_eq!(c.launch.idle_timeout, Some(want), "{text}");
        }
        for bad in ["\"5d\"", "0", "-3", "true"] {
            let file = format!("[launch]\nidle_timeout = {bad}\n");
            assert!(toml::from_str::<ConfigFile>(&file).is_err(), "{bad}");
        }
    }

    #[test]
    fn config_file_keys_are_checked() {
        let err = toml::from_str::<ConfigFile>("[launch]\nparition = \"x\"\n").unwrap_err();
        assert!(err.to_string().contains("parition"));
        let ok =
            toml::from_str::<ConfigFile>("[launch]\npartition = \"x\"\ngpu_directive = \"gres\"\n")
                .unwrap();
        assert_eq!(ok.launch.gpu_directive, Some(GpuDirective::Gres));
    }
}
