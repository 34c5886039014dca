//! `-v/--verbose`: every external command rayslurm runs is echoed to stderr as a line that,
//! pasted into bash, runs the same command with the same arguments; stdout keeps only results,
//! and nothing of it reaches the job.

use std::path::{Path, PathBuf};

use crate::harness::{filter_stamps, rayslurm, shim, text};

/// Fake `sbatch` and `squeue` that log their arguments, one call a line, each argument as
/// bash's `printf %q` writes it (so a call's exact argv can be compared).
struct Fake {
    root: tempfile::TempDir,
}

impl Fake {
    fn new() -> Self {
        let fake = Self {
            root: tempfile::tempdir().unwrap(),
        };
        for dir in ["bin", "state", "logs"] {
            std::fs::create_dir(fake.path(dir)).unwrap();
        }
        let log = |name: &str| {
            format!(
                "printf '%q ' \"$@\" >> {}; echo >> {}",
                fake.calls(name).display(),
                fake.calls(name).display()
            )
        };
        shim(
            &fake.path("bin"),
            "sbatch",
            &format!("{}\necho 4242", log("sbatch")),
        );
        shim(
            &fake.path("bin"),
            "squeue",
            &format!(
                "{}\necho \"4242|RUNNING|None|0:07|1|$(date +%Y-%m-%dT%H:%M:%S)|node1\"",
                log("squeue")
            ),
        );
        fake
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn calls(&self, name: &str) -> PathBuf {
        self.path(&format!("{name}.calls"))
    }

    fn logged(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.calls(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = rayslurm(args)
            .shims(&self.path("bin"))
            .env("RAYSLURM_STATE_DIR", self.path("state"))
            .cwd(&self.path("logs"))
            .output();
        let (stdout, stderr) = text(&out);
        (out.status.code(), stdout, stderr)
    }

    /// Runs `line` through bash with the fake commands first on PATH, as a user pasting it.
    fn paste(&self, line: &str) {
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap()
        );
        let status = std::process::Command::new("bash")
            .args(["-c", line])
            .env("PATH", path)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{line}");
    }
}

/// The one line of `stderr` that runs `program` (possibly after `VAR=value` words).
fn echoed<'a>(stderr: &'a str, program: &str) -> &'a str {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            l.split(' ')
                .find(|w| !w.contains('='))
                .is_some_and(|w| w == program)
        })
        .collect();
    assert_eq!(lines.len(), 1, "one `{program}` line in:\n{stderr}");
    lines[0]
}

#[test]
fn verbose_echoes_each_slurm_command_as_a_line_that_runs_it_again() {
    let fake = Fake::new();
    let (code, stdout, stderr) = fake.run(&[
        "-v",
        "launch",
        "--exp-name",
        "verb",
        "--command",
        "python train.py",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "4242\n", "stdout has the result alone");
    let line = echoed(&stderr, "sbatch");
    let script = std::path::PathBuf::from(
        stderr
            .lines()
            .find_map(|l| l.trim().strip_prefix("script: "))
            .expect("names the script"),
    );
    assert_eq!(line, format!("sbatch --parsable {}", script.display()));
    fake.paste(line);
    let calls = fake.logged("sbatch");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0], calls[1], "the pasted line runs the same argv");

    // Arguments with shell characters (`|`, `%`) and a variable for the command.
    let (code, stdout, stderr) = fake.run(&["status", "verb", "--verbose", "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with('['), "{stdout}");
    let line = echoed(&stderr, "squeue");
    assert!(
        line.starts_with(
            "SLURM_TIME_FORMAT=standard squeue --noheader --states=all --jobs 4242 --format '%i|"
        ),
        "{line}"
    );
    fake.paste(line);
    let calls = fake.logged("squeue");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0], calls[1], "the pasted line runs the same argv");
}

#[test]
fn without_verbose_nothing_is_echoed() {
    let fake = Fake::new();
    let (code, _, stderr) = fake.run(&["launch", "--exp-name", "q", "--command", "true"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("--parsable"), "{stderr}");
    let (code, _, stderr) = fake.run(&["status", "q"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("squeue"), "{stderr}");
}

#[test]
fn verbose_and_quiet_together_exit_2() {
    let fake = Fake::new();
    let (code, stdout, stderr) = fake.run(&["-v", "-q", "status"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot be used with"), "{stderr}");
    assert_eq!(stdout, "");
}

/// The script and so the bootstrap's command line are the same with `-v`: the job never
/// learns of it.
#[test]
fn verbose_does_not_reach_the_job() {
    let script = |verbose: bool| {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec![
            "launch",
            "--dry-run",
            "--exp-name",
            "v",
            "--command",
            "true",
        ];
        if verbose {
            args.insert(0, "--verbose");
        }
        let out = rayslurm(args).cwd(dir.path()).output();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        normalise(&stdout, dir.path())
    };
    let quiet = script(false);
    assert_eq!(script(true), quiet);
    assert!(!quiet.contains("verbose"), "{quiet}");
}

fn normalise(script: &str, dir: &Path) -> String {
    let s = filter_stamps(&script.replace(&dir.display().to_string(), "[DIR]"));
    regex::Regex::new(r"at \d{4}-\d\d-\d\dT[^ ]+\.")
        .unwrap()
        .replace_all(&s, "at [TIME].")
        .into_owned()
}
