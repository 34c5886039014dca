//! The container image a run's programs run in (`--container-image`): the options the launcher
//! resolves and the bootstrap is told, and the command line that runs a program inside the image
//! with each runtime. The bootstrap itself stays on the node (it watches Slurm, the nodes and
//! the command, and cleans up); every program it starts for the user (Ray's daemons and
//! helpers, the setup, the command, each rank) runs inside the image.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

/// How a program is put inside the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ContainerRuntime {
    /// Slurm's pyxis plugin with enroot: `srun --container-image=IMAGE`.
    Pyxis,
    /// `apptainer exec IMAGE PROGRAM`.
    Apptainer,
    /// `singularity exec IMAGE PROGRAM` (SingularityCE, or Apptainer's older name).
    Singularity,
    /// Charliecloud: `ch-run IMAGE -- PROGRAM`.
    Charliecloud,
}

impl ContainerRuntime {
    /// The value as `--container-runtime` takes it.
    pub(crate) fn as_arg(self) -> &'static str {
        match self {
            Self::Pyxis => "pyxis",
            Self::Apptainer => "apptainer",
            Self::Singularity => "singularity",
            Self::Charliecloud => "charliecloud",
        }
    }

    /// The program a wrapping runtime runs on the node; `None` for pyxis, which is `srun`'s.
    pub(crate) fn program(self) -> Option<&'static str> {
        match self {
            Self::Pyxis => None,
            Self::Apptainer => Some("apptainer"),
            Self::Singularity => Some("singularity"),
            Self::Charliecloud => Some("ch-run"),
        }
    }
}

impl fmt::Display for ContainerRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_arg())
    }
}

/// One `--container-mounts` entry: `SRC[:DST[:ro]]`, pyxis's spelling; DST is SRC when left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    pub(crate) src: PathBuf,
    pub(crate) dst: PathBuf,
    pub(crate) read_only: bool,
}

impl Mount {
    /// The same host path at the same path inside the image, writable.
    pub(crate) fn same_path(path: &Path) -> Self {
        Self {
            src: path.to_owned(),
            dst: path.to_owned(),
            read_only: false,
        }
    }
}

impl FromStr for Mount {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split(':').collect();
        let (src, dst, flag) = match parts.as_slice() {
            [src] => (*src, *src, None),
            [src, dst] => (*src, *dst, None),
            [src, dst, flag] => (*src, *dst, Some(*flag)),
            _ => {
                return Err(format!(
                    "`{text}` has more than two `:`; write SRC:DST or SRC:DST:ro"
                ));
            }
        };
        let read_only = match flag {
            None | Some("rw") => false,
            Some("ro") => true,
            Some(other) => {
                return Err(format!(
                    "`{text}` ends in `:{other}`; the flags are `ro` (read-only) and `rw`"
                ));
            }
        };
        for (what, path) in [("source", src), ("destination", dst)] {
            if !path.starts_with('/') {
                return Err(format!(
                    "`{text}`: the {what} `{path}` is not an absolute path; the same path must mean the same directory on every node"
                ));
            }
        }
        Ok(Self {
            src: PathBuf::from(src),
            dst: PathBuf::from(dst),
            read_only,
        })
    }
}

impl fmt::Display for Mount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.src.display(), self.dst.display())?;
        if self.read_only {
            f.write_str(":ro")?;
        }
        Ok(())
    }
}

/// The image the run's programs run in, and how: resolved by the launcher (the runtime is
/// always named by then), passed to the bootstrap as flags.
#[derive(Debug, Clone, PartialEq, Eq, Default, Args)]
pub(crate) struct ContainerOptions {
    /// Run Ray, the setup and the command inside this image on every node.
    #[arg(long)]
    pub(crate) container_image: Option<String>,
    /// Host paths mounted into the image, `SRC[:DST[:ro]]`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub(crate) container_mounts: Vec<Mount>,
    /// The working directory inside the image (the run's own working directory otherwise).
    #[arg(long)]
    pub(crate) container_workdir: Option<PathBuf>,
    /// The runtime that runs the image.
    #[arg(long, value_enum)]
    pub(crate) container_runtime: Option<ContainerRuntime>,
}

impl ContainerOptions {
    /// The flags that carry these options (none without an image).
    pub(crate) fn to_flags(&self) -> Vec<(&'static str, Option<String>)> {
        let Some(image) = &self.container_image else {
            return Vec::new();
        };
        let mut flags = vec![("--container-image", Some(image.clone()))];
        if !self.container_mounts.is_empty() {
            let mounts: Vec<String> = self.container_mounts.iter().map(Mount::to_string).collect();
            flags.push(("--container-mounts", Some(mounts.join(","))));
        }
        if let Some(dir) = &self.container_workdir {
            flags.push(("--container-workdir", Some(dir.display().to_string())));
        }
        if let Some(runtime) = self.container_runtime {
            flags.push(("--container-runtime", Some(runtime.as_arg().to_owned())));
        }
        flags
    }

