//! `file_mounts:` and the git form of `workdir:` (`{url: URL, ref: REF}`) into flags:
//! `--file-mount DEST=SRC` for each local source (SRC made absolute, as SkyPilot does, from
//! the directory of the launch), `--storage DEST=NAME` for each named storage (a bucket SkyPilot
//! would make: here a directory kept on the shared filesystem), `--git-workdir URL` and
//! `--git-ref REF`. Buckets and URLs as sources stay refused. Whether a destination can be made on a node depends on the image,
//! which the command line may give: [`check_destinations`] judges them once it is parsed.

use super::given::{Given, Value};
use super::node::{Line, Node};
use super::{Reading, Refusal, TaskFile};
use crate::error::UsageError;
use std::sync::LazyLock;

use regex::Regex;

use crate::launch::file_mounts::{MountTo, destination, home_expanded, no_workdir_on_a_cluster};
use crate::launch::storage::check_name;

/// `file_mounts:`: each local source a `--file-mount`, each named storage (`{name: NAME}`, a
/// bucket SkyPilot makes) a `--storage`; a bucket or URL as a source refused. `$VAR` and
/// `${VAR}` in destinations, sources and names are the task's `envs` (or `--env`).
pub(super) fn file_mounts(r: &mut Reading, value: &Line<Node>) -> Result<(), Refusal> {
    let Node::Map(entries) = &value.value else {
        return Err(Refusal::new(
            "file_mounts",
            value.line,
            "give `DEST: SOURCE` lines",
        ));
    };
    for (dest, source) in entries {
        let field = format!("file_mounts.{}", dest.value);
        let line = dest.line;
        let dest = substituted(r, &field, line, &dest.value)?;
        let (src, name) = match &source.value {
            Node::Str(s) => (Some(s.clone()), None),
            Node::Map(keys) => storage_keys(r, &field, keys)?,
            other => {
                return Err(Refusal::new(
                    &field,
                    line,
                    format!(
                        "is {}: give a local path or `{{name: NAME}}` (a storage)",
                        other.kind()
                    ),
                ));
            }
        };
        let src = src.map(|s| substituted(r, &field, line, &s)).transpose()?;
        if src.as_deref().is_some_and(|s| s.contains("://")) {
            return Err(Refusal::new(
                &field,
                line,
                "buckets and URLs are not mounted: copy the data to the shared filesystem and read it there, or give `{name: NAME}` for a storage of this site's own",
            ));
        }
        match (src, name) {
            (Some(src), name) => {
                let path = r.cwd.join(home_expanded(&src));
                if std::fs::symlink_metadata(&path).is_err() {
                    return Err(Refusal::new(
                        &field,
                        line,
                        format!(
                            "the source `{}` does not exist: give a local file or directory",
                            path.display()
                        ),
                    ));
                }
                if let Some(name) = name {
                    r.notice(
                        &format!("{field}.name"),
                        &format!("a local source is copied to each run as it is; the storage `{name}` is not kept (leave `source:` out to keep one)"),
                    );
                }
                r.given.push(Given::one(
                    &field,
                    line,
                    FILE_MOUNT,
                    format!("{dest}={}", path.display()),
                ));
            }
            (None, Some(name)) => {
                let name = substituted(r, &field, line, &name)?;
                check_name(&name).map_err(|why| Refusal::new(&field, line, why))?;
                r.given
                    .push(Given::one(&field, line, STORAGE, format!("{dest}={name}")));
            }
            (None, None) => {
                return Err(Refusal::new(
                    &field,
                    line,
                    "give the storage a `name:` (a directory of that name kept on the shared filesystem) or a local `source:`",
                ));
            }
        }
    }
    Ok(())
}

/// A storage's keys: its source and name (either may be missing); `store` and `mode` noted.
fn storage_keys(
    r: &mut Reading,
    field: &str,
    keys: &[(Line<String>, Line<Node>)],
) -> Result<(Option<String>, Option<String>), Refusal> {
    let (mut source, mut name) = (None, None);
    for (key, v) in keys {
        let text = v.value.scalar_text();
        match key.value.as_str() {
            "source" => source = text,
            "name" => name = text,
            "store" => r.notice(
                &format!("{field}.store"),
                &format!(
                    "a storage is a directory on the site's shared filesystem, not in `{}`",
                    text.unwrap_or_default()
                ),
            ),
            "mode" => {
                let mode = text.unwrap_or_default().to_uppercase();
                if !matches!(mode.as_str(), "MOUNT" | "MOUNT_CACHED" | "COPY") {
                    return Err(Refusal::new(
                        &format!("{field}.mode"),
                        key.line,
                        format!("`{mode}` is not MOUNT, MOUNT_CACHED or COPY"),
                    ));
                }
            }
            "persistent" | "_force_delete" | "_bucket_sub_path" => r.notice(
                &format!("{field}.{}", key.value),
                "a storage is kept until you remove its directory",
            ),
            other => {
                return Err(Refusal::new(
                    &format!("{field}.{other}"),
                    key.line,
                    "a storage has `name`, `source`, `store` and `mode`",
                ));
            }
        }
    }
    Ok((source, name))
}

