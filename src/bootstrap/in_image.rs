//! The run's image on this node (`--container-image`): every program the bootstrap starts for
//! the user (Ray's daemons and its helpers, the setup, the command, each rank) runs inside it,
//! through the runtime the launcher named. The bootstrap itself stays outside: it watches Slurm,
//! the other nodes and the command, signals them and cleans up after them, which it can only do
//! from the node.
//!
//! Set once per process, as the dispatcher starts (`init`), and read by whatever starts a
//! program. The run's own paths are mounted at the same paths: its private directory (Ray's
//! token, the cluster's file) and the working directory; /tmp, where Ray's temp root and its
//! sockets are, is the node's own in every wrapping runtime already.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use anyhow::{Context, Result};

use crate::bootstrap::enroot::{self, EnrootDirs};
use crate::bootstrap::root_view;
use crate::containers::{ContainerRuntime, Inside};
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::container::ContainerOptions;
use crate::handoff::job_env;
use crate::handoff::pyxis_name::PyxisName;
use crate::sys::process::{Cmd, argv, rewrapped};

static IMAGE: OnceLock<Image> = OnceLock::new();

/// What a program needs to run inside the run's image.
struct Image {
    options: ContainerOptions,
    run_dir: Option<PathBuf>,
    gpus: bool,
    /// This node's Slurm name, where pyxis's steps run.
    node: String,
    /// The attempt's container on each node, for pyxis ([`named`]).
    name: Option<PyxisName>,
    /// The job's id: pyxis names a container it keeps for the job only `pyxis_JOB_NAME`.
    job_id: String,
}

impl Image {
    /// The attempt's pyxis container's name (none without pyxis).
    fn name(&self) -> &str {
        self.name.as_ref().map_or("", PyxisName::as_str)
    }

    /// The names enroot may know the container by (none without pyxis).
    fn in_enroot(&self) -> Vec<String> {
        self.name
            .as_ref()
            .map_or_else(Vec::new, |n| n.in_enroot(&self.job_id).to_vec())
    }
}

/// Sets the run's image for every program this process starts; without `--container-image`
/// they run on the node as they are. `name` is the attempt's pyxis container ([`named`]).
pub(crate) fn init(
    options: &ContainerOptions,
    run_dir: Option<&Path>,
    gpus: bool,
    node: &str,
    job_id: &str,
    name: Option<&PyxisName>,
) {
    if options.container_image.is_some() {
        let _ = IMAGE.set(Image {
            options: options.clone(),
            run_dir: run_dir.map(Path::to_owned),
            gpus,
            node: node.to_owned(),
            name: name.cloned(),
            job_id: job_id.to_owned(),
        });
    }
}

/// `args` with the attempt's pyxis container named: where an attempt starts (the head, or an
/// elastic worker job, a job of its own), a fresh name with a random part; every other role
/// (a worker, a rank's task, the watchdog) is given the head's in its arguments. Unchanged
/// without pyxis.
pub(crate) fn named(args: &BootstrapArgs, job_id: &str, restart: u32) -> Result<BootstrapArgs> {
    let pyxis = args
        .cluster
        .container
        .container()
        .is_some_and(|c| c.runtime.runs_as_steps());
    if !pyxis || args.pyxis_container.is_some() {
        return Ok(args.clone());
    }
    if args.worker || args.watchdog {
        anyhow::bail!("the head named no pyxis container for this node (--pyxis-container)");
    }
    Ok(BootstrapArgs {
        pyxis_container: Some(PyxisName::new(job_id, restart, &random_hex()?)),
        ..args.clone()
    })
}

/// 16 hex digits from the kernel: the part of the container's name no one can know before.
fn random_hex() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for the name of the run's container")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether each program is a Slurm step of its own (pyxis): one that leaves daemons behind
/// when it exits, as `ray start` does, must then keep its step alive, or Slurm ends them.
pub(crate) fn in_steps() -> bool {
    IMAGE
        .get()
        .and_then(|i| i.options.container())
        .is_some_and(|c| c.runtime.runs_as_steps())
}

/// Whether the run has an image, which this process's programs run in.
pub(crate) fn is_set() -> bool {
    IMAGE.get().is_some()
}

