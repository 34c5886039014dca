//! The dependency rule of `src/main.rs`, checked on the source: which layer may name which,
//! and, inside the bootstrap, which room may name which.
//!
//! [`edges`] reads every source file once and returns each path a module names into the crate
//! (`crate::`, `super::`, `self::`, a child module's name; in `use` trees, groups included),
//! resolved to the module path it reaches. The rules below are filters over those edges; a
//! layer is a top-level folder or one of the root files (`main.rs`, `cli.rs`, ...).

use std::path::{Path, PathBuf};

use std::sync::LazyLock;

use regex::Regex;

/// A `mod NAME;` or `mod NAME {`: a child module.
static CHILD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\bmod\s+(\w+)\s*[;{]").unwrap());
/// What the scanner reads in order: a `use` statement, an inline module's start, a brace, a path.
static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]*);|\bmod\s+(\w+)\s*\{|\{|\}|\b(\w+(?:::\w+)+)",
    )
    .unwrap()
});
/// The tokens of a `use` tree.
static USE_TOKEN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"::|\{|\}|,|\*|\w+").unwrap());

/// One path a module names: `from` (the module, as `bootstrap::head::start`; the crate root is
/// `main`) names `to` (the resolved path, as `bootstrap::node::say`), written as `written`, in
/// `file` (under `src/`) at `line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edge {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) written: String,
    pub(crate) file: String,
    pub(crate) line: usize,
}

impl Edge {
    /// `file:line` and the path as written, for failure messages.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}:{} names `{}` (that is {})",
            self.file, self.line, self.written, self.to
        )
    }
}

/// Every edge of the crate's source (read once for all the rules).
pub(crate) fn edges() -> Vec<Edge> {
    static ALL: std::sync::OnceLock<Vec<Edge>> = std::sync::OnceLock::new();
    ALL.get_or_init(scan_crate).clone()
}

fn scan_crate() -> Vec<Edge> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    for file in rust_files(&src) {
        let name = file.strip_prefix(&src).unwrap().display().to_string();
        all.extend(edges_of(&name, &std::fs::read_to_string(&file).unwrap()));
    }
    assert!(all.len() > 100, "the scanner found almost nothing: {all:?}");
    all
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The module path of a file under `src/`: `bootstrap/head/mod.rs` is `bootstrap::head`,
/// `main.rs` the crate root (no segment).
fn module_of(file: &str) -> Vec<String> {
    let file = file.trim_end_matches(".rs");
    let mut path: Vec<String> = file.split('/').map(str::to_owned).collect();
    if path.last().is_some_and(|l| l == "mod") || file == "main" {
        path.pop();
    }
    path
}

/// `a::b`, and `main` for the crate root.
fn join(path: &[String]) -> String {
    if path.is_empty() {
        "main".to_owned()
    } else {
        path.join("::")
    }
}

/// The edges of one file's text (`file` under `src/`, which gives its module path).
pub(crate) fn edges_of(file: &str, text: &str) -> Vec<Edge> {
    let code = blank_literals_and_comments(text);
    let module = module_of(file);
    let children: Vec<String> = CHILD
        .captures_iter(&code)
        .map(|c| c[1].to_owned())
        .collect();
    let mut depth = 0usize;
    // Inline modules (`mod tests { .. }`) open: their name and the depth inside them.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut found = Vec::new();
    let (mut line, mut counted) = (1, 0);
    for cap in TOKEN.captures_iter(&code) {
        let whole = cap.get(0).unwrap();
        let at = whole.start();
        line += code[counted..at].matches('\n').count();
        counted = at;
        let here: Vec<String> = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(n, _)| n.clone()))
            .collect();
        let mut add = |written: String, segments: Vec<String>| {
            if let Some(to) = resolve(&here, &children, &segments) {
                found.push(Edge {
                    from: join(&here),
                    to: join(&to),
                    written,
                    file: file.to_owned(),
                    line,
                });
            }
        };
        if let Some(tree) = cap.get(1) {
            for segments in use_paths(tree.as_str()) {
                add(segments.join("::"), segments);
            }
        } else if let Some(name) = cap.get(2) {
            depth += 1;
            inline.push((name.as_str().to_owned(), depth));
        } else if whole.as_str() == "{" {
            depth += 1;
        } else if whole.as_str() == "}" {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
        } else if let Some(path) = cap.get(3)
            && !code[..at].ends_with("::")
        {
            let segments: Vec<String> = path.as_str().split("::").map(str::to_owned).collect();
            add(path.as_str().to_owned(), segments);
        }
    }
    found
}

