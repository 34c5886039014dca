//! Apptainer, and SingularityCE (or Apptainer's older name), which take the same command line:
//! `apptainer exec [--nv] --bind SRC:DST[:ro]... --pwd DIR IMAGE PROGRAM`. An image is a path or
//! a URI (`docker://IMAGE`); a bare registry name would be read as a path.

use std::ffi::OsString;
use std::path::PathBuf;

use super::{Container, Inside, Runtime};
use crate::error::{UsageError, show};

pub(super) struct Apptainer {
    name: &'static str,
    about: &'static str,
}

impl Apptainer {
    pub(super) const APPTAINER: Self = Self {
        name: "apptainer",
        about: "`apptainer exec IMAGE PROGRAM`",
    };
    pub(super) const SINGULARITY: Self = Self {
        name: "singularity",
        about: "`singularity exec IMAGE PROGRAM` (SingularityCE, or Apptainer's older name)",
    };
}

impl Runtime for Apptainer {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn program(&self) -> &'static str {
        self.name
    }

    fn find(&self) -> Option<PathBuf> {
        which::which(self.name).ok()
    }

    fn image_name(&self, image: &str, how: &str) -> Result<String, UsageError> {
        if image.contains("://") {
            return Ok(image.to_owned());
        }
        Err(UsageError::new(format!(
            "--container-image {} is neither a path that exists here nor a URI, as {} ({how}) takes images",
            show(image),
            self.name
        ))
        .hint(format!(
            "for a registry image give `docker://{image}`; for a file, its path (`./{image}` or from `/`)"
        )))
    }

    fn command(&self, c: &Container<'_>, inside: &Inside, argv: &[OsString]) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec![self.name.into(), "exec".into()];
        if inside.gpus {
            words.push("--nv".into());
        }
        for mount in &c.mounts(inside) {
            words.push("--bind".into());
            words.push(mount.to_string().into());
        }
        words.push("--pwd".into());
        words.push(c.workdir(inside).into());
        words.push(c.image.into());
        words.extend(argv.iter().cloned());
        words
    }
}

#[cfg(test)]
mod tests {
    use super::super::image::samples::{container, inside, mounts, words};
    use super::*;

    #[test]
    fn apptainer_binds_the_runs_paths_and_the_users_with_gpus() {
        let mounts = mounts();
        let argv = ["ray".into(), "start".into()];
        assert_eq!(
            words(&container("apptainer", &mounts).command(&inside(), &argv)),
            "apptainer exec --nv --bind /tmp/rs0-7.0:/tmp/rs0-7.0 --bind /home/u/proj:/home/u/proj \
             --bind /opt/venv:/opt/venv --bind /data:/mnt/data:ro --pwd /home/u/proj \
             /images/debian.sqsh ray start"
        );
        let no_gpus = Inside {
            gpus: false,
            ..inside()
        };
        assert!(
            words(&container("singularity", &mounts).command(&no_gpus, &argv))
                .starts_with("singularity exec --bind")
        );
    }
}
