//! `file_mounts:` and the git form of `workdir:` (`{url: URL, ref: REF}`) into flags:
//! `--file-mount DEST=SRC` for each local source (SRC made absolute, as SkyPilot does, from
//! the directory of the launch), `--git-workdir URL` and `--git-ref REF`. Buckets and URLs as
//! sources stay refused. Whether a destination can be made on a node depends on the image,
//! which the command line may give: [`check_destinations`] judges them once it is parsed.

use super::given::{Given, Value};
use super::node::{Line, Node};
use super::{Reading, Refusal, TaskFile};
use crate::error::UsageError;
use crate::launch::file_mounts::{destination, home_expanded};

/// `file_mounts:`: each local source a `--file-mount`; a bucket or URL refused.
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
        let src = match &source.value {
            Node::Str(s) if !s.contains("://") => s,
            _ => {
                return Err(Refusal::new(
                    &field,
                    dest.line,
                    "buckets and URLs are not mounted: copy the data to the shared filesystem and read it there",
                ));
            }
        };
        let path = r.cwd.join(home_expanded(src));
        if std::fs::symlink_metadata(&path).is_err() {
            return Err(Refusal::new(
                &field,
                dest.line,
                format!(
                    "the source `{}` does not exist: give a local file or directory",
                    path.display()
                ),
            ));
        }
        r.given.push(Given::one(
            &field,
            dest.line,
            FILE_MOUNT,
            format!("{}={}", dest.value, path.display()),
        ));
    }
    Ok(())
}

/// The flag a file mount becomes.
const FILE_MOUNT: &str = "file-mount";

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
/// (`in_image`): one a node cannot make is refused as `FILE:LINE: file_mounts.DEST: ...`.
pub(crate) fn check_destinations(task: &TaskFile, in_image: bool) -> Result<(), UsageError> {
    for given in task.given.iter().filter(|g| g.long == FILE_MOUNT) {
        let Value::Values(values) = &given.value else {
            continue;
        };
        for v in values {
            let dest = v.split_once('=').map_or(v.as_str(), |(d, _)| d);
            destination(dest, in_image).map_err(|why| {
                Refusal::new(&given.field, given.line, why).into_error(&task.path)
            })?;
        }
    }
    Ok(())
}
