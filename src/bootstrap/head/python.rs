//! The Python that has Ray, for the head's helpers that use Ray's own Python API (its drain,
//! its cluster status): one process each, since importing Ray costs seconds of CPU.

use std::path::PathBuf;

/// The Python that runs `ray`: the interpreter its script names (`#!...python`), which has Ray;
/// `python3` when that cannot be read.
pub(super) fn ray_python() -> PathBuf {
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
