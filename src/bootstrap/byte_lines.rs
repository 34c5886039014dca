//! Reading a child's output (or the head's orders) line by line as bytes.
//!
//! A command may print anything: a line that is not UTF-8 (`caf\xe9` in Latin-1) must reach
//! the job's log unchanged, and must not stop the reader, or the step's srun dies of SIGPIPE
//! and heartbeats stop, and the run fails as a node failure. So lines are `Vec<u8>`, passed
//! through as they are; only our own protocol lines (which start with [`PROTOCOL_PREFIX`] and
//! are ASCII) are read as text.

use std::io::{BufRead, Write};

/// What every line the nodes and the head say to each other starts with.
pub(crate) const PROTOCOL_PREFIX: &[u8] = b"RAYSLURM-";

/// Calls `each` with every line of `from` (its newline included, if it had one) until
/// end-of-file or a read error; `each` returns false to stop early.
pub(crate) fn for_each(mut from: impl BufRead, mut each: impl FnMut(&[u8]) -> bool) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !each(&line) {
            return;
        }
    }
}

/// The line as text if it is one of our protocol lines (newline and spaces around trimmed).
pub(crate) fn protocol(line: &[u8]) -> Option<&str> {
    let line = line.trim_ascii();
    if !line.starts_with(PROTOCOL_PREFIX) {
        return None;
    }
    std::str::from_utf8(line).ok()
}

/// The line as text, whatever bytes it holds (for lines that only our own code writes, and
/// where a stray byte should spoil one line, never the rest).
pub(crate) fn text(line: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(line.trim_ascii())
}

/// Writes `prefix` and `line` (with a newline at the end if it had none) as they are.
pub(crate) fn write(out: &mut impl Write, prefix: &[u8], line: &[u8]) -> std::io::Result<()> {
    out.write_all(prefix)?;
    out.write_all(line)?;
    if !line.ends_with(b"\n") {
        out.write_all(b"\n")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_not_utf8_is_read_and_written_unchanged_and_reading_goes_on() {
        let input: &[u8] = b"caf\xe9\nRAYSLURM-ALIVE n2\n\xff\xfe last";
        let mut lines = Vec::new();
        for_each(input, |l| {
            lines.push(l.to_vec());
            true
        });
        assert_eq!(
            lines,
            vec![
                b"caf\xe9\n".to_vec(),
                b"RAYSLURM-ALIVE n2\n".to_vec(),
                b"\xff\xfe last".to_vec()
            ]
        );
        assert_eq!(protocol(&lines[0]), None);
        assert_eq!(protocol(&lines[1]), Some("RAYSLURM-ALIVE n2"));
        assert_eq!(protocol(b"RAYSLURM-\xe9"), None);
        let mut out = Vec::new();
        for l in &lines {
            write(&mut out, b"[0 n1] ", l).unwrap();
        }
        assert_eq!(
            out,
            b"[0 n1] caf\xe9\n[0 n1] RAYSLURM-ALIVE n2\n[0 n1] \xff\xfe last\n"
        );
        assert_eq!(text(b" done\xff\n"), "done\u{fffd}");
    }

    #[test]
    fn reading_stops_when_asked() {
        let mut n = 0;
        for_each(&b"a\nb\nc\n"[..], |_| {
            n += 1;
            n < 2
        });
        assert_eq!(n, 2);
    }
}
