//! The Python that has Ray, for the head's helpers that use Ray's own Python API (its drain,
//! its cluster status): one process each, since importing Ray costs seconds of CPU.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::bootstrap::{in_image, ray_version};
use crate::sys::process::Cmd;

/// Python with Ray running `args`: inside the run's image when it has one.
pub(super) fn ray_python(args: &[OsString]) -> Cmd {
    in_image::ray_python(args, named_python())
}

/// The Python that runs `ray` on the node: the interpreter its script names (`#!...python`),
/// which has Ray; `python3` when that cannot be read.
fn named_python() -> PathBuf {
    which::which("ray")
        .ok()
        .and_then(|ray| ray_version::interpreter_of(&ray))
        .filter(|program| program.to_string_lossy().contains("python"))
        .unwrap_or_else(|| PathBuf::from("python3"))
}
