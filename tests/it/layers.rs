//! The layer rule is the table in `src/main.rs`'s `//!` doc (`| folder | may use |`), read here
//! and held against every path the source names: in `use` trees (grouped, `pub use` included)
//! or inline, from `crate::`, `super::`, `self::`, a child module or a crate the table names.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

/// Comments and literals (blanked first); a `use` tree or a path; a child module; a `use` group;
/// what a `use` path drops (`as` names, spaces, `::*`, `::self`).
static RE: LazyLock<[Regex; 5]> = LazyLock::new(|| {
    [
        r###"//.*|/\*[\s\S]*?\*/|r#"[\s\S]*?"#|r"[^"]*"|"(?:[^"\\]|\\[\s\S])*"|'(?:\\.[^'\n]*|[^'\\\n])'"###,
        r"\buse\s+([^;]*);|\b(\w+(?:::\w+)+)",
        r"\bmod\s+(\w+)\s*([;{])",
        r"(\w+(?:::\w+)*)::\{([^{}]*)\}",
        r"\s+as\s+\w+|\s|::\*|::self\b",
    ]
    .map(|re| Regex::new(re).unwrap())
});

/// A row: its folder (as a module path), the names in its cell, the row as written.
struct Row {
    folder: String,
    uses: Vec<String>,
    text: String,
}

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// `bootstrap/head/` is `bootstrap::head`, `bootstrap/mod.rs` is `bootstrap`, `main.rs` `main`.
fn module(path: &str) -> String {
    let path = path.trim_end_matches('/').trim_end_matches(".rs");
    path.trim_end_matches("/mod").replace('/', "::")
}

fn within(path: &str, module: &str) -> bool {
    path == module || path.starts_with(&format!("{module}::"))
}

fn table() -> Vec<Row> {
    let doc = std::fs::read_to_string(Path::new(SRC).join("main.rs")).unwrap();
    let mut rows = Vec::new();
    for text in doc.lines().filter_map(|l| l.strip_prefix("//! ")) {
        if let Some((folder, cell)) = text.strip_prefix("| `").and_then(|t| t.split_once('|')) {
            let folder = module(folder.trim().trim_end_matches('`'));
            let uses = cell.split('`').skip(1).step_by(2).map(module).collect();
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            rows.push(Row { folder, uses, text });
        }
    }
    rows
}

/// The paths one file (under `src/`) names: (its module, where the path leads, as written, line).
fn paths_of(file: &str, text: &str, crates: &[&str]) -> Vec<(String, String, String, usize)> {
    let code = RE[0].replace_all(text, |c: &regex::Captures| c[0].replace(|c| c != '\n', " "));
    let (mut children, mut blocks) = (Vec::new(), Vec::new());
    for child in RE[2].captures_iter(&code) {
        let name = child.get(1).unwrap().as_str();
        let (at, mut depth) = (child.get(2).unwrap().start(), 0);
        let end = code[at..].find(|c| {
            depth += i32::from(c == '{') - i32::from(c == '}');
            depth == 0
        });
        children.push(name);
        blocks.push((at, at + end.unwrap_or(0), name));
    }
    let root = module(file.strip_prefix("main.rs").unwrap_or(file));
    let root: Vec<&str> = root.split("::").filter(|m| !m.is_empty()).collect();
    let mut found = Vec::new();
    for cap in RE[1].captures_iter(&code) {
        let (at, mut here) = (cap.get(0).unwrap().start(), root.clone());
        here.extend(blocks.iter().filter(|b| b.0 < at && at < b.1).map(|b| b.2));
        let paths = match cap.get(1) {
            Some(tree) => use_paths(tree.as_str()),
            None => vec![cap[2].to_owned()],
        };
        for written in paths {
            if let Some(to) = resolve(&here, &children, crates, &written) {
                let line = code[..at].matches('\n').count() + 1;
                found.push((here.join("::"), to, written, line));
            }
        }
    }
    found
}

/// Where `path`, named in module `here` whose child modules are `children`, leads; none for a
/// path outside the crate (`std::`, a name a `use` brought in) unless into one of `crates`.
fn resolve(here: &[&str], children: &[&str], crates: &[&str], path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    let ups = parts.iter().take_while(|s| **s == "super").count();
    let (keep, skip) = match parts[0] {
        "crate" => (0, 1),
        "self" => (here.len(), 1),
        "super" => (here.len().checked_sub(ups)?, ups),
        name if crates.contains(&name) => (0, 0),
        name if children.contains(&name) => (here.len(), 0),
        _ => return None,
    };
    Some([&here[..keep], &parts[skip..]].concat().join("::"))
}

