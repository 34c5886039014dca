//! Errors that decide the exit code.
//!
//! Most failures travel as `anyhow::Error` with context; the few kinds that choose a different
//! exit code are types of their own, found again in `main` by downcasting.

use std::fmt;

/// The user asked for something that cannot work: exit code 2, nothing written, nothing submitted.
#[derive(Debug)]
pub(crate) struct UsageError {
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
}

impl UsageError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UsageError {}

/// A failure that carries a hint for the user, with any exit code.
#[derive(Debug)]
pub(crate) struct Hinted {
    pub(crate) error: anyhow::Error,
    pub(crate) hint: String,
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl std::error::Error for Hinted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// Attaches a hint to any error.
pub(crate) trait WithHint<T> {
    fn hint(self, hint: impl Into<String>) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> WithHint<T> for Result<T, E> {
    fn hint(self, hint: impl Into<String>) -> anyhow::Result<T> {
        self.map_err(|e| {
            anyhow::Error::new(Hinted {
                error: e.into(),
                hint: hint.into(),
            })
        })
    }
}

/// Prints an error as `error: ...`, one `caused by:` line a cause, and the hint if any.
pub(crate) fn report(error: &anyhow::Error) -> String {
    let mut out = format!("error: {error}\n");
    for cause in error.chain().skip(1) {
        out.push_str(&format!("  caused by: {cause}\n"));
    }
    let hint = error.chain().find_map(|e| {
        e.downcast_ref::<UsageError>()
            .and_then(|u| u.hint.clone())
            .or_else(|| e.downcast_ref::<Hinted>().map(|h| h.hint.clone()))
    });
    if let Some(hint) = hint {
        out.push_str(&format!("  hint: {hint}\n"));
    }
    out
}

/// Whether the error is the user's usage mistake (exit code 2).
pub(crate) fn is_usage(error: &anyhow::Error) -> bool {
    error
        .chain()
        .any(|e| e.downcast_ref::<UsageError>().is_some())
}

/// Shows a user's value inside an error message, in backticks, with control characters made
/// visible.
pub(crate) fn show(value: &str) -> String {
    format!("`{}`", value.escape_debug())
}
