//! A small builder for running the rayslurm binary, with what it is expected to do
//! (`harness/expect.rs`); the local test cluster and a test's turn on it (`harness/lab.rs`,
//! `harness/turn.rs`), its jobs (`harness/job.rs`, `harness/slurm.rs`), its nodes' /tmp
//! (`harness/node_tmp.rs`) and a laptop that reaches its login node over SSH
//! (`harness/laptop.rs`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

mod expect;
mod job;
mod lab;
mod laptop;
mod no_real_slurm;
mod node_tmp;
mod slurm;
mod steps;
/// How a test that cannot run here is skipped: the one definition the unit tests use too.
#[path = "../../src/sys/test_skip.rs"]
mod test_skip;
mod turn;

pub use expect::Ran;
pub(crate) use job::*;
pub use lab::{Lab, lab, lab_crash, this_test, unique_name};
pub use laptop::{LAPTOP_ROOT, LAPTOP_USER, LOGIN_HOST, Laptop};
pub use no_real_slurm::{SLURM_CLIENTS, UNFAKED_VAR};
pub(crate) use node_tmp::*;
pub use slurm::{expand_nodes, is_ended_state, scontrol_job, wait_job_end};
pub(crate) use test_skip::{skip, skipped_on_purpose};
pub use turn::Turn;

/// The SHA-256 of `bytes`, lowercase hex, as rayslurm writes digests.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The rayslurm binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rayslurm"))
}

/// One rayslurm invocation: args, env, working directory, PATH shims, and what it is expected
/// to do (`expect_*`, in `harness/expect.rs`).
pub struct Run {
    args: Vec<OsString>,
    env: HashMap<OsString, OsString>,
    env_removed: Vec<OsString>,
    cwd: Option<PathBuf>,
    shims: Option<PathBuf>,
    /// What the command reads on stdin (none: the end of input at once).
    stdin: Option<Vec<u8>>,
    expect: expect::Expect,
}

pub fn rayslurm<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    Run {
        args: args.into_iter().map(Into::into).collect(),
        env: HashMap::new(),
        env_removed: Vec::new(),
        cwd: None,
        shims: None,
        stdin: None,
        expect: expect::Expect::default(),
    }
}

impl Run {
    /// One more argument, after those given so far.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn env(mut self, k: &str, v: impl Into<OsString>) -> Self {
        self.env.insert(k.into(), v.into());
        self
    }

    /// Unsets a variable the harness would set (e.g. `RAYSLURM_CONFIG`, to reach the user file
    /// under `XDG_CONFIG_HOME` or `HOME`).
    pub fn env_remove(mut self, k: &str) -> Self {
        self.env.remove(&OsString::from(k));
        self.env_removed.push(k.into());
        self
    }

    /// What the command reads on stdin, as a user would type it.
    pub fn stdin(mut self, input: &str) -> Self {
        self.stdin = Some(input.as_bytes().to_vec());
        self
    }

    pub fn cwd(mut self, dir: &Path) -> Self {
        self.cwd = Some(dir.to_owned());
        self
    }

    /// Puts a directory of fake commands first on PATH.
    pub fn shims(mut self, dir: &Path) -> Self {
        self.shims = Some(dir.to_owned());
        self
    }

    /// The command, ready to run or spawn: the developer's own rayslurm settings removed, the
    /// harness's defaults and then the test's own applied.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(&self.args);
        // Tests never read the developer's own defaults, config files or run records: every
        // `RAYSLURM_*` variable (today's and any added later) and the XDG bases go.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("RAYSLURM_") {
                cmd.env_remove(&key);
            }
        }
        // COLUMNS would change how clap wraps `--help`.
        for key in ["XDG_CONFIG_HOME", "XDG_STATE_HOME", "COLUMNS"] {
            cmd.env_remove(key);
        }
        cmd.env("RAYSLURM_CONFIG", "/dev/null")
            .env("RAYSLURM_STATE_DIR", scratch_state_dir())
            .envs(LAB_RAY_ENV);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        if let Some(shims) = &self.shims {
            // The test's fakes, then a stub of every Slurm client it did not fake.
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut joined = OsString::from(shims.as_os_str());
            joined.push(":");
            joined.push(no_real_slurm::stubs());
            joined.push(":");
            joined.push(path);
            cmd.env("PATH", joined).env(
                no_real_slurm::UNFAKED_VAR,
                shims.join(no_real_slurm::UNFAKED),
            );
        }
        for k in &self.env_removed {
            cmd.env_remove(k);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn output(self) -> Output {
        self.produce()
    }

    /// Runs the command to its end, with its stdin if one was given. A call of a Slurm client
    /// the test did not fake fails the test (see `harness/no_real_slurm.rs`).
    pub(crate) fn produce(&self) -> Output {
        let output = self.produce_unchecked();
        self.check_no_real_slurm(&output);
        output
    }

    /// Fails the test if the invocation that gave `output` called a Slurm client that the
    /// test did not fake.
    pub(crate) fn check_no_real_slurm(&self, output: &Output) {
        if let Some(calls) = self.shims.as_deref().and_then(no_real_slurm::unfaked_calls) {
            let args: Vec<String> = (self.args.iter())
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            panic!(
                "rayslurm called Slurm clients this test does not fake:\n{calls}\n{}",
                transcript(&args, output)
            );
        }
    }

    fn produce_unchecked(&self) -> Output {
        let Some(input) = &self.stdin else {
            return self.command().output().expect("rayslurm runs");
        };
        let mut child = self
            .command()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("rayslurm starts");
        let mut pipe = child.stdin.take().expect("piped");
        // The command may end before it reads (a refusal): a closed pipe is its answer.
        let _ = std::io::Write::write_all(&mut pipe, input);
        drop(pipe);
        child.wait_with_output().expect("rayslurm runs")
    }
}

