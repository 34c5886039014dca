//! `--env-file FILE`: environment variables for the command, read from a file so that their
//! values never appear on a command line (`ps` on a login node shows every user's argv).
//!
//! The format is dotenv's plain core: `KEY=VALUE` lines, an optional `export ` before the key,
//! `#` comment lines and blank lines; white space around a value goes, and a value wholly inside one
//! pair of `'` or `"` loses them (nothing inside is expanded or unescaped). A bad line is reported as `FILE:LINE: why`,
//! never with its text: it may hold a secret.

use std::path::Path;

use crate::error::UsageError;
use crate::launch::validate::ENV_NAME;

/// The variables of the file at `path`, in its order.
pub(crate) fn read(path: &Path) -> Result<Vec<(String, String)>, UsageError> {
    let text = std::fs::read(path).map_err(|e| {
        UsageError::new(format!("cannot read --env-file `{}`: {e}", path.display()))
            .hint("name a file of KEY=VALUE lines")
    })?;
    let text = String::from_utf8(text).map_err(|_| {
        UsageError::new(format!("--env-file `{}` is not UTF-8 text", path.display()))
            .hint("write KEY=VALUE lines in UTF-8")
    })?;
    parse(&path.display().to_string(), &text)
}

/// The variables of `text`, read from the file `name`.
pub(crate) fn parse(name: &str, text: &str) -> Result<Vec<(String, String)>, UsageError> {
    let mut vars = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = || format!("{name}:{}", i + 1);
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let Some((key, value)) = line.split_once('=') else {
            return Err(UsageError::new(format!("{}: no `=` on the line", at()))
                .hint("write each variable as KEY=VALUE; comment lines start with `#`"));
        };
        let key = key.trim_end();
        if !ENV_NAME.is_match(key) {
            return Err(UsageError::new(format!(
                "{}: what comes before `=` is not a variable name",
                at()
            ))
            .hint("names start with a letter or `_` and hold only letters, digits and `_`"));
        }
        let value = value.trim();
        let value = ['"', '\'']
            .into_iter()
            .find_map(|q| {
                value
                    .strip_prefix(q)
                    .and_then(|v| v.strip_suffix(q))
                    .filter(|v| !v.contains(q))
            })
            .unwrap_or(value);
        vars.push((key.to_owned(), value.to_owned()));
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// A file of 100,000 lines, each key given twice, is read in time linear in its lines
    /// (a step that looked back over the keys read so far would take minutes): each key
    /// once, with its last value, in the order of the last lines that gave them, and an
    /// `--env` after the file winning over it.
    #[test]
    fn a_file_of_100000_lines_is_read_in_linear_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.env");
        let first = (0..50_000).map(|i| format!("K_{i}=first{i}\n"));
        let second = (0..50_000).map(|i| format!("export K_{i}=\"second {i}\"\n"));
        std::fs::write(&path, first.chain(second).collect::<String>()).unwrap();
        let t0 = Instant::now();
        let flag = ["K_7=flag".to_owned()];
        let vars = crate::launch::config::env_vars(&[path], ("--env", &flag[..]));
        let took = t0.elapsed();
        let vars = vars.unwrap();
        eprintln!("100,000 env lines read in {took:?}");
        let var = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(vars.len(), 50_000);
        assert_eq!(vars[0], var("K_0", "second 0"));
        assert_eq!(vars[7], var("K_8", "second 8"));
        assert_eq!(vars[49_998], var("K_49999", "second 49999"));
        assert_eq!(vars[49_999], var("K_7", "flag"));
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn lines_comments_quotes() {
        let text = "# keys\n\nA=1\nexport B = x\n  C=\"two words\"\nD='it''s'\nE=a=b\nF=\nG='q\"'\r\nH=#not-a-comment\n";
        let got = parse("f.env", text).unwrap();
        let want = [
            ("A", "1"),
            ("B", "x"),
            ("C", "two words"),
            ("D", "'it''s'"),
            ("E", "a=b"),
            ("F", ""),
            ("G", "q\""),
            ("H", "#not-a-comment"),
        ];
        assert_eq!(
            got,
            want.map(|(k, v)| (k.to_owned(), v.to_owned())).to_vec()
        );
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_line_without_its_text() {
        for (text, line, why) in [
            ("A=1\nSECRET sk-123\n", 2, "no `=`"),
            ("\n\nsk-123=x\n", 3, "not a variable name"),
            ("1A=sk-123\n", 1, "not a variable name"),
            ("A B=sk-123\n", 1, "not a variable name"),
        ] {
            let err = parse("p/.env", text).unwrap_err();
            assert!(
                err.message.starts_with(&format!("p/.env:{line}: ")),
                "{text:?}: {}",
                err.message
            );
            assert!(err.message.contains(why), "{text:?}: {}", err.message);
            assert!(!err.message.contains("sk-123"), "{}", err.message);
        }
    }
}
