//! Whole results written to stdout, where a reader that stops early (`| head`) is no error.

use std::io::Write;

/// Writes `bytes` to stdout; a closed pipe ends the output quietly.
pub(crate) fn write_result(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