/// Ray's own tunables for the lab's 2 cores, given to every command a test runs and so, through
/// sbatch's environment, to every Ray process of its jobs: a node starts a Python worker when a
/// task needs one, not one per CPU as soon as a driver connects (most tests' drivers run a task
/// or two). They change how much CPU Ray spends, not what rayslurm does.
pub const LAB_RAY_ENV: [(&str, &str); 2] = [
    ("RAY_enable_worker_prestart", "0"),
    ("RAY_prestart_worker_first_driver", "0"),
];

/// Waits for a spawned rayslurm (stdout and stderr piped) to end and returns its output. One
/// still running after `limit` is killed and fails the test, so a command that would never end
/// fails instead of hanging the test run. The limit is loose: only a hang is a failure. A
/// stream the caller took to read as it comes is empty in the output.
pub fn wait_within(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    let read = |stream: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut stream) = stream {
                let _ = stream.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let stderr = read(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let status = loop {
        if let Some(status) = child.try_wait().expect("rayslurm can be waited for") {
            break Some(status);
        }
        if start.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = stdout.join().expect("stdout is read");
    let stderr = stderr.join().expect("stderr is read");
    let Some(status) = status else {
        panic!(
            "still running after {limit:?}, so it was killed; its stderr:\n{}",
            String::from_utf8_lossy(&stderr)
        );
    };
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Run records of tests that do not pick their own `RAYSLURM_STATE_DIR`: never the developer's.
fn scratch_state_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("run-records")
}

/// stdout and stderr of an output as text.
pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A command and what it printed, as a user would see it in a terminal, for snapshots:
/// `$ rayslurm ARGS`, the exit code, then stdout and stderr (each only if not empty).
pub fn transcript(args: &[&str], out: &Output) -> String {
    let plain = regex::Regex::new(r"^[A-Za-z0-9_./=:+-]+$").unwrap();
    let words: Vec<String> = args
        .iter()
        .map(|a| {
            if plain.is_match(a) {
                (*a).to_owned()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect();
    let (stdout, stderr) = text(out);
    let mut t = format!("$ rayslurm {}\nexit code: ", words.join(" "));
    match out.status.code() {
        Some(code) => t.push_str(&code.to_string()),
        None => t.push_str("none (killed by a signal)"),
    }
    t.push('\n');
    for (name, stream) in [("stdout", stdout), ("stderr", stderr)] {
        if !stream.is_empty() {
            t.push_str(&format!("----- {name} -----\n{stream}"));
        }
    }
    t
}

/// The sorted keys of a JSON object, one a line: the shape scripts rely on, without the values.
pub fn json_keys(v: &serde_json::Value) -> String {
    let mut keys: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys.join("\n")
}

/// Writes an executable shim script named `name` into `dir`. Its file is written by a child
/// (`install`), never open for writing in this process: a child that another test's thread
/// forks meanwhile would hold such a file open until it execs, and running the shim then fails
/// "Text file busy" (once seen: pyxis's `srun --help` shim, read as no pyxis).
pub fn shim(dir: &Path, name: &str, body: &str) {
    let staged = tempfile::NamedTempFile::new_in(dir).unwrap();
    std::fs::write(staged.path(), format!("#!/bin/bash\n{body}\n")).unwrap();
    let out = std::process::Command::new("install")
        .args(["-m", "755"])
        .arg(staged.path())
        .arg(dir.join(name))
        .output()
        .unwrap();
    assert!(out.status.success(), "install of the shim {name}: {out:?}");
}

/// Replaces run-specific text (times in file names) so output can be compared.
pub fn filter_stamps(text: &str) -> String {
    let re = regex::Regex::new(r"_\d{4}-\d{6}(-\d+)?").unwrap();
    re.replace_all(text, "_[STAMP]").into_owned()
}

/// The first line a spawned child prints on its (piped) stdout.
pub fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout is piped")),
        &mut line,
    )
    .expect("stdout is read");
    line
}

/// A Python program that connects to 127.0.0.1:`port`, sends one HTTP request and prints
/// `answered` or `closed` (closed unanswered, or reset).
pub fn connect_probe(port: u16) -> String {
    format!(
        "import socket\ns = socket.create_connection(('127.0.0.1', {port}))\ns.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')\ntry:\n    print('answered' if s.recv(100) else 'closed')\nexcept ConnectionResetError:\n    print('closed')"
    )
}

/// The status line of an HTTP GET of `path` without any token, as an outsider on the network
/// would send it (an answer that never comes fails after 30 s).
pub fn status_without_token(host: &str, port: u64, path: &str) -> String {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect((host, port as u16)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}
