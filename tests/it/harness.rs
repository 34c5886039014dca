//! A small builder for running the rayslurm binary, with what it is expected to do
//! (`harness/expect.rs`), and access to the local test cluster.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

mod expect;
mod no_real_slurm;
/// How a test that cannot run here is skipped: the one definition the unit tests use too.
#[path = "../../src/sys/test_skip.rs"]
mod test_skip;

pub use expect::Ran;
pub use no_real_slurm::{SLURM_CLIENTS, UNFAKED_VAR};
pub(crate) use test_skip::{skip, skipped_on_purpose};

/// The rayslurm binary under test.
/// The SHA-256 of `bytes`, lowercase hex, as rayslurm writes digests.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

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

/// Writes an executable shim script named `name` into `dir`.
pub fn shim(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Replaces run-specific text (times in file names) so output can be compared.
pub fn filter_stamps(text: &str) -> String {
    let re = regex::Regex::new(r"_\d{4}-\d{6}(-\d+)?").unwrap();
    re.replace_all(text, "_[STAMP]").into_owned()
}

/// The local test cluster, as `tests/cluster/cluster.sh env` describes it.
pub struct Lab {
    pub venv: PathBuf,
    /// A venv with `jax[cpu]`, apart from Ray's.
    pub jax_venv: PathBuf,
    pub shared: PathBuf,
    pub nodes: Vec<String>,
    pub node_ips: Vec<String>,
    pub node_ips6: Vec<String>,
    /// The partition of nodes that only the tests that kill a node use, and its nodes.
    pub crash_partition: String,
    pub crash_nodes: Vec<String>,
}

impl Lab {
    /// The IPv4 address of one of the lab's nodes.
    pub fn ip_of(&self, node: &str) -> String {
        let k = self.nodes.iter().position(|n| n == node).unwrap();
        self.node_ips[k].clone()
    }

    /// The node that the `k`-th test placing two jobs side by side on one node uses (counted
    /// from the last node): each such test has its own, so that they never crowd each other
    /// when they run at the same time (wrapping around on a lab smaller than `k + 1`).
    pub fn node_of_its_own(&self, k: usize) -> String {
        let n = self.nodes.len();
        self.nodes[n - 1 - k % n].clone()
    }

    /// A fresh directory on the shared filesystem for one test.
    pub fn workdir(&self, name: &str) -> PathBuf {
        let dir = self.shared.join("tests").join(unique_name(name));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `--load-env` that puts the lab's Ray on PATH.
    pub fn load_env(&self) -> String {
        format!("source {}/bin/activate", self.venv.display())
    }
}

/// `name` made unique to this test process and moment: a fresh directory's name.
pub fn unique_name(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

fn cluster_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/cluster.sh")
}

/// A test's turn on the cluster: shared with other tests, or the crash partition for a test
/// that kills a node (one such test at a time). Held until the test ends; then, when
/// `RAYSLURM_TEST_TIMES` names a file, one line is added to it: the test's name, its kind of
/// turn, the seconds it waited for the turn and the seconds it held it, and when it got it
/// (seconds after the first test asked for a turn; see docs/testing.md).
pub struct Turn {
    crash: Option<MutexGuard<'static, ()>>,
    /// Its place among the tests that hold the cluster at once; given up after the line.
    _admitted: Admitted,
    test: String,
    asked: Instant,
    given: Instant,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let Some(file) = std::env::var_os("RAYSLURM_TEST_TIMES") else {
            return;
        };
        let line = format!(
            "{}\t{}\twaited {:.1}\tran {:.1}\tat {:.1}\n",
            self.test,
            if self.crash.is_some() {
                "crash"
            } else {
                "shared"
            },
            (self.given - self.asked).as_secs_f64(),
            self.given.elapsed().as_secs_f64(),
            (self.given - *FIRST_ASKED.get_or_init(Instant::now)).as_secs_f64(),
        );
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        if let Err(e) = appended {
            eprintln!("cannot add to RAYSLURM_TEST_TIMES: {e}");
        }
    }
}

/// The test cluster if it is up, shared with other tests. When it is not: a loud skip on a
/// developer's machine, a failure under CI (`CI=true`), never a silent pass.
pub fn lab(test: &str) -> Option<(&'static Lab, Turn)> {
    let lab = lab_up(test)?;
    let asked = Instant::now();
    Some((lab, turn(test, None, admit(test, false), asked)))
}

/// [`lab`] for a test that kills a node: it runs its jobs in the crash partition (2 nodes no
/// other test uses, `cluster.sh up N 2`), one such test at a time, beside every other test.
/// Without that partition: skipped loudly, or a failure under CI.
pub fn lab_crash(test: &str) -> Option<(&'static Lab, Turn)> {
    static CRASH: Mutex<()> = Mutex::new(());
    let lab = lab_up(test)?;
    if lab.crash_nodes.len() < 2 {
        let why = "the test cluster has no crash partition of 2 nodes \
                   (run `bash tests/cluster/cluster.sh up 6 2`)";
        skip(test, why, None);
        return None;
    }
    let asked = Instant::now();
    let guard = CRASH.lock().unwrap_or_else(PoisonError::into_inner);
    Some((lab, turn(test, Some(guard), admit(test, true), asked)))
}

/// The tests that hold the cluster longest (from the figures in docs/testing.md), and those of
/// 3 nodes among them (which start only while 3 of the 4 nodes are free): they get their turn
/// first, so that the suite does not end with one of them running alone.
/// `long_first_names_are_tests` keeps the list true to the tests' names.
pub const LONG_FIRST: &[&str] = &[
    "e2e_doc_examples_readme_every_command",
    "three_nodes_form_a_cluster_and_the_command_sees_them",
    "e2e_doc_examples_clusters",
    "a_ready_timeout_fails_the_job_and_stops_starting_workers",
    "the_python_docs_examples_run",
    "plain_multi_node_program_without_ray",
    "two_clusters_on_one_node_see_only_their_own_jobs_and_the_time_limit_ends_one",
    "every_node_runs_the_command_with_its_ranks_after_its_setup",
    "an_elastic_cluster_grows_with_demand_and_shrinks_when_idle",
    "a_real_jax_group_forms_across_the_nodes",
    "exec_per_node_runs_one_rank_on_each_node",
    "scancel_during_the_run_leaves_no_ray_process",
    "a_lost_worker_job_is_replaced_and_queued_jobs_still_succeed",
    "the_time_limit_drains_and_ends_an_elastic_clusters_worker_jobs",
    "a_setup_that_fails_on_one_node_fails_the_run_naming_it",
    "a_rank_that_fails_gives_its_code_and_the_others_are_stopped",
    "scancel_of_a_per_node_run_leaves_nothing",
    "a_job_sent_elsewhere_with_chdir_runs_there",
    "an_idle_cluster_and_its_queue_ask_slurm_almost_never",
    "a_cluster_runs_many_jobs_through_rays_queue",
    "a_killed_bootstrap_leaves_nothing_and_says_so",
    "a_followed_run_asks_slurm_once_every_ten_seconds",
    "a_ray_run_and_its_setup_work_in_the_copy",
    "a_job_slurm_requeues_as_preemption_does_resumes_on_its_next_attempt",
    "an_idle_cluster_releases_its_allocation",
    "a_client_without_the_token_is_refused_on_every_port",
    "two_jobs_share_a_node_and_ray_is_told_each_ones_cpu_and_memory",
    "the_time_limit_warns_the_command_which_checkpoints_and_the_requeued_run_resumes",
    "a_temp_root_name_taken_on_the_nodes_does_not_fail_the_run",
    "the_time_limit_stops_the_run_cleanly",
];

/// Which tests hold the cluster now, and which wait: at most `RAYSLURM_TEST_AT_ONCE` (6) at
/// once, whatever the number of libtest's threads (tests/run.sh gives it one for every test,
/// so that every test asks at the start and the long ones can go first).
struct Gate {
    holding: usize,
    /// (rank in [`LONG_FIRST`], or its length for any other test; order of asking).
    waiting: Vec<(usize, u64)>,
    asked: u64,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    holding: 0,
    waiting: Vec::new(),
    asked: 0,
});
static GATE_OPENED: Condvar = Condvar::new();

