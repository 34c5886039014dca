//! A run's image with its runtime ([`Container`]), and what the node adds to every program it
//! runs in it ([`Inside`]): the parts every runtime's command line is built from.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::{ContainerRuntime, Mount};

/// A run's image with its runtime, the user's mounts and working directory inside it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Container<'a> {
    pub(crate) image: &'a str,
    pub(crate) runtime: ContainerRuntime,
    pub(crate) mounts: &'a [Mount],
    pub(crate) workdir: Option<&'a Path>,
}

/// What the bootstrap adds to every program it starts in the image: the run's own paths (its
/// directory, Ray's temp root, the working directory), mounted at the same paths, so that Ray's
/// sockets, the token and the user's files are where the node's side expects them; the
/// working directory; whether the node's GPUs are the job's; where the program runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inside {
    pub(crate) own: Vec<PathBuf>,
    pub(crate) workdir: PathBuf,
    pub(crate) gpus: bool,
    /// The program's `TMPDIR`: Charliecloud mounts it as the image's /tmp and unsets it.
    pub(crate) tmpdir: Option<PathBuf>,
    /// The node's own `PATH`, whose directories under a mount of the user's are put before
    /// the image's `PATH` by pyxis (which starts from the image's).
    pub(crate) path: Option<OsString>,
    /// This node's Slurm name, where pyxis runs a program as a step.
    pub(crate) node: String,
    /// The run's one container on the node, by pyxis's `--container-name` (empty otherwise).
    pub(crate) name: String,
}

impl Container<'_> {
    /// `argv` as the command line that runs it inside the image.
    pub(crate) fn command(&self, inside: &Inside, argv: &[OsString]) -> Vec<OsString> {
        self.runtime.command(self, inside, argv)
    }

    /// Every mount: the run's own paths first, then the user's (a user mount of the same
    /// destination comes later and wins).
    pub(super) fn mounts(&self, inside: &Inside) -> Vec<Mount> {
        let mut mounts: Vec<Mount> = Vec::new();
        for path in &inside.own {
            if !mounts.iter().any(|m| m.dst == *path) {
                mounts.push(Mount::same_path(path));
            }
        }
        mounts.extend(self.mounts.iter().cloned());
        mounts
    }

    /// The working directory inside the image: the user's, else the program's own.
    pub(super) fn workdir<'w>(&'w self, inside: &'w Inside) -> &'w Path {
        self.workdir.unwrap_or(&inside.workdir)
    }

    /// The directories of the node's `PATH` that a user's mount brings into the image, as
    /// they are seen inside, in their order.
    pub(super) fn path_front(&self, path: Option<&OsStr>) -> String {
        let Some(path) = path else {
            return String::new();
        };
        let inside: Vec<String> = std::env::split_paths(path)
            .filter_map(|dir| {
                self.mounts.iter().find_map(|m| {
                    let rest = dir.strip_prefix(&m.src).ok()?;
                    Some(m.dst.join(rest).display().to_string())
                })
            })
            .filter(|dir| !dir.contains(':'))
            .collect();
        inside.join(":")
    }
}

/// What the runtimes' tests share: an image with two mounts of the user's, and what a node adds.
#[cfg(test)]
pub(super) mod samples {
    use super::*;

    pub(crate) fn mounts() -> Vec<Mount> {
        vec![
            "/opt/venv".parse().unwrap(),
            "/data:/mnt/data:ro".parse().unwrap(),
        ]
    }

    pub(crate) fn container<'a>(runtime: &str, mounts: &'a [Mount]) -> Container<'a> {
        Container {
            image: "/images/debian.sqsh",
            runtime: ContainerRuntime::named(runtime).unwrap(),
            mounts,
            workdir: None,
        }
    }

    pub(crate) fn inside() -> Inside {
        Inside {
            own: vec![PathBuf::from("/tmp/rs0-7.0"), PathBuf::from("/home/u/proj")],
            workdir: PathBuf::from("/home/u/proj"),
            gpus: true,
            tmpdir: Some(PathBuf::from("/tmp/rs0-7.0")),
            path: Some("/opt/venv/bin:/usr/bin:/data/tools/bin".into()),
            node: "node3".to_owned(),
            name: "rayslurm-42.0".to_owned(),
        }
    }

    pub(crate) fn words(argv: &[OsString]) -> String {
        argv.iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}
