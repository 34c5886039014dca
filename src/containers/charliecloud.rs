//! Charliecloud: `ch-run -b SRC:DST... -c DIR IMAGE -- PROGRAM`. It runs local images only (a
//! path, or a name in `ch-image`'s storage), mounts read-write and only at directories the
//! image has, mounts `$TMPDIR` as the image's /tmp (and unsets it), and refuses to start
//! without `$USER`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Container, Inside, Runtime};
use crate::error::{UsageError, show};

pub(super) struct Charliecloud;

impl Runtime for Charliecloud {
    fn name(&self) -> &'static str {
        "charliecloud"
    }

    fn about(&self) -> &'static str {
        "Charliecloud: `ch-run IMAGE -- PROGRAM`"
    }

    fn program(&self) -> &'static str {
        "ch-run"
    }

    fn find(&self) -> Option<PathBuf> {
        which::which("ch-run").ok()
    }

    fn image_name(&self, image: &str, how: &str) -> Result<String, UsageError> {
        if !image.contains("://") {
            return Ok(image.to_owned());
        }
        Err(UsageError::new(format!(
            "--container-image {} is a registry image, and charliecloud ({how}) runs only local ones",
            show(image)
        ))
        .hint("pull it here first (`ch-image pull IMAGE`, then `ch-convert IMAGE /shared/IMAGE.sqfs`) and give that path, or the name of an image in ch-image's storage"))
    }

    fn mounts_read_only(&self) -> bool {
        false
    }

    /// The deepest ancestor of `path` (itself included) that a directory image has, other
    /// than `/`; `path` itself when there is none or the image is not a directory (a SquashFS
    /// file), so that Charliecloud's own message names the path it cannot mount.
    fn mount_point(&self, image: &Path, path: &Path) -> PathBuf {
        if !image.is_dir() {
            return path.to_owned();
        }
        path.ancestors()
            .filter(|a| *a != Path::new("/"))
            .find(|a| image.join(a.strip_prefix("/").unwrap_or(a)).is_dir())
            .map_or_else(|| path.to_owned(), Path::to_owned)
    }

    fn needs_user(&self) -> bool {
        true
    }

    fn command(&self, c: &Container<'_>, inside: &Inside, argv: &[OsString]) -> Vec<OsString> {
        // Charliecloud would mount the program's `$TMPDIR` as /tmp, and unset it: the node's
        // /tmp goes there instead (Ray's sockets are in it), `TMPDIR` back in.
        let mut words: Vec<OsString> = vec!["ch-run".into(), "-b".into(), "/tmp:/tmp".into()];
        if let Some(tmpdir) = &inside.tmpdir {
            let mut set = OsString::from("--set-env=TMPDIR=");
            set.push(tmpdir);
            words.push(set);
        }
        // Read-write: `:ro` has no spelling here.
        for mount in &c.mounts(inside) {
            words.push("-b".into());
            words.push(format!("{}:{}", mount.src.display(), mount.dst.display()).into());
        }
        words.push("-c".into());
        words.push(c.workdir(inside).into());
        words.push(c.image.into());
        words.push("--".into());
        words.extend(argv.iter().cloned());
        words
    }
}

#[cfg(test)]
mod tests {
    use super::super::image::samples::{container, inside, mounts, words};
    use super::*;

    #[test]
    fn charliecloud_runs_after_a_double_dash_in_the_working_directory() {
        let mounts = mounts();
        let c = Container {
            workdir: Some(Path::new("/work")),
            ..container("charliecloud", &mounts)
        };
        let argv = ["bash".into(), "-c".into(), "echo hi".into()];
        assert_eq!(
            words(&c.command(&inside(), &argv)),
            "ch-run -b /tmp:/tmp --set-env=TMPDIR=/tmp/rs0-7.0 -b /tmp/rs0-7.0:/tmp/rs0-7.0 -b /home/u/proj:/home/u/proj \
             -b /opt/venv:/opt/venv -b /data:/mnt/data -c /work /images/debian.sqsh -- bash -c echo hi"
        );
    }

    #[test]
    fn charliecloud_mounts_at_the_deepest_directory_the_image_has() {
        let image = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(image.path().join("srv/lab/shared")).unwrap();
        std::fs::create_dir_all(image.path().join("home")).unwrap();
        let at = |p: &str| Charliecloud.mount_point(image.path(), Path::new(p));
        assert_eq!(at("/srv/lab/shared/tests/x"), Path::new("/srv/lab/shared"));
        assert_eq!(at("/srv/lab/shared"), Path::new("/srv/lab/shared"));
        assert_eq!(at("/home/u/proj"), Path::new("/home"));
        // Nothing but `/`: the path itself, for ch-run to refuse by name.
        assert_eq!(at("/lustre/u/proj"), Path::new("/lustre/u/proj"));
        assert_eq!(
            Charliecloud.mount_point(Path::new("/no/such/image.sqfs"), Path::new("/home/u")),
            Path::new("/home/u")
        );
    }
}
