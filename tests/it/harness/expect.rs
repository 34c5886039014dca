//! What a rayslurm invocation is expected to do, stated with the invocation itself (as just's
//! `Test` does): `rayslurm(args).env(..).expect_status(0).expect_stdout_contains(..).run()`.
//! Every expectation is checked, and a failure names all that differed beside the command and
//! everything it printed, so one look tells what went wrong.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use super::{Run, text, transcript, wait_within};

/// What a test expects of one invocation; nothing is expected until a test says so.
#[derive(Default)]
pub(super) struct Expect {
    /// Which case of a table this invocation is, named in a failure.
    case: Option<String>,
    status: Option<i32>,
    stdout: Vec<Text>,
    stderr: Vec<Text>,
    json: Vec<(String, serde_json::Value)>,
    files: Vec<(PathBuf, Text)>,
    absent: Vec<PathBuf>,
}

/// An expectation of a text: all of it, its start, a part, a part it must not have, a part's
/// count, or a pattern it matches.
enum Text {
    Is(String),
    StartsWith(String),
    Contains(String),
    Lacks(String),
    Count(String, usize),
    Matches(regex::Regex),
}

impl Text {
    /// What differs between `actual` and this expectation, if anything.
    fn differs(&self, what: &str, actual: &str) -> Option<String> {
        match self {
            Self::Is(want) if actual != want => {
                Some(format!("{what} is not exactly:\n{want}\n(end)"))
            }
            Self::StartsWith(start) if !actual.starts_with(start.as_str()) => {
                Some(format!("{what} does not start with `{start}`"))
            }
            Self::Contains(part) if !actual.contains(part.as_str()) => {
                Some(format!("{what} does not contain `{part}`"))
            }
            Self::Lacks(part) if actual.contains(part.as_str()) => {
                Some(format!("{what} contains `{part}`, which it must not"))
            }
            Self::Count(part, n) if actual.matches(part.as_str()).count() != *n => Some(format!(
                "{what} has `{part}` {} times, not {n}",
                actual.matches(part.as_str()).count()
            )),
            Self::Matches(re) if !re.is_match(actual) => {
                Some(format!("{what} does not match /{re}/"))
            }
            _ => None,
        }
    }
}

impl Run {
    /// Names the case of a table this invocation is, for a failure's message.
    pub fn case(mut self, name: impl Into<String>) -> Self {
        self.expect.case = Some(name.into());
        self
    }

    /// The exit code the invocation must end with.
    pub fn expect_status(mut self, code: i32) -> Self {
        self.expect.status = Some(code);
        self
    }

    fn stdout(mut self, want: Text) -> Self {
        self.expect.stdout.push(want);
        self
    }

    fn stderr(mut self, want: Text) -> Self {
        self.expect.stderr.push(want);
        self
    }

    /// stdout must be exactly `want`.
    pub fn expect_stdout(self, want: &str) -> Self {
        self.stdout(Text::Is(want.to_owned()))
    }

    pub fn expect_stdout_starts_with(self, start: &str) -> Self {
        self.stdout(Text::StartsWith(start.to_owned()))
    }

    pub fn expect_stdout_contains(self, part: &str) -> Self {
        self.stdout(Text::Contains(part.to_owned()))
    }

    pub fn expect_stdout_lacks(self, part: &str) -> Self {
        self.stdout(Text::Lacks(part.to_owned()))
    }

    /// stdout must hold `part` exactly `n` times.
    pub fn expect_stdout_count(self, part: &str, n: usize) -> Self {
        self.stdout(Text::Count(part.to_owned(), n))
    }

    /// stdout must match the regular expression `pattern`.
    pub fn expect_stdout_matches(self, pattern: &str) -> Self {
        self.stdout(Text::Matches(
            regex::Regex::new(pattern).expect("a valid pattern"),
        ))
    }

    /// stdout is JSON, and the value at `pointer` (RFC 6901: `/0/state`) must be `want`.
    pub fn expect_json(mut self, pointer: &str, want: impl Into<serde_json::Value>) -> Self {
        self.expect.json.push((pointer.to_owned(), want.into()));
        self
    }

    /// stderr must be exactly `want`.
    pub fn expect_stderr(self, want: &str) -> Self {
        self.stderr(Text::Is(want.to_owned()))
    }

    pub fn expect_stderr_starts_with(self, start: &str) -> Self {
        self.stderr(Text::StartsWith(start.to_owned()))
    }

    pub fn expect_stderr_contains(self, part: &str) -> Self {
        self.stderr(Text::Contains(part.to_owned()))
    }

    pub fn expect_stderr_lacks(self, part: &str) -> Self {
        self.stderr(Text::Lacks(part.to_owned()))
    }

    /// stderr must hold `part` exactly `n` times.
    pub fn expect_stderr_count(self, part: &str, n: usize) -> Self {
        self.stderr(Text::Count(part.to_owned(), n))
    }

    /// After the invocation, the file at `path` must hold exactly `want`.
    pub fn expect_file(mut self, path: impl Into<PathBuf>, want: &str) -> Self {
        self.expect
            .files
            .push((path.into(), Text::Is(want.to_owned())));
        self
    }

