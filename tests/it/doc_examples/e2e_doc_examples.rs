//! The examples of README.md and docs/*.md, run against the test cluster as a user would type
//! them (see `marks.rs` for how they are marked and read).
//!
//! Each file's examples run in order, in one fresh project directory on the shared
//! filesystem (also its HOME; README.md's in two tests of their own, side by side), as a
//! user who has done the README's setup: `rayslurm` on PATH, a copy of `examples/`, `venv`
//! (Ray) and `jax-venv` (JAX) in the directory, and, as site defaults in the environment, the
//! lab's partition, a short time limit and a small object store. Jobs an example leaves behind
//! are cancelled at the end, whatever happened.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use super::marks::{Example, Kind, doc_files, examples, output_matches, steps};
use crate::harness::{Lab, bin, is_ended_state, lab, text, this_test, unique_name, wait_within};

/// A project directory for one file's examples and the state directory of its runs.
struct Project {
    dir: PathBuf,
    state: PathBuf,
}

impl Project {
    fn new(lab: &Lab, name: &str) -> Project {
        let dir = lab.workdir(name);
        let state = lab
            .shared
            .join("tests")
            .join(unique_name(&format!("{name}-state")));
        std::fs::create_dir_all(&state).unwrap();
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let copied = Command::new("cp")
            .arg("-r")
            .arg(repo.join("examples"))
            .arg(&dir)
            .status()
            .unwrap();
        assert!(copied.success());
        std::os::unix::fs::symlink(&lab.venv, dir.join("venv")).unwrap();
        std::os::unix::fs::symlink(&lab.jax_venv, dir.join("jax-venv")).unwrap();
        Project { dir, state }
    }

    /// `bash -c SCRIPT` in the project, as the user the examples are written for.
    fn bash(&self, script: &str, limit: Duration) -> Output {
        // A small object store for Ray's examples; `--per-node` refuses it, even as a default
        // from the environment, so examples with `--per-node` go without.
        let store = if script.contains("--per-node") {
            None
        } else {
            Some("100000000")
        };
        let mut cmd = Command::new("bash");
        cmd.args(["-o", "pipefail", "-c", script])
            .current_dir(&self.dir);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("RAYSLURM_") {
                cmd.env_remove(&key);
            }
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut joined = bin().parent().unwrap().as_os_str().to_owned();
        joined.push(":");
        joined.push(path);
        cmd.env("PATH", joined)
            .env("HOME", &self.dir)
            .env("RAYSLURM_CONFIG", "/dev/null")
            .env("RAYSLURM_STATE_DIR", &self.state)
            .env("RAYSLURM_PARTITION", "lab")
            .env("RAYSLURM_TIME", "15")
            .envs(crate::harness::LAB_RAY_ENV)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(store) = store {
            cmd.env("RAYSLURM_OBJECT_STORE_MEMORY", store);
        }
        wait_within(cmd.spawn().unwrap(), limit)
    }
}

impl Drop for Project {
    /// Cancels every job the examples left in Slurm's queue (a cluster never brought down, a
    /// run an example failed to follow), so that no test holds nodes after it ends.
    fn drop(&mut self) {
        let listed = self.bash("rayslurm status --all --json", Duration::from_secs(60));
        let runs: serde_json::Value =
            serde_json::from_slice(&listed.stdout).unwrap_or(serde_json::Value::Null);
        for run in runs.as_array().into_iter().flatten() {
            let ended = run["state"].as_str().is_some_and(is_ended_state);
            if let (Some(id), false) = (run["job_id"].as_str(), ended) {
                let _ = Command::new("scancel").arg(id).status();
            }
        }
    }
}

