//! The config files `launch` and `up` read: the user's own (`$RAYSLURM_CONFIG`, else
//! `$XDG_CONFIG_HOME/rayslurm/config.toml`, else `~/.config/rayslurm/config.toml`) and the
//! project file (`./rayslurm.toml`, admitted by [`super::project_file`]), read once into
//! [`Sources`], from which resolution takes the values the command line and environment leave.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::containers::{ContainerRuntime, Found, Mount};
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
    /// GPU type -> the partition that stands for it, on a site whose GRES has no types
    /// (`gpu_partitions = { v100 = "labgpu" }`).
    pub(crate) gpu_partitions: Option<std::collections::BTreeMap<String, String>>,
    pub(crate) interface: Option<String>,
    /// `"auto"`, `4` or `6` (`"4"` and `"6"` too), as `--ip-family` takes them.
    #[serde(default, deserialize_with = "ip_family_in_file")]
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
    /// `--container-image`: the image the run's programs run in.
    pub(crate) container_image: Option<String>,
    /// `--container-mounts`: a list of `SRC[:DST[:ro]]`, or one comma-separated string.
    #[serde(default, deserialize_with = "mounts_in_file")]
    pub(crate) container_mounts: Option<Vec<Mount>>,
    pub(crate) container_workdir: Option<PathBuf>,
    /// `--container-runtime`: `"pyxis"`, `"apptainer"`, `"singularity"` or `"charliecloud"`.
    pub(crate) container_runtime: Option<ContainerRuntime>,
    /// The partition a task file's `use_spot: true` runs in: the site's preemptible one.
    pub(crate) spot_partition: Option<String>,
    /// The QOS a task file's `use_spot: true` runs with: the site's preemptible one.
    pub(crate) spot_qos: Option<String>,
    /// Where the values came from: the file, and each key's line (for errors).
    #[serde(skip)]
    pub(crate) origin: Option<FileOrigin>,
    /// The file's top-level `host` (the login node of `--host`): the user's own file alone
    /// may name it ([`user_host`]); a project file that does is refused.
    #[serde(skip)]
    pub(crate) host: Option<String>,
}

/// A config file's path and the line of each of its `[launch]` keys.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FileOrigin {
    pub(crate) path: PathBuf,
    pub(crate) lines: Vec<(String, usize)>,
}

impl FileOrigin {
    /// The keys of the `[launch]` table of `text`, with their (1-based) lines.
    fn scan(path: &Path, text: &str) -> Self {
        let mut table = String::new();
        let mut lines = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if let Some(header) = line.strip_prefix('[') {
                table = header.trim_end_matches(']').trim().to_owned();
            } else if table == "launch"
                && let Some((key, _)) = line.split_once('=')
            {
                lines.push((key.trim().trim_matches('"').to_owned(), i + 1));
            }
        }
        Self {
            path: path.to_owned(),
            lines,
        }
    }

    /// `` `PATH` line N, key `key` `` for a key of this file.
    pub(crate) fn of(&self, key: &str) -> String {
        match self.lines.iter().find(|(k, _)| k == key) {
            Some((_, line)) => format!("`{}` line {line}, key `{key}`", self.path.display()),
            None => format!("`{}`, key `{key}`", self.path.display()),
        }
    }
}

/// `ip_family` as a file gives it: `"auto"`, `"4"`, `"6"`, or the numbers 4 and 6.
fn ip_family_in_file<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<IpFamily>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Number(i64),
        Text(String),
    }
    let text = match Given::deserialize(d)? {
        Given::Number(n) => n.to_string(),
        Given::Text(t) => t,
    };
    match text.to_ascii_lowercase().as_str() {
        "auto" => Ok(Some(IpFamily::Auto)),
        "4" => Ok(Some(IpFamily::V4)),
        "6" => Ok(Some(IpFamily::V6)),
        _ => Err(serde::de::Error::custom(format!(
            "ip_family `{text}` is not one of \"auto\", 4 or 6"
        ))),
    }
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

/// `container_mounts` as a file gives it: a list of `SRC[:DST[:ro]]`, or one string of them
/// separated by commas (as `--container-mounts` takes them).
fn mounts_in_file<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<Mount>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        One(String),
        Many(Vec<String>),
    }
    let entries = match Given::deserialize(d)? {
        Given::One(text) => text.split(',').map(str::to_owned).collect(),
        Given::Many(list) => list,
    };
    entries
        .iter()
        .map(|e| e.trim().parse::<Mount>())
        .collect::<Result<_, _>>()
        .map(Some)
        .map_err(|why| serde::de::Error::custom(format!("container_mounts: {why}")))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    /// `--host`: run every command on this login node over SSH (from a laptop).
    host: Option<String>,
    #[serde(default)]
    launch: FileDefaults,
}

/// Everything resolution reads besides the arguments (and the variables clap read into them).
#[derive(Debug, Default)]
pub(crate) struct Sources {
    pub(crate) project: FileDefaults,
    pub(crate) user: FileDefaults,
    pub(crate) cwd: PathBuf,
    /// The options whose value came from their variable, not the command line: (option id,
    /// variable), e.g. `("time", "RAYSLURM_TIME")`.
    pub(crate) variables: Vec<(String, String)>,
    /// The container runtimes to choose from when a run has an image and names no runtime;
    /// `None`: the login node's, asked then (and only then).
    pub(crate) runtimes: Option<Found>,
}