/// A test's place among those holding the cluster.
pub struct Admitted;

impl Drop for Admitted {
    fn drop(&mut self) {
        GATE.lock().unwrap_or_else(PoisonError::into_inner).holding -= 1;
        GATE_OPENED.notify_all();
    }
}

/// Waits until the test may hold the cluster: a place is free and no test before it in line
/// waits. First in line is a test that kills a node (they run one after another, on nodes of
/// their own: a chain that must start early), then the [`LONG_FIRST`], then the others in
/// the order they asked.
fn admit(test: &str, kills_a_node: bool) -> Admitted {
    let at_once: usize = std::env::var("RAYSLURM_TEST_AT_ONCE")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(6);
    let rank = if kills_a_node {
        0
    } else {
        1 + LONG_FIRST
            .iter()
            .position(|t| *t == test)
            .unwrap_or(LONG_FIRST.len())
    };
    let mut gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
    gate.asked += 1;
    let me = (rank, gate.asked);
    gate.waiting.push(me);
    while gate.holding >= at_once || gate.waiting.iter().min() != Some(&me) {
        gate = GATE_OPENED
            .wait(gate)
            .unwrap_or_else(PoisonError::into_inner);
    }
    gate.waiting.retain(|w| *w != me);
    gate.holding += 1;
    // The next in line may be admitted too, if there is room.
    GATE_OPENED.notify_all();
    Admitted
}

