//! The Python that has Ray, for the head's helpers that use Ray's own Python API (its drain,
//! its cluster status): one process each, since importing Ray costs seconds of CPU.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::bootstrap::in_image;
use crate::sys::process::Cmd;

/// Python with Ray running `args`: inside the run's image when it has one.
pub(super) fn ray_python(args: &[OsString]) -> Cmd {
    in_image::ray_python(args, named_python())
}

/// The Python that runs `ray` on the node: the interpreter its script names (`#!...python`),
/// which has Ray; `python3` when that cannot be read.
fn named_python() -> PathBuf {
    let named = which::which("ray")
        .ok()
        .and_then(|ray| std::fs::read(ray).ok())
        .and_then(|bytes| {
            let first = bytes.split(|b| *b == b'\n').next()?.to_vec();
            let line = String::from_utf8(first).ok()?;
            let program = line
                .strip_prefix("#!")?
                .split_whitespace()
                .next()?
                .to_owned();
            program.contains("python").then(|| PathBuf::from(program))
        });
    named.unwrap_or_else(|| PathBuf::from("python3"))
}