/// Where `segments`, named in module `here` (whose child modules are `children`), lead; none
/// for a path outside the crate (`std::`, another crate, a name imported by a `use`).
fn resolve(here: &[String], children: &[String], segments: &[String]) -> Option<Vec<String>> {
    let first = segments.first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => {
            let ups = segments.iter().take_while(|s| *s == "super").count();
            let keep = here.len().checked_sub(ups)?;
            let mut to = here[..keep].to_vec();
            to.extend(segments[ups..].iter().cloned());
            return Some(to);
        }
        name if children.iter().any(|c| c == name) => here.to_vec(),
        _ => return None,
    };
    let skip = usize::from(matches!(first.as_str(), "crate" | "self"));
    base.extend(segments[skip..].iter().filter(|s| *s != "self").cloned());
    Some(base)
}

/// The paths of a `use` tree (the text between `use` and `;`): `crate::{a, b::{c, self}}`
/// gives `crate::a`, `crate::b::c` and `crate::b`; `as` names and `*` are left out.
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    let tokens: Vec<&str> = USE_TOKEN.find_iter(tree).map(|m| m.as_str()).collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        at = use_tree(&tokens, at, &[], &mut out);
        at += usize::from(tokens.get(at) == Some(&","));
    }
    out
}

/// Reads one use tree from `tokens[at..]` under `prefix` into `out`; where it ends.
fn use_tree(
    tokens: &[&str],
    mut at: usize,
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut path = prefix.to_vec();
    loop {
        match tokens.get(at).copied() {
            Some("{") => {
                at += 1;
                while tokens.get(at).is_some_and(|t| *t != "}") {
                    at = use_tree(tokens, at, &path, out);
                    at += usize::from(tokens.get(at) == Some(&","));
                }
                return at + 1;
            }
            Some("*") => {
                out.push(path);
                return at + 1;
            }
            Some("::") => at += 1,
            Some("as") => {
                out.push(path);
                return at + 2;
            }
            Some(t) if t != "," && t != "}" => {
                path.push(t.to_owned());
                at += 1;
            }
            _ => {
                out.push(path);
                return at;
            }
        }
    }
}

/// The text with string and char literals and comments blanked (newlines kept), so that
/// neither a message nor a doc comment counts as a use, and braces in them do not count.
fn blank_literals_and_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, from: &[char]| {
        out.extend(from.iter().map(|c| if *c == '\n' { '\n' } else { ' ' }));
    };
    while i < chars.len() {
        let rest = &chars[i..];
        let end = if rest.starts_with(&['/', '/']) {
            rest.iter().position(|c| *c == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            block_comment_len(rest)
        } else if let Some(len) = raw_string_len(rest)
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
        {
            len
        } else if rest[0] == '"' {
            string_len(rest)
        } else if rest[0] == '\'' && rest.get(1) == Some(&'\\') {
            2 + rest[2..].iter().position(|c| *c == '\'').unwrap_or(0) + 1
        } else if rest[0] == '\'' && rest.get(2) == Some(&'\'') {
            3
        } else {
            out.push(rest[0]);
            i += 1;
            continue;
        };
        blank(&mut out, &rest[..end]);
        i += end;
    }
    out
}