/// The paths of a `use` tree: `a::{b as c, d::{self, *}}` gives `a::b`, `a::d` and `a::d`.
fn use_paths(tree: &str) -> Vec<String> {
    let mut tree = RE[4].replace_all(tree, "").into_owned();
    while let Some(group) = RE[3].captures(&tree) {
        let items = group[2].split(',').filter(|item| !item.is_empty());
        let items: Vec<String> = items.map(|item| format!("{}::{item}", &group[1])).collect();
        tree = tree.replacen(&group[0], &items.join(","), 1);
    }
    let tree = RE[4].replace_all(&tree, "");
    tree.split(',').map(str::to_owned).collect()
}

/// What breaks the table, one line each: `file:line`, the path as written, the row it breaks.
fn breaks() -> Vec<String> {
    let rows = table();
    let folders: Vec<&str> = rows.iter().map(|r| r.folder.as_str()).collect();
    let names = rows.iter().flat_map(|r| &r.uses).map(String::as_str);
    let crates: Vec<&str> = names.filter(|n| !folders.contains(n)).collect();
    let rooms: Vec<&Row> = rows.iter().filter(|r| r.folder.contains("::")).collect();
    let (mut bad, mut seen) = (Vec::new(), Vec::new());
    for path in rust_files(Path::new(SRC)) {
        let file = path.strip_prefix(SRC).unwrap().display().to_string();
        let layer = module(file.split('/').next().unwrap());
        let Some(row) = rows.iter().find(|r| r.folder == layer) else {
            bad.push(format!("src/{layer} has no row in the table"));
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        for (from, to, written, line) in paths_of(&file, &text, &crates) {
            let says = format!("src/{file}:{line} names `{written}` ({to})");
            let top = to.split("::").next().unwrap();
            let every = row.text.contains("| every layer");
            if !every && top != layer && !row.uses.iter().any(|n| n == top) {
                bad.push(format!("{says}, against the row {}", row.text));
            }
            for room in &rooms {
                let (namer, inside) = (&room.uses[0], within(&to, &room.folder));
                let deep = to.matches("::").count() > room.folder.matches("::").count() + 1;
                let entry = inside && from == *namer && !deep;
                seen.extend(entry.then(|| room.folder.clone()));
                let own = to.strip_prefix(&format!("{namer}::")).unwrap_or(namer);
                let kid = Path::new(SRC).join(namer.replace("::", "/"));
                let kid = kid.join(own.split("::").next().unwrap());
                let own = own != namer && !kid.exists() && !kid.with_extension("rs").exists();
                if inside && !entry && !within(&from, &room.folder) {
                    bad.push(format!("{says}, against the row {}", room.text));
                } else if own && within(&from, namer) && from != *namer {
                    bad.push(format!("{says}: {namer} names rooms, so only dispatches"));
                }
            }
        }
        seen.push(layer);
    }
    for row in rows.iter().filter(|r| !seen.contains(&r.folder)) {
        bad.push(format!("the scan finds nothing for the row {}", row.text));
    }
    bad.dedup();
    bad
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let paths = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path());
    let (dirs, mut files): (Vec<_>, Vec<_>) = paths.partition(|p| p.is_dir());
    files.retain(|f| f.extension().is_some_and(|e| e == "rs"));
    files.extend(dirs.iter().flat_map(|d| rust_files(d)));
    files
}

#[test]
fn every_path_the_source_names_keeps_to_the_table_in_main_rs() {
    let bad = breaks().join("\n");
    assert!(bad.is_empty(), "against src/main.rs's table:\n{bad}");
}

#[test]
fn the_scan_reads_every_form_of_path() {
    let sample = "pub use crate::{error, handoff::{cluster::Options as O, self}};
        use super::super::node::say; // use crate::never;
        mod inner; use self::inner::{Thing, *};
        fn f() -> &'static str {
            super::super::worker::run(crate::sys::quote(clap::Arg::new('{')));
            inner::go(\"crate::never {\")
        }
        mod tests { use super::*; }";
    let found = paths_of("bootstrap/head/start.rs", sample, &["clap"]);
    let found: Vec<String> = found.iter().map(|f| format!("{} {}", f.3, f.1)).collect();
    let expected = "1 error|1 handoff::cluster::Options|1 handoff|2 bootstrap::node::say|\
        3 @::inner::Thing|3 @::inner|5 bootstrap::worker::run|5 sys::quote|5 clap::Arg::new|\
        6 @::inner::go|8 @";
    let expected = expected.replace('@', "bootstrap::head::start");
    assert_eq!(found.join("|"), expected);
}
