//! Where output goes: results to stdout, progress and messages to stderr (unless `--quiet`).

use std::io::{IsTerminal, Write};

#[derive(Debug, Clone, Copy)]
pub(crate) struct Printer {
    quiet: bool,
}

impl Printer {
    pub(crate) fn new(quiet: bool) -> Self {
        Self { quiet }
    }

    /// A result: job id, JSON, the rendered script. Always printed.
    pub(crate) fn result(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
    }

    /// Progress for a person, on stderr.
    pub(crate) fn info(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    /// A warning, on stderr, even with --quiet.
    pub(crate) fn warn(&self, text: &str) {
        eprintln!("warning: {text}");
    }

    /// Whether a spinner may be drawn: a terminal on stderr, not quiet, and no NO_COLOR.
    pub(crate) fn fancy(&self) -> bool {
        !self.quiet
            && std::io::stderr().is_terminal()
            && std::env::var_os(crate::env_vars::NO_COLOR).is_none()
    }
}