/// `cmd` as the command that runs it: inside the image when the run has one, with its
/// environment (set, inherited or removed) and working directory. Charliecloud mounts
/// `$TMPDIR` as the image's /tmp and unsets it inside: the node's /tmp is mounted there
/// instead (Ray's sockets are in it), and `TMPDIR` is given back to the program.
pub(crate) fn wrap(cmd: Command) -> Command {
    let Some((image, container)) = IMAGE.get().and_then(|i| Some((i, i.options.container()?)))
    else {
        // On the node: in the private view its file mounts need, if they need one.
        return root_view::wrap(cmd);
    };
    let workdir = cmd
        .get_current_dir()
        .map(Path::to_owned)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    let inside = Inside {
        own: own_mounts(container.runtime, container.image, image, &workdir),
        workdir,
        gpus: image.gpus,
        tmpdir: env_of(&cmd, "TMPDIR").map(PathBuf::from),
        path: env_of(&cmd, "PATH"),
        node: image.node.clone(),
        name: image.name().to_owned(),
    };
    let words = container.command(&inside, &argv(&cmd));
    let mut wrapped = rewrapped(&cmd, &words[0], words[1..].iter().cloned());
    if let Some(user) = user_for(container.runtime) {
        wrapped.env("USER", user);
    }
    if container.runtime.runs_as_steps() {
        wrapped.env(job_env::IN_CONTAINER, image.name());
    }
    wrapped
}

/// The value `cmd` runs with of the variable `key`: its own (`None` when it removes it), else
/// this process's.
fn env_of(cmd: &Command, key: &str) -> Option<OsString> {
    cmd.get_envs()
        .find(|(k, _)| *k == key)
        .map_or_else(|| std::env::var_os(key), |(_, v)| v.map(OsStr::to_owned))
}