impl Sources {
    /// Where the value of option `key` in effect came from, for an error about it: its
    /// variable, or the file and line that set it; `None` when it was typed as a flag (the
    /// message names the flag already). `given` says whether the command line (or variable)
    /// gave it; the config key is the option's id (`time`, `partition`, ...).
    pub(crate) fn origin(&self, key: &str, given: bool) -> Option<String> {
        if given {
            return self
                .variables
                .iter()
                .find(|(id, _)| id == key)
                .map(|(_, var)| format!("from the variable {var}"));
        }
        [&self.project, &self.user]
            .into_iter()
            .filter_map(|f| f.origin.as_ref())
            .find(|o| o.lines.iter().any(|(k, _)| k == key))
            .map(|o| format!("from {}", o.of(key)))
    }
}

impl Sources {
    /// Reads the environment and both config files; the project file only as
    /// `launch::project_file` admits it, with its notice printed.
    pub(crate) fn load(
        printer: &Printer,
        variables: Vec<(String, String)>,
    ) -> Result<Self, UsageError> {
        let env: HashMap<String, String> = std::env::vars().collect();
        let cwd = std::env::current_dir()
            .map_err(|e| UsageError::new(format!("cannot read the current directory: {e}")))?;
        let named = env.get(env_vars::CONFIG).filter(|p| !p.is_empty());
        if let Some(named) = named {
            check_named_config(named)?;
        }
        let named = named.is_some();
        let user_path = user_config_path(&env);
        let user = match &user_path {
            Some(path) => read_config(path, named)?,
            None => FileDefaults::default(),
        };
        // `RAYSLURM_CONFIG=$PWD/rayslurm.toml` names the project file: the user chose it, so
        // it is read once, as their own.
        let same = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
        let named = user_path
            .as_deref()
            .is_some_and(|u| same(u, &cwd.join(project_file::NAME)));
        let euid = nix::unistd::geteuid().as_raw();
        let project = if named {
            None
        } else {
            // The store is opened (the private tree checked) only for a file that needs it.
            project_file::load(&cwd, euid, &|p| TrustStore::from_env()?.lookup(p))?
        };
        let project = match project {
            Some(file) => {
                printer.info(&file.notice);
                file.defaults
            }
            None => FileDefaults::default(),
        };
        Ok(Self {
            project,
            user,
            cwd,
            variables,
            runtimes: None,
        })
    }
}

/// `RAYSLURM_CONFIG` names a file the user chose, used whole: an absolute path, since a
/// relative one would name another file in each directory a launch starts from (a group's
/// project directory among them, where any member may put one).
fn check_named_config(named: &str) -> Result<(), UsageError> {
    if Path::new(named).is_absolute() {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "{}=`{named}` is a relative path: it would name a different file in each directory you launch from, one another user may have put there, and the file it names is used whole, as yours",
        env_vars::CONFIG
    ))
    .hint(format!(
        "set it to an absolute path (`export {0}=\"$PWD/{1}\"` names the file in this directory), or unset it",
        env_vars::CONFIG,
        named.trim_start_matches("./")
    )))
}

/// The user's own config file's `host` (`--host`'s default, after `RAYSLURM_HOST`).
pub(crate) fn user_host() -> Result<Option<String>, UsageError> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let named = env.get(env_vars::CONFIG).is_some_and(|p| !p.is_empty());
    let Some(path) = user_config_path(&env) else {
        return Ok(None);
    };
    Ok(read_config(&path, named)?.host.filter(|h| !h.is_empty()))
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
/// The user file may be missing; a file `RAYSLURM_CONFIG` names (`named`) must exist.
fn read_config(path: &Path, named: bool) -> Result<FileDefaults, UsageError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && named => {
            return Err(UsageError::new(format!(
                "the config file `{}` that {} names does not exist",
                path.display(),
                env_vars::CONFIG
            ))
            .hint(format!(
                "fix {0} or unset it (`unset {0}`); set it to /dev/null to read no config file",
                env_vars::CONFIG
            )));
        }
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
        .map(|c| FileDefaults {
            origin: Some(FileOrigin::scan(path, text)),
            host: c.host,
            ..c.launch
        })
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
    fn ip_family_in_a_file_is_as_the_flag_takes_it() {
        for (text, want) in [
            ("\"auto\"", IpFamily::Auto),
            ("4", IpFamily::V4),
            ("\"4\"", IpFamily::V4),
            ("6", IpFamily::V6),
        ] {
            let file = format!("[launch]\nip_family = {text}\n");
            let c = toml::from_str::<ConfigFile>(&file).unwrap();
            assert_eq!(c.launch.ip_family, Some(want), "{text}");
        }
        for bad in ["5", "\"v4\"", "true"] {
            let file = format!("[launch]\nip_family = {bad}\n");
            assert!(toml::from_str::<ConfigFile>(&file).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_file_s_keys_are_found_by_line() {
        let text = "# site\n[launch]\npartition = \"a\"\n\ntime = \"2h\"\n[other]\ntime = 1\n";
        let d = parse_config(Path::new("/p/c.toml"), text).unwrap_or_default();
        // `[other]` is refused as a table, so parse the origin alone.
        assert!(d.origin.is_none());
        let o = FileOrigin::scan(Path::new("/p/c.toml"), text);
        assert_eq!(o.of("time"), "`/p/c.toml` line 5, key `time`");
        assert_eq!(o.of("partition"), "`/p/c.toml` line 3, key `partition`");
        let src = Sources {
            user: FileDefaults {
                origin: Some(o),
                ..FileDefaults::default()
            },
            variables: vec![("qos".into(), "RAYSLURM_QOS".into())],
            ..Sources::default()
        };
        assert_eq!(
            src.origin("time", false).as_deref(),
            Some("from `/p/c.toml` line 5, key `time`")
        );
        assert_eq!(src.origin("time", true), None);
        assert_eq!(
            src.origin("qos", true).as_deref(),
            Some("from the variable RAYSLURM_QOS")
        );
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
