//! The end of a file, read backwards so that a huge log costs only its tail: where its last
//! lines begin (`rayslurm logs --tail`), and those lines themselves (what Ray's programs last
//! wrote, for a log).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// The offset at which the last `n` lines of `file` begin (a last line without a newline
/// counts as a line), read backwards in blocks so a huge log costs only its tail.
pub(crate) fn start_of_last_lines(file: &mut File, n: u64) -> io::Result<u64> {
    const BLOCK: u64 = 64 * 1024;
    let len = file.metadata()?.len();
    if n == 0 {
        return Ok(len);
    }
    let mut end = len;
    let mut newlines = 0u64;
    let mut skip_final_newline = true;
    let mut buf = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        for (i, &byte) in chunk.iter().enumerate().rev() {
            if byte != b'\n' {
                skip_final_newline = false;
                continue;
            }
            if skip_final_newline {
                // The newline that ends the last line does not start another.
                skip_final_newline = false;
                continue;
            }
            newlines += 1;
            if newlines == n {
                return Ok(start + i as u64 + 1);
            }
        }
        end = start;
    }
    Ok(0)
}

/// The last `n` lines of `path` that are not blank, read from at most `2 n` [`LINE_MAX`] bytes
/// of its end (a line cut there is left out, unless it is all there is, and keeps its end);
/// none when it cannot be read.
pub(crate) fn last_lines(path: &Path, n: usize) -> Vec<String> {
    let Ok(mut file) = File::open(path) else {
        return Vec::new();
    };
    let most = (n as u64).saturating_mul(2 * LINE_MAX as u64);
    let from = file.metadata().map_or(0, |m| m.len()).saturating_sub(most);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.take(most).read_to_end(&mut bytes).is_err()
    {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    // A window that begins within a line leaves that part out, unless it is all there is.
    if from > 0 && lines.len() > 1 {
        lines.remove(0);
    }
    let lines: Vec<String> = lines
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cut = l.len() - l.len().min(LINE_MAX);
            l[l.ceil_char_boundary(cut)..].to_owned()
        })
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

/// The most of one line [`last_lines`] keeps.
pub(crate) const LINE_MAX: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    fn last(text: &str, n: u64) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, text).unwrap();
        let mut file = File::open(&path).unwrap();
        let offset = start_of_last_lines(&mut file, n).unwrap() as usize;
        text[offset..].to_owned()
    }

    #[test]
    fn where_the_last_lines_begin() {
        assert_eq!(last("a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(last("a\nb\nc", 2), "b\nc");
        assert_eq!(last("a\nb\nc\n", 5), "a\nb\nc\n");
        assert_eq!(last("a\nb\nc\n", 0), "");
        assert_eq!(last("", 3), "");
        assert_eq!(last("\n\n\n", 1), "\n");
        assert_eq!(last("a\n\nb\n", 2), "\nb\n");
    }

    #[test]
    fn where_the_last_lines_begin_across_blocks() {
        let text: String = (0..50_000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(last(&text, 2), "line 49998\nline 49999\n");
        assert_eq!(last(&text, 50_000), text);
    }

    #[test]
    fn last_lines_are_the_ends_non_blank_lines_even_of_a_large_file() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.log");
        std::fs::write(&small, "one\n\ntwo\n  \nthree\n").unwrap();
        assert_eq!(last_lines(&small, 2), ["two", "three"]);
        assert_eq!(last_lines(&small, 9), ["one", "two", "three"]);
        assert!(last_lines(&dir.path().join("none.log"), 3).is_empty());
        let big = dir.path().join("big.log");
        let text: String = (0..100_000).map(|i| format!("line {i:05}\n")).collect();
        std::fs::write(&big, text).unwrap();
        assert_eq!(last_lines(&big, 2), ["line 99998", "line 99999"]);
        // A line the window cuts is left out, unless it is all there is; a long line keeps
        // its end.
        let long = dir.path().join("long.log");
        std::fs::write(&long, format!("{}\nend\n", "z".repeat(20_000))).unwrap();
        assert_eq!(last_lines(&long, 2), ["end"]);
        std::fs::write(&long, format!("{}é\n", "x".repeat(10 << 20))).unwrap();
        let last = last_lines(&long, 2);
        assert_eq!(last.len(), 1);
        assert!(
            last[0].len() <= LINE_MAX && last[0].ends_with("xé"),
            "{}",
            last[0].len()
        );
    }
}