/// A command that runs until Ctrl-C (`# until Ctrl-C` at its end) must still run after 10 s;
/// it is then interrupted. Other lines are left as they are.
fn until_interrupted(script: &str) -> String {
    script
        .lines()
        .map(|line| match line.strip_suffix("# until Ctrl-C") {
            Some(command) => format!(
                "rc=0; timeout -s INT -k 10 10 {command} || rc=$?; test $rc = 124 || \
                 {{ echo 'ended with '$rc' before Ctrl-C: {}' >&2; exit 1; }}",
                command.trim().replace('\'', "")
            ),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs one example; a failure names its place and says what it printed.
fn run(project: &Project, example: &Example) {
    let limit = Duration::from_secs(900);
    match example.kind {
        Kind::Sh | Kind::Table => {
            let script = format!("set -e\n{}", until_interrupted(&example.body));
            let out = project.bash(&script, limit);
            let (stdout, stderr) = text(&out);
            assert!(
                out.status.success(),
                "{}: the example failed ({}):\n{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                example.place(),
                out.status,
                example.body
            );
        }
        Kind::Console => {
            for step in steps(&example.body) {
                let out = project.bash(&format!("exec 2>&1\n{}", step.command), limit);
                let (printed, _) = text(&out);
                let refused = step.expected.iter().any(|l| l.starts_with("error:"));
                assert_eq!(
                    out.status.success(),
                    !refused,
                    "{}: `{}` ended with {} (shown {}):\n{printed}",
                    example.place(),
                    step.command,
                    out.status,
                    if refused { "refused" } else { "succeeding" }
                );
                if let Err(why) = output_matches(&step.expected, &printed) {
                    panic!("{}: `{}`: {why}", example.place(), step.command);
                }
            }
        }
    }
}

/// Runs the examples of the docs files named `name` (README.md, or docs/NAME.md) that are
/// marked to run, in order, in one project; how many ran (`None`: skipped, no test cluster).
fn run_file(name: &str) -> Option<usize> {
    run_examples(name, |_| true)
}

/// [`run_file`] for the examples that `chosen` picks.
fn run_examples(name: &str, chosen: impl Fn(&Example) -> bool) -> Option<usize> {
    let (lab, _turn) = lab()?;
    let file = doc_files()
        .into_iter()
        .find(|f| f.file_name().is_some_and(|n| n == name))
        .unwrap_or_else(|| panic!("no docs file {name}"));
    let (found, problems) = examples(&file, &std::fs::read_to_string(&file).unwrap());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let to_run: Vec<&Example> = found
        .iter()
        .filter(|e| e.not_run.is_none() && chosen(e))
        .collect();
    if to_run.is_empty() {
        return Some(0);
    }
    let project = Project::new(lab, &format!("doc-{}", name.trim_end_matches(".md")));
    for example in &to_run {
        eprintln!("running {}", example.place());
        run(&project, example);
    }
    Some(to_run.len())
}

/// A test of examples ran at least one: none chosen would pass, proving nothing.
fn ran_some(ran: Option<usize>) {
    assert_ne!(ran, Some(0), "no example marked to run was chosen");
}

/// README.md's examples share nothing, so two tests run them side by side, each in a project
/// of its own (the command table's rows depend on each other: it is one example). Each test
/// runs the examples that hold its words; a new example fails
/// `every_readme_example_is_run_by_one_test` until it is given to one.
/// (The first example, `--exp-name sweep`, is not run: it is the launch of "A first run there"
/// under another name, which `doc_examples::marks::the_readmes_first_example_is_the_launch_of_a_
/// first_run_there` checks; a second 2-node Ray run of it would only cost the lab's 2 cores.)
const README_PARTS: [(&str, &str); 2] = [
    (
        "e2e_doc_examples_readme_a_first_run_there",
        "--exp-name hello",
    ),
    ("e2e_doc_examples_readme_every_command", "rayslurm up dev"),
];

/// Runs the README's examples that the running test's row of [`README_PARTS`] picks.
fn run_readme_part() {
    let test = this_test();
    let (_, words) = (README_PARTS.iter())
        .find(|(t, _)| test.rsplit("::").next() == Some(*t))
        .unwrap_or_else(|| panic!("{test} has no row in README_PARTS"));
    ran_some(run_examples("README.md", |e| e.body.contains(words)));
}

#[test]
fn every_readme_example_is_run_by_one_test() {
    let readme = doc_files().remove(0);
    let (found, _) = examples(&readme, &std::fs::read_to_string(&readme).unwrap());
    let run: Vec<&Example> = found.iter().filter(|e| e.not_run.is_none()).collect();
    for example in &run {
        let tests: Vec<&str> = README_PARTS
            .iter()
            .filter(|(_, words)| example.body.contains(words))
            .map(|(test, _)| *test)
            .collect();
        assert_eq!(
            tests.len(),
            1,
            "{}: run by {tests:?}; give it to one test of README_PARTS",
            example.place()
        );
    }
    for (test, words) in README_PARTS {
        assert!(
            run.iter().any(|e| e.body.contains(words)),
            "{test} runs no example (none holds `{words}`)"
        );
    }
}

#[test]
fn e2e_doc_examples_readme_a_first_run_there() {
    run_readme_part();
}

#[test]
fn e2e_doc_examples_readme_every_command() {
    run_readme_part();
}

#[test]
fn e2e_doc_examples_per_node() {
    ran_some(run_file("per-node.md"));
}

/// The words that pick clusters.md's examples of Ray's cluster YAML ("From `ray up`"), run by
/// a test of their own beside the others.
const FROM_RAY_UP: &str = "examples/ray-head.yaml";

#[test]
fn e2e_doc_examples_clusters() {
    ran_some(run_examples("clusters.md", |e| {
        !e.body.contains(FROM_RAY_UP)
    }));
}

#[test]
fn e2e_doc_examples_clusters_from_ray_up() {
    ran_some(run_examples("clusters.md", |e| {
        e.body.contains(FROM_RAY_UP)
    }));
}

#[test]
fn e2e_doc_examples_configuration() {
    ran_some(run_file("configuration.md"));
}

#[test]
fn e2e_doc_examples_arrays() {
    ran_some(run_file("arrays.md"));
}

#[test]
fn e2e_doc_examples_other_pages() {
    let own = [
        "README.md",
        "per-node.md",
        "clusters.md",
        "configuration.md",
        "arrays.md",
    ];
    let mut ran = Some(0);
    for file in doc_files() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if !own.contains(&name.as_str()) {
            let Some(n) = run_file(&name) else {
                return;
            };
            ran = ran.map(|r| r + n);
        }
    }
    ran_some(ran);
}
