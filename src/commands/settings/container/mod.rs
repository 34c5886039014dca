//! The container flags (`launch`'s and `up`'s), with the config files' keys, into the options
//! the bootstrap gets: the image (a path made absolute, `docker://` in the runtime's own
//! spelling), the mounts, the working directory inside the image, and always a runtime, named
//! or found on the login node (`containers::Found`), so that the nodes never guess.

use std::path::{Path, PathBuf};

use crate::cli::ContainerArgs;
use crate::containers::{ContainerRuntime, Found, Mount};
use crate::error::{UsageError, show};
use crate::handoff::container::ContainerOptions;
use crate::launch::config::{Sources, layered};

/// The container flags with the files' values, checked; no image, no container.
pub(super) fn resolve(args: &ContainerArgs, src: &Sources) -> Result<ContainerOptions, UsageError> {
    let ContainerArgs {
        container_image,
        container_mounts,
        container_workdir,
        container_runtime,
    } = args;
    let (p, u) = (&src.project, &src.user);
    // Whether the command line (or a variable) gave each, for errors that say where from.
    let typed = [
        ("container_image", container_image.is_some()),
        ("container_mounts", !container_mounts.is_empty()),
        ("container_workdir", container_workdir.is_some()),
        ("container_runtime", container_runtime.is_some()),
    ];
    let from_where = |e| super::job::from_where(e, &typed, src);
    let image = layered(
        container_image.clone(),
        &p.container_image,
        &u.container_image,
    );
    let Some(image) = image else {
        refuse_without_image(&typed, src)?;
        return Ok(ContainerOptions::default());
    };
    let workdir = layered(
        container_workdir.clone(),
        &p.container_workdir,
        &u.container_workdir,
    );
    check_image(&image).map_err(from_where)?;
    check_workdir(workdir.as_deref()).map_err(from_where)?;
    let (runtime, how) = match layered(
        *container_runtime,
        &p.container_runtime,
        &u.container_runtime,
    ) {
        Some(named) => (named, "--container-runtime"),
        None => {
            let found = src.runtimes.clone().unwrap_or_else(Found::of_login_node);
            (found.choose()?, "the runtime this node has")
        }
    };
    let image = image_for(&image, (runtime, how), &src.cwd).map_err(from_where)?;
    let cli_mounts = (!container_mounts.is_empty()).then(|| container_mounts.clone());
    let mounts = layered(cli_mounts, &p.container_mounts, &u.container_mounts).unwrap_or_default();
    check_mounts_for(&mounts, (runtime, how)).map_err(from_where)?;
    Ok(ContainerOptions {
        container_image: Some(image),
        container_mounts: mounts,
        container_workdir: workdir,
        container_runtime: Some(runtime),
    })
}

/// The container flags' values each alone (a task file's, before they meet the others): the
/// image's text and path, the working directory.
pub(super) fn check_each(args: &ContainerArgs, cwd: &Path) -> Result<(), UsageError> {
    if let Some(image) = &args.container_image {
        check_image(image)?;
        if let Some(path) = image_path(image, cwd) {
            check_exists(image, &path)?;
        }
    }
    check_workdir(args.container_workdir.as_deref())
}

/// A container flag typed (not a site's variable or file) without an image means nothing:
/// refused, naming it.
fn refuse_without_image(typed: &[(&str, bool)], src: &Sources) -> Result<(), UsageError> {
    for (key, given) in typed {
        let from_variable = src.variables.iter().any(|(id, _)| id == key);
        if *given && !from_variable {
            let flag = format!("--{}", key.replace('_', "-"));
            return Err(UsageError::new(format!(
                "{flag} goes with --container-image: without an image, nothing runs in a container"
            ))
            .hint(format!(
                "add --container-image IMAGE (e.g. `/shared/torch.sqsh`), or drop {flag}"
            )));
        }
    }
    Ok(())
}

/// The image's text: not empty, one line, no comma (pyxis would split the name there).
fn check_image(image: &str) -> Result<(), UsageError> {
    let hint = "give a path every node sees (`/shared/torch.sqsh`) or a registry image (`docker://ubuntu:24.04`)";
    if image.trim().is_empty() {
        return Err(UsageError::new("--container-image is empty").hint(hint));
    }
    if image.contains(',') || image.chars().any(char::is_control) {
        return Err(UsageError::new(format!(
            "invalid --container-image {}: an image's name or path has no commas or line breaks",
            show(image)
        ))
        .hint(hint));
    }
    Ok(())
}

fn check_workdir(workdir: Option<&Path>) -> Result<(), UsageError> {
    match workdir {
        Some(dir) if !dir.is_absolute() => Err(UsageError::new(format!(
            "--container-workdir {} is not an absolute path: it is a directory inside the image",
            show(&dir.to_string_lossy())
        ))
        .hint("give it from `/`, e.g. `--container-workdir /workspace`")),
        _ => Ok(()),
    }
}

/// The image's path, absolute, when it names one: from `/`, `./` or `../`, or a file that
/// exists here (the nodes run elsewhere, so a relative path is taken from here now).
fn image_path(image: &str, cwd: &Path) -> Option<PathBuf> {
    if image.contains("://") {
        return None;
    }
    let explicit = image.starts_with('/')
        || image.starts_with("./")
        || image.starts_with("../")
        || image == "."
        || image == "..";
    let path: PathBuf = cwd.join(image).components().collect();
    (explicit || path.exists()).then_some(path)
}

fn check_exists(image: &str, path: &Path) -> Result<(), UsageError> {
    if path.exists() {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "--container-image {} is a path, and `{}` does not exist on this node",
        show(image),
        path.display()
    ))
    .hint("give the path of an image the nodes see too (on a shared filesystem), e.g. made by `apptainer pull /shared/img.sif docker://IMAGE` or `enroot import -o /shared/img.sqsh docker://IMAGE`"))
}

/// The mounts as `runtime` takes them: some cannot mount read-only (Charliecloud).
fn check_mounts_for(
    mounts: &[Mount],
    (runtime, how): (ContainerRuntime, &str),
) -> Result<(), UsageError> {
    match mounts.iter().find(|m| m.read_only) {
        Some(m) if !runtime.mounts_read_only() => Err(UsageError::new(format!(
            "--container-mounts {} asks for a read-only mount, which {runtime} ({how}) cannot make: its mounts are read-write",
            show(&m.to_string())
        ))
        .hint(format!(
            "leave out `:ro`, or use a runtime that mounts read-only ({})",
            read_only_runtimes()
        ))),
        _ => Ok(()),
    }
}

/// The runtimes that mount read-only, for hints.
fn read_only_runtimes() -> String {
    let names: Vec<&str> = ContainerRuntime::all()
        .iter()
        .filter(|r| r.mounts_read_only())
        .map(|r| r.name())
        .collect();
    names.join(", ")
}

/// The image as `runtime` takes it: a path absolute and existing, any other name in the
/// runtime's own spelling (or refused by it). `how` says where the runtime came from, for
/// errors.
fn image_for(
    image: &str,
    (runtime, how): (ContainerRuntime, &str),
    cwd: &Path,
) -> Result<String, UsageError> {
    if let Some(path) = image_path(image, cwd) {
        check_exists(image, &path)?;
        return Ok(path.display().to_string());
    }
    runtime.image_name(image, how)
}

#[cfg(test)]
mod tests;