fn block_comment_len(rest: &[char]) -> usize {
    let (mut depth, mut i) = (0, 0);
    while i < rest.len() {
        if rest[i..].starts_with(&['/', '*']) {
            depth += 1;
            i += 2;
        } else if rest[i..].starts_with(&['*', '/']) {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    rest.len()
}

/// `"..."` with its escapes.
fn string_len(rest: &[char]) -> usize {
    let mut i = 1;
    while i < rest.len() {
        match rest[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    rest.len()
}

/// `r"..."`, `r#"..."#`, `br"..."` (a word that merely ends in `r` is not one).
fn raw_string_len(rest: &[char]) -> Option<usize> {
    let start = if rest.starts_with(&['b', 'r']) { 2 } else { 1 };
    if rest.first() != Some(&'r') && start == 1 {
        return None;
    }
    let hashes = rest[start..].iter().take_while(|c| **c == '#').count();
    if rest.get(start + hashes) != Some(&'"') {
        return None;
    }
    let close: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let body = start + hashes + 1;
    let len = (body..rest.len()).find(|i| rest[*i..].starts_with(&close))?;
    Some(len + close.len())
}

/// The layer of a module path: its top-level folder, or the root file it is.
fn layer(path: &str) -> &str {
    path.split("::").next().unwrap_or(path)
}

/// Whether `path` is `module` or inside it.
fn within(path: &str, module: &str) -> bool {
    path == module || path.starts_with(&format!("{module}::"))
}

fn assert_only(from: &str, allowed: &[&str]) {
    let bad: Vec<String> = edges()
        .into_iter()
        .filter(|e| layer(&e.from) == from)
        .filter(|e| layer(&e.to) != from && !allowed.contains(&layer(&e.to)))
        .map(|e| e.describe())
        .collect();
    assert!(
        bad.is_empty(),
        "{from}/ may use only {allowed:?}:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_bootstrap_uses_only_the_layers_it_shares_with_the_launcher() {
    assert_only(
        "bootstrap",
        &["handoff", "containers", "ray", "slurm", "sys", "error"],
    );
}

#[test]
fn the_shared_layers_stay_below_the_login_side() {
    assert_only("handoff", &["containers", "sys", "error"]);
    assert_only("containers", &["slurm", "sys", "error"]);
    assert_only("slurm", &["sys", "error"]);
    assert_only("sys", &["error"]);
    assert_only("ray", &["sys", "error"]);
}

#[test]
fn the_login_side_never_reaches_into_the_bootstrap() {
    let bad: Vec<String> = edges()
        .into_iter()
        .filter(|e| ["launch", "runs", "clusters"].contains(&layer(&e.from)))
        .filter(|e| ["bootstrap", "commands"].contains(&layer(&e.to)))
        .map(|e| e.describe())
        .collect();
    assert!(
        bad.is_empty(),
        "the login side names the bootstrap or commands:\n{}",
        bad.join("\n")
    );
}

/// The entries of the roles that `bootstrap/mod.rs` dispatches to, the only paths into
/// `head/` and `worker/` from outside them.
const DISPATCH: &[&str] = &[
    "bootstrap::head::run",
    "bootstrap::head::watchdog",
    "bootstrap::worker::run",
    "bootstrap::worker::run_elastic",
];

#[test]
fn the_bootstraps_roles_are_named_only_by_their_dispatch() {
    let all = edges();
    let mut bad = Vec::new();
    for room in ["bootstrap::head", "bootstrap::worker"] {
        for e in all
            .iter()
            .filter(|e| within(&e.to, room) && !within(&e.from, room))
        {
            if !(e.from == "bootstrap" && DISPATCH.contains(&e.to.as_str())) {
                bad.push(format!("outside {room}: {}", e.describe()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "only bootstrap/mod.rs names head/ and worker/, and only their entries:\n{}",
        bad.join("\n")
    );
    for entry in DISPATCH {
        assert!(
            all.iter().any(|e| e.from == "bootstrap" && e.to == *entry),
            "the dispatch to {entry} was not found: the scanner misses it"
        );
    }
}

#[test]
fn the_bootstraps_dispatcher_holds_nothing_its_children_import_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bootstrap");
    let children: Vec<String> = rust_files(&src)
        .iter()
        .filter_map(|f| f.strip_prefix(&src).ok()?.components().next())
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    let bad: Vec<String> = edges()
        .into_iter()
        .filter(|e| within(&e.from, "bootstrap") && e.from != "bootstrap")
        .filter(|e| {
            let mut parts = e.to.split("::");
            parts.next() == Some("bootstrap")
                && parts
                    .next()
                    .is_some_and(|n| !children.iter().any(|c| c == n))
        })
        .map(|e| e.describe())
        .collect();
    assert!(
        bad.is_empty(),
        "bootstrap/mod.rs only dispatches; what every node shares is in node.rs:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_scanner_finds_grouped_imports_and_relative_paths() {
    let sample = r#"
        use crate::{error, handoff::{cluster::ClusterOptions, self}};
        use super::super::node::say;
        use self::inner::Thing;
        mod inner;
        fn f() {
            let _ = "crate::never::counted {";
            // crate::never::counted
            super::super::worker::run();
            inner::go();
        }
        #[cfg(test)]
        mod tests {
            use super::*;
            use super::f as g;
        }
    "#;
    let found: Vec<(String, String, usize)> = edges_of("bootstrap/head/start.rs", sample)
        .into_iter()
        .map(|e| (e.from, e.to, e.line))
        .collect();
    let here = "bootstrap::head::start";
    let expected = [
        (here, "error", 2),
        (here, "handoff::cluster::ClusterOptions", 2),
        (here, "handoff", 2),
        (here, "bootstrap::node::say", 3),
        (here, "bootstrap::head::start::inner::Thing", 4),
        (here, "bootstrap::worker::run", 9),
        (here, "bootstrap::head::start::inner::go", 10),
        ("bootstrap::head::start::tests", here, 14),
        (
            "bootstrap::head::start::tests",
            "bootstrap::head::start::f",
            15,
        ),
    ];
    let expected: Vec<(String, String, usize)> = expected
        .iter()
        .map(|(f, t, l)| ((*f).to_owned(), (*t).to_owned(), *l))
        .collect();
    assert_eq!(found, expected);
    let root = edges_of("main.rs", "mod cli;\nfn main() { cli::parse(); }\n");
    assert_eq!(root[0].from, "main");
    assert_eq!(root[0].to, "cli::parse");
}

#[test]
fn the_launcher_knows_nothing_of_what_follows_a_run() {
    assert_only(
        "launch",
        &[
            "handoff",
            "containers",
            "slurm",
            "sys",
            "error",
            "env_vars",
            "printer",
            "state_dir",
        ],
    );
}

/// Layers that `from` names among `forbidden`, as failure lines.
fn named(from: &[&str], forbidden: &[&str]) -> Vec<String> {
    edges()
        .into_iter()
        .filter(|e| from.contains(&layer(&e.from)) && forbidden.contains(&layer(&e.to)))
        .map(|e| e.describe())
        .collect()
}

#[test]
fn runs_know_nothing_of_clusters() {
    let bad = named(&["runs"], &["clusters", "cli", "commands"]);
    assert!(bad.is_empty(), "runs/:\n{}", bad.join("\n"));
}

/// The clap structs stay at the top: only `main.rs` and `commands/` (which resolve them into
/// each command's settings) name `cli`, so no layer below knows the command line.
#[test]
fn only_main_and_the_commands_use_the_command_line() {
    let bad: Vec<String> = edges()
        .into_iter()
        .filter(|e| layer(&e.to) == "cli" && !["main", "cli", "commands"].contains(&layer(&e.from)))
        .map(|e| e.describe())
        .collect();
    assert!(bad.is_empty(), "these use crate::cli:\n{}", bad.join("\n"));
}

/// clap is the command line's: only `main.rs`, `cli/` and `commands/` use it, besides the
/// bootstrap's own flags in `handoff/`, the wire format between the script and the nodes
/// (serializer and parser together, with a round-trip test).
#[test]
fn only_the_command_line_and_the_bootstraps_wire_format_use_clap() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wire = [
        "handoff/bootstrap_args.rs",
        "handoff/cluster.rs",
        "handoff/container.rs",
        "containers/mod.rs",
    ];
    let uses_clap = Regex::new(r"(?m)^\s*use clap\b|\bclap::").unwrap();
    let mut users = Vec::new();
    for file in rust_files(&src) {
        let name = file.strip_prefix(&src).unwrap().display().to_string();
        let code = blank_literals_and_comments(&std::fs::read_to_string(&file).unwrap());
        if uses_clap.is_match(&code) {
            users.push(name);
        }
    }
    assert!(
        users.iter().any(|f| f == "cli/mod.rs"),
        "the scan finds clap: {users:?}"
    );
    let bad: Vec<&String> = users
        .iter()
        .filter(|f| {
            !(f.as_str() == "main.rs"
                || f.starts_with("cli/")
                || f.starts_with("commands/")
                || wire.contains(&f.as_str()))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "below commands/, clap is only the bootstrap's wire format: {bad:?}"
    );
}
