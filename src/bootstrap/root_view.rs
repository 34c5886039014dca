//! The run's file mounts that no user can make on a node (`/sft`, `/output`: a task file's
//! `file_mounts` to a place outside the workdir, the home and `/tmp`): every program the
//! bootstrap starts for the user (Ray's daemons, the setup, the command, each rank) runs through
//! `rayslurm root-view`, in a private view of the node's filesystem that shows them
//! (`sys::root_view`), as it would run inside an image. The bootstrap itself stays outside.
//!
//! Set once per process, as the node's workdir is made or joined ([`init`]), from the run's
//! file-mount manifest; read by [`wrap`] wherever a program starts.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::OnceLock;

use anyhow::{Context, Result};

use crate::handoff::file_mounts::{Mounted, Place, view_base};
use crate::handoff::root_view::RootViewArgs;
use crate::sys::process::{argv, rewrapped};
use crate::sys::root_view::{Bind, enter};

/// The view this node's programs run in: where it is built, and what it adds.
struct View {
    base: PathBuf,
    binds: Vec<(PathBuf, PathBuf)>,
}

static VIEW: OnceLock<View> = OnceLock::new();

/// Sets the view for every program this process starts, from the run's `mounts`; nothing when
/// none of them needs it. Its base, an empty private directory beside the copies, is made here.
pub(crate) fn init(snapshot: &Path, mounts: &[Mounted]) -> Result<(), String> {
    let binds: Vec<(PathBuf, PathBuf)> = mounts
        .iter()
        .filter_map(|m| match &m.place {
            Place::Root(dst) => Some((m.from.clone(), dst.clone())),
            _ => None,
        })
        .collect();
    if binds.is_empty() {
        return Ok(());
    }
    let base = view_base(snapshot);
    match std::fs::create_dir(&base) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create `{}`: {e}", base.display())),
    }
    let _ = VIEW.set(View { base, binds });
    Ok(())
}

/// `cmd`, to run in the view when the run has one; unchanged otherwise.
pub(crate) fn wrap(cmd: Command) -> Command {
    let Some(view) = VIEW.get() else {
        return cmd;
    };
    let me = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("rayslurm"));
    let binds = view.binds.iter().map(|(s, d)| (s.as_path(), d.as_path()));
    let words = RootViewArgs::words(&view.base, binds, argv(&cmd).into_iter());
    rewrapped(&cmd, me, words)
}

/// `rayslurm root-view`: enters the view and becomes the program.
pub(crate) fn run(args: &RootViewArgs) -> Result<ExitCode> {
    let binds: Vec<Bind> = args
        .pairs()
        .map(|(src, dst)| Bind {
            src: src.to_owned(),
            dst: dst.to_owned(),
        })
        .collect();
    enter(&args.base, &binds).map_err(anyhow::Error::msg)?;
    let (program, rest) = args.program.split_first().context("no program to run")?;
    let err = Command::new(program).args(rest).exec();
    Err(err).with_context(|| format!("cannot run `{}`", show(program)))
}

fn show(word: &OsString) -> String {
    word.to_string_lossy().into_owned()
}
