//! The examples of README.md and docs/*.md: found, and checked to be marked.
//!
//! Every shell example (a fenced `sh`, `bash`, `shell` or `console` block) sits right under a
//! marker line: `<!-- doc-test -->` (run by `e2e_doc_examples` against the test cluster) or
//! `<!-- doc-test not-run: REASON -->` (what the lab lacks: GPUs, the internet, a site's file).
//! A marker may also stand over a table: its `example` column is then run, row by row. In a
//! `console` block, `$ ` starts a command (a line ending in `\` continues it) and the lines
//! under it are what it prints: see [`output_matches`]. A command ending in `# until Ctrl-C`
//! must still be running after a while, and is then interrupted.

use std::path::{Path, PathBuf};

/// How an example is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A shell script, run with `set -e`: it must exit 0.
    Sh,
    /// Commands and what they print.
    Console,
    /// The `example` column of a table, one command a row, run as a script.
    Table,
}

/// One example: where it is, how it is written, whether it runs, and its text.
#[derive(Debug, Clone)]
pub(crate) struct Example {
    pub(crate) file: PathBuf,
    pub(crate) line: usize,
    pub(crate) kind: Kind,
    /// `None`: run it; `Some(reason)`: not run, for that reason.
    pub(crate) not_run: Option<String>,
    pub(crate) body: String,
}

impl Example {
    pub(crate) fn place(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

/// One `$ ` command of a console example and what it prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) command: String,
    pub(crate) expected: Vec<String>,
}

const MARKER: &str = "<!-- doc-test";
const SHELLS: [&str; 4] = ["sh", "bash", "shell", "console"];

/// The files whose examples are checked: README.md and every docs/*.md, sorted.
pub(crate) fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files.insert(0, root.join("README.md"));
    files
}

/// The marker on a line, if it is one: `Some(None)` to run, `Some(Some(reason))` not to.
fn marker(line: &str) -> Option<Option<String>> {
    let rest = line
        .trim()
        .strip_prefix(MARKER)?
        .strip_suffix("-->")?
        .trim();
    match rest.strip_prefix("not-run:") {
        Some(reason) => Some(Some(reason.trim().to_owned())),
        None if rest.is_empty() => Some(None),
        None => Some(Some(String::new())),
    }
}

/// The examples of one markdown text, and the problems found: an unmarked shell block, a
/// not-run marker without a reason, a marker over no example.
pub(crate) fn examples(file: &Path, text: &str) -> (Vec<Example>, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let (mut found, mut problems) = (Vec::new(), Vec::new());
    let mut pending: Option<(usize, Option<String>)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let place = format!("{}:{}", file.display(), i + 1);
        if let Some(m) = marker(line) {
            if m.as_deref() == Some("") {
                problems.push(format!("{place}: a not-run marker needs `not-run: REASON`"));
            }
            pending = Some((i + 1, m));
            i += 1;
            continue;
        }
        let mark = pending.take();
        if let Some((at, _)) = &mark
            && !line.trim_start().starts_with("```")
            && !line.starts_with('|')
        {
            problems.push(format!(
                "{}:{at}: a marker must stand right over a shell block or a table",
                file.display()
            ));
        }
        if let Some(info) = line.trim_start().strip_prefix("```") {
            let indent = line.len() - line.trim_start().len();
            let end = (i + 1..lines.len())
                .find(|&k| lines[k].trim() == "```")
                .unwrap_or(lines.len());
            let body: Vec<&str> = lines[i + 1..end]
                .iter()
                .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
                .collect();
            let lang = info.split_whitespace().next().unwrap_or("");
            if SHELLS.contains(&lang) {
                match mark {
                    Some((_, not_run)) => found.push(Example {
                        file: file.to_owned(),
                        line: i + 1,
                        kind: if lang == "console" {
                            Kind::Console
                        } else {
                            Kind::Sh
                        },
                        not_run,
                        body: body.join("\n") + "\n",
                    }),
                    None => problems.push(format!(
                        "{place}: a `{lang}` block without a marker (`{MARKER} -->` or \
                         `{MARKER} not-run: REASON -->` on the line above)"
                    )),
                }
            }
            i = end + 1;
            continue;
        }
        if line.starts_with('|') {
            let end = (i..lines.len())
                .find(|&k| !lines[k].starts_with('|'))
                .unwrap_or(lines.len());
            if let Some((_, not_run)) = mark {
                found.push(table_example(
                    file,
                    i + 1,
                    &lines[i..end],
                    not_run,
                    &mut problems,
                ));
            }
            i = end;
            continue;
        }
        i += 1;
    }
    (found, problems)
}