/// `$USER` for a runtime that refuses to start without it (Charliecloud), when the job's
/// environment has none (Slurm does not always set it).
fn user_for(runtime: ContainerRuntime) -> Option<String> {
    if !runtime.needs_user() || std::env::var_os("USER").is_some() {
        return None;
    }
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// Python with Ray, for the head's helpers (to [`wrap`]): inside an image, the `python` beside
/// `ray` on its PATH (a venv's or conda's), else `python3`; on the node, `on_node`, the
/// interpreter `ray`'s script names.
pub(crate) fn ray_python(args: &[OsString], on_node: PathBuf) -> Cmd {
    if !is_set() {
        return Cmd::new(on_node).args(args.iter().cloned());
    }
    let find =
        r#"p=$(dirname "$(command -v ray)")/python; [ -x "$p" ] || p=python3; exec "$p" "$@""#;
    Cmd::new("sh")
        .args(["-c", find, "sh"])
        .args(args.iter().cloned())
}

/// Checks that the image starts on this node (and, for a Ray run, has `ray` on its PATH), so
/// that a wrong image fails the run at start-up with the runtime's own words and the node
/// named, rather than as a command that exits 1. With pyxis, enroot's directories for the
/// user are checked first (see [`enroot`]): this is the node's first step of the attempt.
pub(crate) fn check(node: &str, ray: bool) -> Result<(), String> {
    let Some((image, container)) = IMAGE.get().and_then(|i| Some((i, i.options.container()?)))
    else {
        return Ok(());
    };
    if container.runtime.runs_as_steps() {
        // Before the node's first step, which makes the container.
        EnrootDirs::find().and_then(|dirs| dirs.check(node, &image.in_enroot()))?;
    }
    let probe = if ray {
        "command -v ray >/dev/null || { echo \"ray was not found on PATH inside the image; mount a venv that has it (--container-mounts) or use an image with Ray\" >&2; exit 127; }"
    } else {
        "true"
    };
    let mut sh = Command::new("sh");
    sh.args(["-c", probe]);
    let out = wrap(sh).stdin(Stdio::null()).output().map_err(|e| {
        format!(
            "cannot run the container runtime `{}` on {node}: {e}",
            container.runtime.program()
        )
    })?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said = said.trim();
    Err(format!(
        "the image `{}` ({}) cannot run on {node}: {}",
        container.image,
        container.runtime,
        if said.is_empty() {
            crate::sys::process::describe_status(out.status)
        } else {
            said.to_owned()
        }
    ))
}

/// The run's own paths to mount, each at the same path: its private directory and the working
/// directory; those under /tmp are the node's own /tmp, which the runtimes share already.
/// Charliecloud mounts only at a directory the image has: for a directory image, each path is
/// mounted at its deepest ancestor the image has (not `/`), so that the path is the same inside.
fn own_mounts(
    runtime: ContainerRuntime,
    image_path: &str,
    image: &Image,
    workdir: &Path,
) -> Vec<PathBuf> {
    let mut own = Vec::new();
    for path in image.run_dir.iter().map(PathBuf::as_path).chain([workdir]) {
        if path.starts_with("/tmp") || path == Path::new("/") {
            continue;
        }
        let at = runtime.mount_point(Path::new(image_path), path);
        if !own.iter().any(|o: &PathBuf| path.starts_with(o)) {
            own.retain(|o: &PathBuf| !o.starts_with(&at));
            own.push(at);
        }
    }
    own
}

/// Removes the run's container from this node unless a program still runs in it (another
/// task of a per-node run: the last one out removes it; `enroot list -f` cannot tell, as it
/// knows a container's processes only by paths that a node's own mounts can hide). Pyxis keeps a named container after
/// the job unless the site scopes them to jobs (`container_scope=job`, which names it
/// `pyxis_JOB_NAME` and removes it itself). Run on the node itself, since a job that Slurm
/// is ending (a time limit, `scancel`) can start no step. Nothing to do without pyxis.
pub(crate) fn remove_container(node: &str) {
    let Some(image) = IMAGE.get().filter(|_| in_steps()) else {
        return;
    };
    // Every program in the container, and the `srun` on the node that runs it, has the mark.
    if !crate::bootstrap::marked::with_env(job_env::IN_CONTAINER, image.name()).is_empty() {
        return;
    }
    let Err(why) = enroot::remove(node, &image.in_enroot()) else {
        return;
    };
    crate::bootstrap::node::say(
        node,
        format!(
            "warning: the run's container `{}` may be left on this node: {why}",
            image.name()
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head (and an elastic worker job) name the attempt's container afresh, with 16
    /// random hex digits; every other role keeps the head's, and has to be given one.
    #[test]
    fn the_head_names_a_fresh_container_every_attempt_and_the_other_roles_keep_it() {
        use crate::handoff::cluster::ClusterOptions;
        let mut cluster = ClusterOptions::default();
        cluster.container.container_image = Some("/i.sqsh".into());
        cluster.container.container_runtime = ContainerRuntime::named("pyxis");
        let head = BootstrapArgs::head("/s.json".into(), "/r.d".into(), 0, cluster);
        let name = |a: &BootstrapArgs| a.pyxis_container.clone().unwrap().to_string();
        let first = name(&named(&head, "42", 0).unwrap());
        let again = name(&named(&head, "42", 0).unwrap());
        let random = first.strip_prefix("rayslurm-42.0-").unwrap();
        assert_eq!(random.len(), 16);
        assert!(random.chars().all(|c| c.is_ascii_hexdigit()), "{first}");
        assert_ne!(first, again, "a fresh name every time");
        let worker = BootstrapArgs {
            worker: true,
            pyxis_container: Some(first.parse().unwrap()),
            ..head.clone()
        };
        assert_eq!(name(&named(&worker, "42", 0).unwrap()), first);
        let untold = BootstrapArgs {
            pyxis_container: None,
            ..worker
        };
        let err = named(&untold, "42", 0).unwrap_err().to_string();
        assert!(err.contains("the head named no pyxis container"), "{err}");
        // Without pyxis: no name.
        let mut plain = head;
        plain.cluster.container.container_runtime = ContainerRuntime::named("charliecloud");
        assert!(named(&plain, "42", 0).unwrap().pyxis_container.is_none());
    }

    #[test]
    fn own_mounts_skip_tmp_and_paths_inside_another() {
        let image = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(image.path().join("home")).unwrap();
        let img = Image {
            options: ContainerOptions::default(),
            run_dir: Some(PathBuf::from("/home/u/.local/state/rayslurm/jobs/x.d")),
            gpus: false,
            node: "node1".to_owned(),
            name: Some(PyxisName::new("7", 0, "ab")),
            job_id: "7".to_owned(),
        };
        let path = image.path().to_str().unwrap();
        let ch = own_mounts(
            ContainerRuntime::named("charliecloud").unwrap(),
            path,
            &img,
            Path::new("/home/u/p"),
        );
        assert_eq!(ch, [PathBuf::from("/home")]);
        let ap = own_mounts(
            ContainerRuntime::named("apptainer").unwrap(),
            path,
            &img,
            Path::new("/tmp/rs0-1.0-workdir"),
        );
        assert_eq!(
            ap,
            [PathBuf::from("/home/u/.local/state/rayslurm/jobs/x.d")]
        );
    }
}
