//! Quoting text for bash.
//!
//! Every piece of user text that ends up inside a generated script (the command, `--load-env`,
//! `--env` values, bootstrap arguments) goes through [`shell_quote`], so that quotes, `$`,
//! backticks, newlines and non-ASCII text reach the node exactly as the user wrote them.

/// Quotes `text` as one bash word that expands to exactly `text`.
///
/// Words made only of characters that bash never treats specially are left bare, so that
/// scripts stay readable; everything else is wrapped in single quotes, with each `'` written
/// as `'\''` (close the quote, an escaped quote, reopen).
pub(crate) fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.,:/@%+=".contains(&b));
    if plain {
        return text.to_owned();
    }
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        if c == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(c);
        }
    }
    quoted.push('\'');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const HOSTILE: &[&str] = &[
        "",
        "plain",
        "two words",
        "it's",
        "'",
        "''",
        "\"double\"",
        "$HOME ${HOME} $(id) `id`",
        "a;b && c || d | e > f < g & h",
        "line one\nline two\n",
        "tab\tand\rcarriage",
        "back\\slash \\' \\\"",
        "ünïcødé ✓ 日本語 🚀",
        "*?[a-z]{x,y}~",
        "!history !! ^a^b",
        "-n",
        "--flag=value",
        "#comment",
        "'$(rm -rf /)'",
    ];

    /// Runs bash with the quoted word and returns what it expands to.
    fn bash_expands(quoted: &str) -> String {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("printf '%s' {quoted}"))
            .output()
            .expect("bash runs");
        assert!(out.status.success(), "bash failed for {quoted}");
        String::from_utf8(out.stdout).expect("utf-8")
    }

    #[test]
    fn hostile_strings_survive_bash() {
        for text in HOSTILE {
            assert_eq!(&bash_expands(&shell_quote(text)), text, "for {text:?}");
        }
    }

    #[test]
    fn plain_words_stay_bare() {
        assert_eq!(shell_quote("python"), "python");
        assert_eq!(shell_quote("--num-cpus=4"), "--num-cpus=4");
        assert_eq!(shell_quote("/srv/a.b/c"), "/srv/a.b/c");
    }

    #[test]
    fn single_quote_is_closed_escaped_and_reopened() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