impl Reading {
    /// The task's value of `key`: its `envs:`, else one given with `--env` (`--env KEY` takes
    /// it from this shell).
    pub(super) fn env_value(&self, key: &str) -> Option<String> {
        let from = |word: &str| match word.split_once('=') {
            Some((k, v)) if k == key => Some(v.to_owned()),
            None if word == key => std::env::var(key).ok(),
            _ => None,
        };
        self.typed_env
            .iter()
            .rev()
            .find_map(|w| from(w))
            .or_else(|| {
                self.given
                    .iter()
                    .filter(|g| g.long == "env")
                    .flat_map(|g| match &g.value {
                        super::Value::Values(words) => words.as_slice(),
                        super::Value::Switch(_) => &[],
                    })
                    .find_map(|w| from(w))
            })
    }
}

/// `text` with `$VAR` and `${VAR}` replaced by the task's values; one without a value refused.
fn substituted(r: &Reading, field: &str, line: u32, text: &str) -> Result<String, Refusal> {
    static VAR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
            .expect("a valid pattern")
    });
    let mut missing = None;
    let out = VAR.replace_all(text, |c: &regex::Captures| {
        let key = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
        r.env_value(key).unwrap_or_else(|| {
            missing.get_or_insert_with(|| key.to_owned());
            String::new()
        })
    });
    match missing {
        None => Ok(out.into_owned()),
        Some(key) => Err(Refusal::new(
            field,
            line,
            format!("`${key}` has no value: set it in `envs:` or give `--env {key}=VALUE`"),
        )),
    }
}

/// The flag a file mount becomes.
const FILE_MOUNT: &str = "file-mount";

/// The flag a named storage becomes.
const STORAGE: &str = "storage";

/// `workdir: {url: URL, ref: REF}`: a git repository cloned at submission.
pub(super) fn git_workdir(
    r: &mut Reading,
    field: &str,
    value: &Line<Node>,
    entries: &[(Line<String>, Line<Node>)],
) -> Result<(), Refusal> {
    let mut url = None;
    for (key, v) in entries {
        let name = format!("{field}.{}", key.value);
        let text = v.value.scalar_text().ok_or_else(|| {
            Refusal::new(&name, key.line, format!("is {}: give text", v.value.kind()))
        })?;
        match key.value.as_str() {
            "url" => url = Some(text),
            "ref" => r.given.push(Given::one(&name, key.line, "git-ref", text)),
            _ => {
                return Err(Refusal::new(
                    &name,
                    key.line,
                    "a git workdir has `url:` and `ref:` only",
                ));
            }
        }
    }
    let Some(url) = url else {
        return Err(Refusal::new(
            field,
            value.line,
            "a git workdir needs `url:` (and `ref:`, a branch, tag or commit); a local directory is `workdir: DIR`",
        ));
    };
    r.given
        .push(Given::one(field, value.line, "git-workdir", url));
    Ok(())
}

/// Each file mount's destination judged with the image the whole command line gives
/// (`in_image`): one a node cannot make is refused as `FILE:LINE: file_mounts.DEST: ...`, and
/// so is one relative to a workdir for a cluster of `up` (`cluster`), whose nodes have none.
pub(crate) fn check_destinations(
    task: &TaskFile,
    in_image: bool,
    cluster: bool,
) -> Result<(), UsageError> {
    for given in task
        .given
        .iter()
        .filter(|g| g.long == FILE_MOUNT || g.long == STORAGE)
    {
        let Value::Values(values) = &given.value else {
            continue;
        };
        for v in values {
            let dest = v.split_once('=').map_or(v.as_str(), |(d, _)| d);
            let refused =
                |why: String| Refusal::new(&given.field, given.line, why).into_error(&task.path);
            let to = destination(dest, in_image).map_err(refused)?;
            if cluster && matches!(to, MountTo::Workdir(_)) {
                return Err(refused(no_workdir_on_a_cluster(dest)));
            }
        }
    }
    Ok(())
}
