//! The one wrapper around Tera: built-in or user templates, the `shell_quote` filter, and
//! readable errors that name the template and line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use serde::{Deserialize, Serialize};
use tera::{Context, Tera, Value};

use crate::sys::quote::shell_quote;

/// The built-in sbatch template, compiled into the binary.
pub(crate) const BUILTIN_SBATCH: &str = include_str!("../../templates/sbatch.sh.tera");
const BUILTIN_NAME: &str = "sbatch.sh.tera (built-in)";

#[derive(Debug, thiserror::Error)]
pub(crate) enum RenderError {
    #[error("cannot read template `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("template `{name}` does not parse: {message}")]
    Parse { name: String, message: String },
    #[error("template `{name}` failed to render: {message}")]
    Render { name: String, message: String },
}

/// A template of the user's own (`--template`), read once when the launch is resolved: the
/// text rendered is the text a run's record keeps, so `launch --again` renders that text and
/// never reads the file again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct UserTemplate {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
}

impl UserTemplate {
    pub(crate) fn read(path: &Path) -> Result<Self, RenderError> {
        let text = std::fs::read_to_string(path).map_err(|source| RenderError::Read {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self {
            path: path.to_owned(),
            text,
        })
    }
}

/// A parsed template, ready to render.
pub(crate) struct Template {
    tera: Tera,
    name: String,
}

impl Template {
    pub(crate) fn builtin() -> Self {
        Self::parse(BUILTIN_NAME, BUILTIN_SBATCH).expect("the built-in template parses")
    }

    /// A template of the user's own, as read.
    pub(crate) fn of_user(template: &UserTemplate) -> Result<Self, RenderError> {
        Self::parse(&template.path.display().to_string(), &template.text)
    }

    fn parse(name: &str, text: &str) -> Result<Self, RenderError> {
        let mut tera = Tera::default();
        tera.autoescape_on(vec![]);
        tera.register_filter("shell_quote", shell_quote_filter);
        tera.add_raw_template(name, text)
            .map_err(|e| RenderError::Parse {
                name: name.to_owned(),
                message: flatten(&e),
            })?;
        Ok(Self {
            tera,
            name: name.to_owned(),
        })
    }

    pub(crate) fn render(&self, context: &impl Serialize) -> Result<String, RenderError> {
        let render_error = |e: tera::Error| RenderError::Render {
            name: self.name.clone(),
            message: flatten(&e),
        };
        let context = Context::from_serialize(context).map_err(render_error)?;
        self.tera.render(&self.name, &context).map_err(render_error)
    }
}

/// Tera nests its errors; one line with every level reads better.
fn flatten(error: &tera::Error) -> String {
    let mut parts = Vec::new();
    let mut current: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = current {
        let text = e.to_string();
        if !text.starts_with("Failed to parse") && !text.is_empty() {
            parts.push(readable_location(&text));
        }
        current = e.source();
    }
    if parts.is_empty() {
        error.to_string()
    } else {
        parts.join(": ")
    }
}

/// Tera's parser reports `--> 5:1 | ... = expected tag`; say `line 5, column 1: expected tag`.
fn readable_location(text: &str) -> String {
    static LOCATION: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"-->\s*(\d+):(\d+)").expect("valid regex"));
    match LOCATION.captures(text) {
        Some(c) => {
            let what = text
                .lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix("= "))
                .unwrap_or("syntax error");
            format!("line {}, column {}: {what}", &c[1], &c[2])
        }
        None => text.trim().replace('\n', " "),
    }
}

fn shell_quote_filter(value: &Value, _: &HashMap<String, Value>) -> tera::Result<Value> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => {
            return Err(tera::Error::msg(format!(
                "shell_quote takes text, not {other}"
            )));
        }
    };
    Ok(Value::String(shell_quote(&text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_error_names_template_and_line() {
        let err = Template::parse("mine.sh", "line one\n{% if x %}\nunclosed\n")
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(text.contains("mine.sh"), "{text}");
        assert!(text.contains("line 4, column 1: expected"), "{text}");
    }

    #[test]
    fn render_error_names_the_missing_variable() {
        let t = Template::parse("t", "{{ nope }}").unwrap();
        let err = t.render(&serde_json::json!({})).unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn shell_quote_filter_quotes() {
        let t = Template::parse("t", "echo {{ v | shell_quote }}").unwrap();
        let out = t.render(&serde_json::json!({"v": "it's $x"})).unwrap();
        assert_eq!(out, r"echo 'it'\''s $x'");
    }
}