    /// After the invocation, nothing may be at `path`.
    pub fn expect_no_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.expect.absent.push(path.into());
        self
    }

    /// Runs rayslurm to its end and checks every expectation.
    #[track_caller]
    pub fn run(self) -> Ran {
        let output = self.produce();
        self.check(output)
    }

    /// Starts rayslurm with stdout and stderr piped; [`Running::wait_within`] checks it.
    pub fn spawn(self) -> Running {
        let child = self
            .command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rayslurm starts");
        Running { run: self, child }
    }

    /// Checks `output` against every expectation: the [`Ran`] if all hold, else a panic that
    /// lists what differed.
    #[track_caller]
    fn check(self, output: Output) -> Ran {
        let mut env: Vec<_> = self.env.into_iter().collect();
        env.sort();
        let ran = Ran {
            args: self.args,
            env,
            cwd: self.cwd,
            ..Ran::from(output)
        };
        let mut differs = Vec::new();
        if let Some(code) = self.expect.status
            && ran.output.status.code() != Some(code)
        {
            let actual = ran
                .output
                .status
                .code()
                .map_or("none".into(), |c| c.to_string());
            differs.push(format!("the exit code is {actual}, not {code}"));
        }
        for want in &self.expect.stdout {
            differs.extend(want.differs("stdout", &ran.stdout));
        }
        for want in &self.expect.stderr {
            differs.extend(want.differs("stderr", &ran.stderr));
        }
        if !self.expect.json.is_empty() {
            differs.extend(json_differs(&self.expect.json, &ran.stdout));
        }
        for (path, want) in &self.expect.files {
            match std::fs::read_to_string(path) {
                Ok(actual) => differs.extend(want.differs(&path.display().to_string(), &actual)),
                Err(e) => differs.push(format!("cannot read {}: {e}", path.display())),
            }
        }
        for path in &self.expect.absent {
            if path.exists() {
                differs.push(format!("{} exists, and must not", path.display()));
            }
        }
        if !differs.is_empty() {
            let case = (self.expect.case)
                .map(|case| format!("case {case}:\n"))
                .unwrap_or_default();
            panic!("{case}{}\n{ran}", differs.join("\n"));
        }
        ran
    }
}

/// What differs between the JSON on stdout and the values expected at their pointers.
fn json_differs(want: &[(String, serde_json::Value)], stdout: &str) -> Vec<String> {
    let value: serde_json::Value = match serde_json::from_str(stdout) {
        Ok(value) => value,
        Err(e) => return vec![format!("stdout is not JSON: {e}")],
    };
    want.iter()
        .filter(|(pointer, want)| value.pointer(pointer) != Some(want))
        .map(|(pointer, want)| match value.pointer(pointer) {
            Some(actual) => format!("JSON {pointer} is {actual}, not {want}"),
            None => format!("JSON {pointer} is missing (expected {want})"),
        })
        .collect()
}

/// A rayslurm started by [`Run::spawn`], still running.
pub struct Running {
    run: Run,
    child: Child,
}

impl Running {
    /// The process id, to send signals to.
    pub fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("a pid fits"))
    }

    /// Sends `signal`, as a user's terminal or a scheduler would.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(self.pid(), signal).expect("the signal is sent");
    }

    /// Waits for the end (a hang past `limit` is killed and fails the test, see
    /// [`wait_within`]) and checks every expectation.
    #[track_caller]
    pub fn wait_within(self, limit: Duration) -> Ran {
        let output = wait_within(self.child, limit);
        self.run.check_no_real_slurm(&output);
        self.run.check(output)
    }
}

/// An invocation that has ended and met its expectations: its output, for the checks that
/// are not about text (JSON values, calls the fake commands saw).
pub struct Ran {
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    pub output: Output,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Ran {
    fn from(output: Output) -> Self {
        let (stdout, stderr) = text(&output);
        Self {
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            output,
            stdout,
            stderr,
        }
    }
}

impl Ran {
    /// stdout as JSON; a failure shows the whole invocation.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{self}"))
    }

    /// stdout as a JSON list (`status --json`'s rows).
    #[track_caller]
    pub fn rows(&self) -> Vec<serde_json::Value> {
        serde_json::from_value(self.json())
            .unwrap_or_else(|e| panic!("stdout is not a JSON list ({e})\n{self}"))
    }

    /// The command and what it printed, for snapshots (see [`transcript`]).
    pub fn transcript(&self) -> String {
        let args: Vec<String> = self
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        transcript(&args, &self.output)
    }
}

/// The variables the test set, the command and its whole output: what a failure shows.
impl fmt::Display for Ran {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "----- the invocation -----")?;
        for (k, v) in &self.env {
            writeln!(f, "{}={}", k.to_string_lossy(), v.to_string_lossy())?;
        }
        if let Some(dir) = &self.cwd {
            writeln!(f, "(in {})", dir.display())?;
        }
        write!(f, "{}", self.transcript())
    }
}