/// When the first test asked for a turn.
static FIRST_ASKED: OnceLock<Instant> = OnceLock::new();

fn turn(
    test: &str,
    crash: Option<MutexGuard<'static, ()>>,
    admitted: Admitted,
    asked: Instant,
) -> Turn {
    FIRST_ASKED.get_or_init(|| asked);
    Turn {
        crash,
        _admitted: admitted,
        test: test.to_owned(),
        asked,
        given: Instant::now(),
    }
}

fn lab_up(test: &str) -> Option<&'static Lab> {
    static LAB: OnceLock<Result<Lab, String>> = OnceLock::new();
    let lab = LAB.get_or_init(|| {
        let out = Command::new("bash")
            .arg(cluster_script())
            .arg("env")
            .output()
            .map_err(|e| format!("cannot run cluster.sh env: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let vars: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        if vars.get("RAYSLURM_LAB_UP") != Some(&"1") {
            return Err(
                "the test cluster is not up (run `bash tests/cluster/cluster.sh up`)".into(),
            );
        }
        let list = |k: &str| -> Vec<String> {
            vars.get(k)
                .map(|v| {
                    v.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(Lab {
            venv: PathBuf::from(vars.get("RAYSLURM_LAB_VENV").copied().unwrap_or_default()),
            jax_venv: PathBuf::from(
                vars.get("RAYSLURM_LAB_JAX_VENV")
                    .copied()
                    .unwrap_or_default(),
            ),
            shared: PathBuf::from(vars.get("RAYSLURM_LAB_SHARED").copied().unwrap_or_default()),
            nodes: list("RAYSLURM_LAB_NODES"),
            node_ips: list("RAYSLURM_LAB_NODE_IPS"),
            node_ips6: list("RAYSLURM_LAB_NODE_IPS6"),
            crash_partition: vars
                .get("RAYSLURM_LAB_CRASH_PARTITION")
                .copied()
                .unwrap_or_default()
                .to_owned(),
            crash_nodes: list("RAYSLURM_LAB_CRASH_NODES"),
        })
    });
    match lab {
        Ok(lab) => Some(lab),
        Err(why) => {
            skip(test, why, None);
            None
        }
    }
}

/// `scontrol show job ID` as key=value pairs (the job must still be known to slurmctld).
pub fn scontrol_job(job_id: &str) -> HashMap<String, String> {
    let out = Command::new("scontrol")
        .args(["show", "job", "-o", job_id])
        .output()
        .expect("scontrol runs");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Whether a Slurm job state (as `scontrol` or `status` name it) is one a job never leaves. Any
/// other name, known or not, is a job still under way: Slurm shows passing flags in its place
/// (`SIGNALING` for a moment while its `--signal` warning goes out).
pub fn is_ended_state(state: &str) -> bool {
    matches!(
        state,
        "COMPLETED"
            | "CANCELLED"
            | "FAILED"
            | "TIMEOUT"
            | "PREEMPTED"
            | "NODE_FAIL"
            | "BOOT_FAIL"
            | "DEADLINE"
            | "OUT_OF_MEMORY"
            | "REVOKED"
            | "SPECIAL_EXIT"
    )
}

/// Waits until the job has left the running states; returns its final `scontrol` view.
/// `limit` counts only the time the job runs: time queued behind other tests' jobs is not the
/// job's fault (it is capped separately, at 20 minutes).
pub fn wait_job_end(job_id: &str, limit: std::time::Duration) -> HashMap<String, String> {
    let start = std::time::Instant::now();
    let mut running_since: Option<std::time::Instant> = None;
    loop {
        let info = scontrol_job(job_id);
        let state = info.get("JobState").cloned().unwrap_or_default();
        match state.as_str() {
            _ if is_ended_state(&state) => return info,
            // A requeued job passes through REQUEUED on its way back to PENDING.
            "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "" => {}
            // RUNNING, CONFIGURING, COMPLETING, and the passing flags: SIGNALING while Slurm
            // delivers a signal (its time-limit warning sends SIGCONT first), STOPPED, ...
            _ => {
                running_since.get_or_insert_with(std::time::Instant::now);
            }
        }
        if let Some(since) = running_since {
            assert!(
                since.elapsed() < limit,
                "job {job_id} still {state} after running {limit:?}"
            );
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(1200),
            "job {job_id} still {state} after 20 minutes"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// Node names of a Slurm host list, as `scontrol show hostnames` prints them. A failed
/// `scontrol` or an empty list fails the test: every caller loops over the nodes to check
/// each, and no node would be no check at all.
pub fn expand_nodes(list: &str) -> Vec<String> {
    let out = Command::new("scontrol")
        .args(["show", "hostnames", list])
        .output()
        .expect("scontrol runs");
    assert!(
        out.status.success(),
        "scontrol show hostnames `{list}`: {out:?}"
    );
    let nodes: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    // Slurm shows a job without nodes as `(null)`, which scontrol echoes back as a name.
    assert!(
        !nodes.is_empty() && nodes.iter().all(|n| !n.contains('(')),
        "no node in the host list `{list}`: {nodes:?}"
    );
    nodes
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

mod job;
mod node_tmp;

pub(crate) use job::*;
pub(crate) use node_tmp::*;

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

/// Every name in [`LONG_FIRST`] is one a test gives `lab` or `lab_crash` (written in quotes in a
/// test file): a renamed test would silently lose its place in line.
#[test]
fn long_first_names_are_tests() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut text = String::new();
    for entry in std::fs::read_dir(&dir).unwrap().filter_map(Result::ok) {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("harness.rs") {
            text.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    for name in LONG_FIRST {
        assert!(
            text.contains(&format!("\"{name}\"")),
            "{name} is in LONG_FIRST but no test asks for a turn by that name"
        );
    }
}