    /// The image and its runtime, when the run has an image.
    pub(crate) fn container(&self) -> Option<Container<'_>> {
        let image = self.container_image.as_deref()?;
        Some(Container {
            image,
            runtime: self.container_runtime.unwrap_or(ContainerRuntime::Pyxis),
            options: self,
        })
    }
}

/// A run's image with its runtime: builds the command line that runs a program inside it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Container<'a> {
    pub(crate) image: &'a str,
    pub(crate) runtime: ContainerRuntime,
    options: &'a ContainerOptions,
}

/// What the bootstrap adds to every program it starts in the image: the run's own paths (its
/// directory, Ray's temp root, the working directory), mounted at the same paths, so that Ray's
/// sockets, the token and the user's files are where the node's side expects them; the
/// working directory; whether the node's GPUs are the job's.
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
}

/// Where pyxis runs a program: a step of its own on this node (`srun --overlap`), in the
/// run's one container on the node (`--container-name`, made from the image by the node's
/// first step, started afresh by each step: `no_exec`, so that every program has its own
/// environment and not that of Ray's running daemons).
#[derive(Debug, Clone)]
pub(crate) struct PyxisStep<'a> {
    pub(crate) node: &'a str,
    pub(crate) name: &'a str,
}

impl Container<'_> {
    /// Every mount: the run's own paths first, then the user's (a user mount of the same
    /// destination comes later and wins).
    fn mounts(&self, inside: &Inside) -> Vec<Mount> {
        let mut mounts: Vec<Mount> = Vec::new();
        for path in &inside.own {
            if !mounts.iter().any(|m| m.dst == *path) {
                mounts.push(Mount::same_path(path));
            }
        }
        mounts.extend(self.options.container_mounts.iter().cloned());
        mounts
    }

    fn workdir<'w>(&'w self, inside: &'w Inside) -> &'w Path {
        self.options
            .container_workdir
            .as_deref()
            .unwrap_or(&inside.workdir)
    }

    /// `argv` run inside the image by pyxis, as a step of its own on `step.node`: the node's
    /// /tmp (Ray's temp root and sockets, shared by every step's container) and the run's own
    /// paths mounted at their paths, then the user's mounts; the image's `PATH` with the
    /// directories of the node's `PATH` that a user's mount brings in put first (a venv).
    pub(crate) fn srun_step(
        &self,
        inside: &Inside,
        step: &PyxisStep<'_>,
        argv: &[OsString],
    ) -> Vec<OsString> {
        let mut mounts = vec![Mount::same_path(Path::new("/tmp")).to_string()];
        mounts.extend(self.mounts(inside).iter().map(Mount::to_string));
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
        words.push(format!("--nodelist={}", step.node).into());
        words.push(format!("--container-image={}", self.image).into());
        words.push(format!("--container-name={}:no_exec", step.name).into());
        words.push(format!("--container-mounts={}", mounts.join(",")).into());
        let mut workdir = OsString::from("--container-workdir=");
        workdir.push(self.workdir(inside));
        words.push(workdir);
        let front = self.path_front(inside.path.as_deref());
        if !front.is_empty() {
            // The directories go as an argument, never into the shell's text.
            let set_path = r#"PATH="$1${PATH:+:$PATH}"; export PATH; shift; exec "$@""#;
            words.extend(["sh", "-c", set_path, "sh", &front].map(OsString::from));
        }
        words.extend(argv.iter().cloned());
        words
    }

    /// The directories of the node's `PATH` that a user's mount brings into the image, as
    /// they are seen inside, in their order.
    fn path_front(&self, path: Option<&std::ffi::OsStr>) -> String {
        let Some(path) = path else {
            return String::new();
        };
        let inside: Vec<String> = std::env::split_paths(path)
            .filter_map(|dir| {
                self.options.container_mounts.iter().find_map(|m| {
                    let rest = dir.strip_prefix(&m.src).ok()?;
                    Some(m.dst.join(rest).display().to_string())
                })
            })
            .filter(|dir| !dir.contains(':'))
            .collect();
        inside.join(":")
    }

    /// `argv` run inside the image with a wrapping runtime; `None` for pyxis, whose image is
    /// given to `srun`.
    pub(crate) fn wrap(&self, inside: &Inside, argv: &[OsString]) -> Option<Vec<OsString>> {
        let program = self.runtime.program()?;
        let mut words: Vec<OsString> = vec![program.into()];
        let mounts = self.mounts(inside);
        let workdir = self.workdir(inside);
        match self.runtime {
            ContainerRuntime::Pyxis => return None,
            ContainerRuntime::Apptainer | ContainerRuntime::Singularity => {
                words.push("exec".into());
                if inside.gpus {
                    words.push("--nv".into());
                }
                for mount in &mounts {
                    words.push("--bind".into());
                    words.push(mount.to_string().into());
                }
                words.push("--pwd".into());
                words.push(workdir.into());
                words.push(self.image.into());
            }
            ContainerRuntime::Charliecloud => {
                // Charliecloud would mount the program's `$TMPDIR` as /tmp, and unset it: the
                // node's /tmp goes there instead (Ray's sockets are in it), `TMPDIR` back in.
                words.push("-b".into());
                words.push("/tmp:/tmp".into());
                if let Some(tmpdir) = &inside.tmpdir {
                    let mut set = OsString::from("--set-env=TMPDIR=");
                    set.push(tmpdir);
                    words.push(set);
                }
                // Charliecloud mounts only at directories the image has (it cannot make mount
                // points in a read-only image), and read-write: `:ro` has no spelling here.
                for mount in &mounts {
                    words.push("-b".into());
                    words.push(format!("{}:{}", mount.src.display(), mount.dst.display()).into());
                }
                words.push("-c".into());
                words.push(workdir.into());
                words.push(self.image.into());
                words.push("--".into());
            }
        }
        words.extend(argv.iter().cloned());
        Some(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Parse {
        #[command(flatten)]
        container: ContainerOptions,
    }

    fn options(runtime: ContainerRuntime) -> ContainerOptions {
        ContainerOptions {
            container_image: Some("/images/debian.sqsh".into()),
            container_mounts: vec![
                "/opt/venv".parse().unwrap(),
                "/data:/mnt/data:ro".parse().unwrap(),
            ],
            container_workdir: None,
            container_runtime: Some(runtime),
        }
    }

    fn inside() -> Inside {
        Inside {
            own: vec![PathBuf::from("/tmp/rs0-7.0"), PathBuf::from("/home/u/proj")],
            workdir: PathBuf::from("/home/u/proj"),
            gpus: true,
            tmpdir: Some(PathBuf::from("/tmp/rs0-7.0")),
            path: Some("/opt/venv/bin:/usr/bin:/data/tools/bin".into()),
        }
    }

    fn words(argv: Option<Vec<OsString>>) -> String {
        argv.unwrap()
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn flags_round_trip() {
        for o in [
            options(ContainerRuntime::Charliecloud),
            ContainerOptions::default(),
        ] {
            let argv = std::iter::once("x".to_owned()).chain(
                o.to_flags()
                    .into_iter()
                    .flat_map(|(f, v)| std::iter::once(f.to_owned()).chain(v)),
            );
            assert_eq!(Parse::try_parse_from(argv).unwrap().container, o);
        }
    }

    #[test]
    fn mounts_are_pyxis_spelling_and_refuse_what_is_ambiguous() {
        let m: Mount = "/a:/b:ro".parse().unwrap();
        assert_eq!(m.to_string(), "/a:/b:ro");
        assert_eq!("/a".parse::<Mount>().unwrap().to_string(), "/a:/a");
        for bad in ["a:/b", "/a:b", "/a:/b:rx", "/a:/b:ro:x"] {
            let e = bad.parse::<Mount>().unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn apptainer_binds_the_runs_paths_and_the_users_with_gpus() {
        let o = options(ContainerRuntime::Apptainer);
        let argv = ["ray".into(), "start".into()];
        assert_eq!(
            words(o.container().unwrap().wrap(&inside(), &argv)),
            "apptainer exec --nv --bind /tmp/rs0-7.0:/tmp/rs0-7.0 --bind /home/u/proj:/home/u/proj \
             --bind /opt/venv:/opt/venv --bind /data:/mnt/data:ro --pwd /home/u/proj \
             /images/debian.sqsh ray start"
        );
        let s = options(ContainerRuntime::Singularity);
        let no_gpus = Inside {
            gpus: false,
            ..inside()
        };
        assert!(
            words(s.container().unwrap().wrap(&no_gpus, &argv))
                .starts_with("singularity exec --bind")
        );
    }

    #[test]
    fn charliecloud_runs_after_a_double_dash_in_the_working_directory() {
        let mut o = options(ContainerRuntime::Charliecloud);
        o.container_workdir = Some("/work".into());
        let argv = ["bash".into(), "-c".into(), "echo hi".into()];
        assert_eq!(
            words(o.container().unwrap().wrap(&inside(), &argv)),
            "ch-run -b /tmp:/tmp --set-env=TMPDIR=/tmp/rs0-7.0 -b /tmp/rs0-7.0:/tmp/rs0-7.0 -b /home/u/proj:/home/u/proj \
             -b /opt/venv:/opt/venv -b /data:/mnt/data -c /work /images/debian.sqsh -- bash -c echo hi"
        );
    }

    #[test]
    fn pyxis_runs_a_step_of_its_own_on_the_node_in_the_runs_container() {
        let o = options(ContainerRuntime::Pyxis);
        let step = PyxisStep {
            node: "node3",
            name: "rayslurm-42.0",
        };
        let argv = ["ray".into(), "start".into()];
        assert_eq!(
            words(Some(o.container().unwrap().srun_step(
                &inside(),
                &step,
                &argv
            ))),
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
            words(Some(o.container().unwrap().srun_step(&plain, &step, &argv)))
                .ends_with("--container-workdir=/home/u/proj ray start")
        );
    }

    #[test]
    fn pyxis_is_not_a_wrapper() {
        let o = options(ContainerRuntime::Pyxis);
        assert!(
            o.container()
                .unwrap()
                .wrap(&inside(), &["true".into()])
                .is_none()
        );
    }
}
