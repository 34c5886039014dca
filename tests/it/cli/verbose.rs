//! `-v/--verbose`: every external command rayslurm runs is echoed to stderr as a line that,
//! pasted into bash, runs the same command with the same arguments; stdout keeps only results,
//! and nothing of it reaches the job.

use std::path::{Path, PathBuf};

use crate::harness::{Run, filter_stamps, rayslurm, shim};

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

    /// rayslurm with the fake commands, in the log directory, with the fake's run store.
    fn run(&self, args: &[&str]) -> Run {
        rayslurm(args)
            .shims(&self.path("bin"))
            .env("RAYSLURM_STATE_DIR", self.path("state"))
            .cwd(&self.path("logs"))
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
    let ran = fake
        .run(&[
            "-v",
            "launch",
            "--exp-name",
            "verb",
            "--command",
            "python train.py",
        ])
        .expect_status(0)
        // stdout has the result alone.
        .expect_stdout("4242\n")
        .run();
    let stderr = &ran.stderr;
    let line = echoed(stderr, "sbatch");
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
    let ran = fake
        .run(&["status", "verb", "--verbose", "--json"])
        .expect_status(0)
        .expect_stdout_starts_with("[")
        .run();
    let line = echoed(&ran.stderr, "squeue");
    assert!(
        line.starts_with(
            "SLURM_TIME_FORMAT=standard squeue --noheader --states=all --array --jobs 4242 --format '%i|"
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
    fake.run(&["launch", "--exp-name", "q", "--command", "true"])
        .expect_status(0)
        .expect_stderr_lacks("--parsable")
        .run();
    fake.run(&["status", "q"])
        .expect_status(0)
        .expect_stderr_lacks("squeue")
        .run();
}

#[test]
fn verbose_and_quiet_together_exit_2() {
    let fake = Fake::new();
    fake.run(&["-v", "-q", "status"])
        .expect_status(2)
        .expect_stderr_contains("cannot be used with")
        .expect_stdout("")
        .run();
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
        let ran = rayslurm(args).cwd(dir.path()).expect_status(0).run();
        normalise(&ran.stdout, dir.path())
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