/// The `example` column of a marked table, as a script of one command a row.
fn table_example(
    file: &Path,
    line: usize,
    rows: &[&str],
    not_run: Option<String>,
    problems: &mut Vec<String>,
) -> Example {
    let cells = |row: &str| -> Vec<String> {
        row.trim()
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_owned())
            .collect()
    };
    let header = cells(rows[0]);
    let column = header.iter().position(|h| h == "example");
    if column.is_none() {
        problems.push(format!(
            "{}:{line}: a marked table needs an `example` column",
            file.display()
        ));
    }
    let body: String = rows
        .iter()
        .skip(2)
        .filter_map(|row| cells(row).get(column?).cloned())
        .map(|cell| format!("{}\n", cell.trim_matches('`')))
        .collect();
    Example {
        file: file.to_owned(),
        line,
        kind: Kind::Table,
        not_run,
        body,
    }
}

/// The commands of a console example, each with the lines it is shown to print.
pub(crate) fn steps(body: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut continued = false;
    for line in body.lines() {
        if continued {
            let step = steps.last_mut().unwrap();
            step.command.push('\n');
            step.command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: command.to_owned(),
                expected: Vec::new(),
            });
            continued = command.ends_with('\\');
        } else if let Some(step) = steps.last_mut() {
            step.expected.push(line.to_owned());
        }
    }
    steps
}

/// Whether what a command printed matches what the docs show it print. Each shown line must
/// be found among the printed lines, in order (others may come between); `...` stands for
/// lines left out, `[..]` for any text within a line, every number matches any number (job
/// ids, times, ports) and a run of spaces any run of spaces (a table's column widths).
pub(crate) fn output_matches(expected: &[String], actual: &str) -> Result<(), String> {
    let numbers = regex::Regex::new(r"[0-9]+").unwrap();
    let spaces = regex::Regex::new(r" +").unwrap();
    let pattern = |line: &str| {
        let parts: Vec<String> = line
            .split("[..]")
            .map(|part| {
                let escaped = regex::escape(part);
                let part = numbers.replace_all(&escaped, "[0-9]+");
                spaces.replace_all(&part, " +").into_owned()
            })
            .collect();
        regex::Regex::new(&format!("^{}$", parts.join(".*"))).unwrap()
    };
    let mut printed = actual.lines();
    for line in expected.iter().filter(|l| l.trim() != "...") {
        let want = pattern(line.trim_end());
        if !printed.any(|got| want.is_match(got.trim_end())) {
            return Err(format!("no line `{line}` (in this order) in:\n{actual}"));
        }
    }
    Ok(())
}

#[test]
fn every_shell_example_of_the_docs_is_marked_to_run_or_says_why_not() {
    let mut problems = Vec::new();
    let mut run = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let (found, mut p) = examples(&file, &text);
        problems.append(&mut p);
        run += found.iter().filter(|e| e.not_run.is_none()).count();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(run >= 9, "only {run} examples of the docs are run");
}

#[test]
fn the_readme_runs_an_example_of_every_command() {
    let readme = doc_files().remove(0);
    let (found, _) = examples(&readme, &std::fs::read_to_string(&readme).unwrap());
    let run: String = found
        .iter()
        .filter(|e| e.not_run.is_none())
        .map(|e| e.body.as_str())
        .collect();
    let out = crate::harness::rayslurm(["--help"]).output();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let commands = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help");
    for command in commands {
        assert!(
            run.contains(&format!("rayslurm {command} ")),
            "no example of `rayslurm {command}` is run in README.md"
        );
    }
}

