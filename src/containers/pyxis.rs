//! Pyxis, Slurm's container plugin (with enroot): the image is given to `srun`, and each
//! program runs as a step of its own on its node, in the run's one container there
//! (`--container-name`, made from the image by the node's first step, started afresh by each
//! step: `no_exec`, so that every program has its own environment and not that of Ray's
//! running daemons). Found when the login node's `srun --help` lists `--container-image`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Container, Inside, Mount, Runtime};
use crate::error::UsageError;

pub(super) struct Pyxis;

impl Runtime for Pyxis {
    fn name(&self) -> &'static str {
        "pyxis"
    }

    fn about(&self) -> &'static str {
        "Slurm's pyxis plugin with enroot: `srun --container-image=IMAGE`"
    }

    fn program(&self) -> &'static str {
        "srun"
    }

    fn find(&self) -> Option<PathBuf> {
        crate::slurm::pyxis::srun_has_pyxis()
            .then(|| which::which("srun").ok())
            .flatten()
    }

    fn is_slurms_own(&self) -> bool {
        true
    }

    /// `docker://IMAGE` in enroot's spelling; any other name as it is.
    fn image_name(&self, image: &str, _how: &str) -> Result<String, UsageError> {
        Ok(image
            .strip_prefix("docker://")
            .map_or_else(|| image.to_owned(), enroot_name))
    }

    fn runs_as_steps(&self) -> bool {
        true
    }

    /// A step of its own on the node: the node's /tmp (Ray's temp root and sockets, shared by
    /// every step's container) and the run's own paths mounted at their paths, then the user's
    /// mounts; the image's `PATH` with the directories of the node's `PATH` that a user's mount
    /// brings in put first (a venv).
    fn command(&self, c: &Container<'_>, inside: &Inside, argv: &[OsString]) -> Vec<OsString> {
        let mut mounts = vec![Mount::same_path(Path::new("/tmp")).to_string()];
        mounts.extend(c.mounts(inside).iter().map(Mount::to_string));
        let mut words: Vec<OsString> = [
            "srun",
            "--overlap",
            "--nodes=1",
            "--ntasks=1",
            "--ntasks-per-node=1",
            "--export=ALL",
            "--quiet",
            "--cpu-bind=none",
            "--kill-on-bad-exit=1",
            "--job-name=rayslurm-in-image",
        ]
        .map(OsString::from)
        .to_vec();
        words.push(format!("--nodelist={}", inside.node).into());
        words.push(format!("--container-image={}", c.image).into());
        words.push(format!("--container-name={}:no_exec", inside.name).into());
        words.push(format!("--container-mounts={}", mounts.join(",")).into());
        let mut workdir = OsString::from("--container-workdir=");
        workdir.push(c.workdir(inside));
        words.push(workdir);
        let front = c.path_front(inside.path.as_deref());
        if !front.is_empty() {
            // The directories go as an argument, never into the shell's text.
            let set_path = r#"PATH="$1${PATH:+:$PATH}"; export PATH; shift; exec "$@""#;
            words.extend(["sh", "-c", set_path, "sh", &front].map(OsString::from));
        }
        words.extend(argv.iter().cloned());
        words
    }
}

/// A Docker image name as enroot spells it: a registry host (the first part, when it has a `.`
/// or `:`, or is `localhost`, as Docker reads it) is followed by `#`, not `/`:
/// `nvcr.io/nvidia/pytorch:24.05-py3` is `nvcr.io#nvidia/pytorch:24.05-py3`.
fn enroot_name(name: &str) -> String {
    match name.split_once('/') {
        Some((host, rest))
            if !name.contains('#') && (host.contains(['.', ':']) || host == "localhost") =>
        {
            format!("{host}#{rest}")
        }
        _ => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::image::samples::{container, inside, mounts, words};
    use super::*;

    #[test]
    fn pyxis_runs_a_step_of_its_own_on_the_node_in_the_runs_container() {
        let mounts = mounts();
        let c = container("pyxis", &mounts);
        let argv = ["ray".into(), "start".into()];
        assert_eq!(
            words(&c.command(&inside(), &argv)),
            "srun --overlap --nodes=1 --ntasks=1 --ntasks-per-node=1 --export=ALL --quiet \
             --cpu-bind=none --kill-on-bad-exit=1 --job-name=rayslurm-in-image --nodelist=node3 \
             --container-image=/images/debian.sqsh --container-name=rayslurm-42.0:no_exec \
             --container-mounts=/tmp:/tmp,/tmp/rs0-7.0:/tmp/rs0-7.0,/home/u/proj:/home/u/proj,/opt/venv:/opt/venv,/data:/mnt/data:ro \
             --container-workdir=/home/u/proj \
             sh -c PATH=\"$1${PATH:+:$PATH}\"; export PATH; shift; exec \"$@\" sh /opt/venv/bin:/mnt/data/tools/bin ray start"
        );
        // Nothing of the node's PATH mounted: the image's PATH as it is.
        let plain = Inside {
            path: Some("/usr/bin".into()),
            ..inside()
        };
        assert!(
            words(&c.command(&plain, &argv))
                .ends_with("--container-workdir=/home/u/proj ray start")
        );
    }

    #[test]
    fn a_registry_host_is_followed_by_a_hash() {
        let name = |i: &str| Pyxis.image_name(i, "").unwrap();
        assert_eq!(
            name("docker://nvcr.io/nvidia/pytorch:24.05-py3"),
            "nvcr.io#nvidia/pytorch:24.05-py3"
        );
        assert_eq!(name("docker://localhost/x"), "localhost#x");
        assert_eq!(name("docker://ubuntu:24.04"), "ubuntu:24.04");
        assert_eq!(name("docker://library/ubuntu"), "library/ubuntu");
        assert_eq!(name("nvcr.io#nvidia/x"), "nvcr.io#nvidia/x");
    }
}