/// The README's first example is not run (its marker says why): it is the launch of "A first
/// run there", which is run, but for the experiment's name. So that it stays one that works,
/// it must stay that launch.
#[test]
fn the_readmes_first_example_is_the_launch_of_a_first_run_there() {
    let readme = doc_files().remove(0);
    let (found, _) = examples(&readme, &std::fs::read_to_string(&readme).unwrap());
    let first = &found[0];
    assert!(
        first.not_run.is_some(),
        "{}: run it, or drop this test",
        first.place()
    );
    let one_line = first.body.replace("\\\n", " ");
    let first_launch = one_line.split_whitespace().collect::<Vec<_>>().join(" ");
    let there = found
        .iter()
        .find(|e| e.not_run.is_none() && e.body.contains("--exp-name hello"))
        .expect("A first run there's example is run");
    let launch = &steps(&there.body)[0].command;
    assert_eq!(
        first_launch.replace("--exp-name sweep", "--exp-name hello"),
        launch.split_whitespace().collect::<Vec<_>>().join(" "),
        "{}: the README's first example is not run, as it was the launch of {} under another \
         name; run it (a part of README_PARTS in e2e_doc_examples.rs), or keep it that launch",
        first.place(),
        there.place()
    );
}

#[test]
fn markers_blocks_and_tables_are_found() {
    let text = "<!-- doc-test -->\n```console\n$ rayslurm a \\\n  b\nout 1\n...\n```\n\
                ```sh\nx\n```\n<!-- doc-test not-run: needs GPUs -->\n  ```sh\n  y\n  ```\n\
                <!-- doc-test -->\n| c | example |\n| --- | --- |\n| x | `rayslurm q` |\n\
                <!-- doc-test not-run: -->\n\ntext\n";
    let (found, problems) = examples(Path::new("f.md"), text);
    let kinds: Vec<_> = found.iter().map(|e| (e.kind.clone(), e.line)).collect();
    assert_eq!(
        kinds,
        [(Kind::Console, 2), (Kind::Sh, 12), (Kind::Table, 16)]
    );
    assert_eq!(found[1].not_run.as_deref(), Some("needs GPUs"));
    assert_eq!(found[1].body, "y\n");
    assert_eq!(found[2].body, "rayslurm q\n");
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].starts_with("f.md:8: a `sh` block without a marker"));
    assert!(problems[1].starts_with("f.md:19: a not-run marker needs"));
    assert!(problems[2].starts_with("f.md:19: a marker must stand right over"));
    let steps = steps(&found[0].body);
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].command, "rayslurm a \\\n  b");
    assert_eq!(steps[0].expected, ["out 1", "..."]);
}

#[test]
fn shown_output_matches_numbers_wildcards_and_left_out_lines() {
    let shown = |lines: &[&str]| lines.iter().map(|l| (*l).to_owned()).collect::<Vec<_>>();
    let got = "submitted job 4712 (x)\n  log: /srv/a/x_1124-2301.log\ntotal = 3 from 2 nodes\n";
    let ok = shown(&["submitted job 77 (x)", "...", "total = 3 from 2 nodes"]);
    assert_eq!(output_matches(&ok, got), Ok(()));
    assert_eq!(output_matches(&shown(&["  log: [..].log"]), got), Ok(()));
    assert_eq!(
        output_matches(&shown(&["total =   3 from 2    nodes"]), got),
        Ok(())
    );
    assert!(
        output_matches(
            &shown(&["total = 3 from 2 nodes", "submitted job 1 (x)"]),
            got
        )
        .is_err()
    );
    assert!(output_matches(&shown(&["submitted job 1 (y)"]), got).is_err());
}
