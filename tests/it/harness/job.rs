//! A job on the lab: launched as a user would, waited for, and checked the way every
//! end-to-end test checks it (its state file, its log, what it left on the nodes), with the
//! expectations the e2e files share: a run that fails at start-up, and a run ended from outside
//! (scancel, a killed process) that must end within a bound.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::node_tmp::{leftover_temp_dirs, new_tmp_entries, node_tmp_entries, temp_root_prefix};
use super::{Lab, rayslurm, scontrol_job, text, wait_job_end};

/// A submitted job.
pub(crate) struct Job {
    pub(crate) id: String,
    pub(crate) log: PathBuf,
    pub(crate) dir: PathBuf,
    /// Every node's /tmp entries before the launch.
    tmp_before: BTreeSet<PathBuf>,
}

impl Job {
    /// The job that `launch --json` printed in `stdout`.
    pub(crate) fn launched(stdout: &[u8], dir: PathBuf, tmp_before: BTreeSet<PathBuf>) -> Job {
        let v: serde_json::Value = serde_json::from_slice(stdout).unwrap();
        Job {
            id: v["job_id"].as_str().unwrap().to_owned(),
            log: PathBuf::from(v["log"].as_str().unwrap()),
            dir,
            tmp_before,
        }
    }

    /// The job's log as text; bytes that are not UTF-8 (a command may print any) as U+FFFD.
    pub(crate) fn log_text(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default()).into_owned()
    }

    /// Where the nodes keep Ray's logs when the run fails.
    pub(crate) fn ray_logs(&self) -> PathBuf {
        self.log.with_extension("ray-logs")
    }

    pub(crate) fn state(&self) -> serde_json::Value {
        let path = self.log.with_extension("state.json");
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "no state file {}: {e}\nlog:\n{}",
                path.display(),
                self.log_text()
            )
        }))
        .unwrap()
    }

    /// Waits until the log holds `needle`. `limit` counts only the time the job runs, as in
    /// [`wait_job_end`]: time queued behind other tests' jobs is not the job's.
    pub(crate) fn wait_for_log(&self, needle: &str, limit: Duration) {
        let start = self.wait_started();
        while !self.log_text().contains(needle) {
            assert!(
                start.elapsed() < limit,
                "no `{needle}` in the log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Waits until Slurm has started the job (time queued behind other tests' jobs is not the
    /// job's) and returns when that was seen.
    pub(crate) fn wait_started(&self) -> Instant {
        let start = Instant::now();
        loop {
            let state = scontrol_job(&self.id)
                .get("JobState")
                .cloned()
                .unwrap_or_default();
            if !matches!(state.as_str(), "PENDING" | "") {
                return Instant::now();
            }
            assert!(
                start.elapsed() < Duration::from_secs(1200),
                "job {} still pending after 20 minutes",
                self.id
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The run's row of `status --json`.
    pub(crate) fn status_row(&self) -> serde_json::Value {
        let out = rayslurm(["status", "--json", &self.id]).output();
        let rows: Vec<serde_json::Value> =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out).1));
        rows[0].clone()
    }

    pub(crate) fn wait(&self, limit: Duration) -> HashMap<String, String> {
        let info = wait_job_end(&self.id, limit);
        // The log may still be flushed by slurmstepd a moment after the job ends.
        std::thread::sleep(Duration::from_millis(300));
        info
    }

    /// Waits for a run that must fail while it starts (within `limit` of running): Slurm's
    /// FAILED, the state file's `startup-failed`, and no line of the command's
    /// `echo should-not-run` in the log. Returns the final `scontrol` view and the log.
    pub(crate) fn expect_startup_failure(
        &self,
        limit: Duration,
    ) -> (HashMap<String, String>, String) {
        let info = self.wait(limit);
        let log = self.log_text();
        assert_eq!(info["JobState"], "FAILED", "log:\n{log}");
        assert_eq!(self.state()["ending"], "startup-failed", "{log}");
        assert!(!log.contains("\nshould-not-run"), "{log}");
        (info, log)
    }

    /// Ends the running job from outside with `kill` (scancel, a signal to one of its
    /// processes) and expects Slurm to have let it go within `within` of the kill. Returns the
    /// final `scontrol` view and the log.
    pub(crate) fn kill_and_expect_end(
        &self,
        kill: impl FnOnce(),
        within: Duration,
    ) -> (HashMap<String, String>, String) {
        let killed_at = Instant::now();
        kill();
        let info = self.wait(within);
        let took = killed_at.elapsed();
        let log = self.log_text();
        assert!(
            took < within,
            "the job ended {took:?} after the kill\nlog:\n{log}"
        );
        (info, log)
    }

    /// Gives the run the time limit's warning now, as Slurm would near the limit: SIGURG to the
    /// batch step alone (`--signal=B:URG@GRACE`), which the bootstrap takes for the warning
    /// whoever sends it, its stop grace counted from there. A test that needs *a* warning, not
    /// Slurm's own, sends it with this and asks for a long `--time`, so that Slurm's never
    /// comes (`the_time_limit_stops_the_run_cleanly` waits for the real one). Only once the log
    /// shows the command started: before the bootstrap's handler is installed, URG is ignored.
    /// Never with `--full`: the workers would get it too, and they take URG as a stop.
    pub(crate) fn warn_time_limit(&self) {
        let out = std::process::Command::new("scancel")
            .args(["--batch", "--signal=URG", &self.id])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scancel --batch --signal=URG: {out:?}"
        );
    }

    /// `scancel`s the job (a [`Job::kill_and_expect_end`] kill).
    pub(crate) fn scancel(&self) {
        let status = std::process::Command::new("scancel")
            .arg(&self.id)
            .status()
            .unwrap();
        assert!(status.success(), "scancel {}", self.id);
    }
}

/// A test that fails cancels its job: left running, it would hold its nodes until its time
/// limit, and every test queued behind it would wait that long too. It also prints the end of
/// the job's log, which libtest shows with the failure: CI keeps only its own output.
impl Drop for Job {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = std::process::Command::new("scancel").arg(&self.id).status();
            let log = self.log_text();
            let lines: Vec<&str> = log.lines().collect();
            let shown = &lines[lines.len().saturating_sub(LOG_LINES_SHOWN)..];
            eprintln!(
                "job {}'s log {} ({} of {} lines; Ray's logs, if kept, in {}):\n{}",
                self.id,
                self.log.display(),
                shown.len(),
                lines.len(),
                self.ray_logs().display(),
                shown.join("\n")
            );
        }
    }
}

/// How much of a failed test's job log is printed.
const LOG_LINES_SHOWN: usize = 60;

/// Launches in a fresh shared directory with the lab's Ray and a small object store.
pub(crate) fn launch(lab: &Lab, name: &str, args: &[&str]) -> Job {
    launch_with_env(lab, name, &lab.load_env(), args)
}

/// [`launch`] with another `--load-env`.
pub(crate) fn launch_with_env(lab: &Lab, name: &str, load_env: &str, args: &[&str]) -> Job {
    launch_from(&lab.workdir(name), name, load_env, args)
}

/// [`launch`] from a directory the test prepared (with the files the command needs).
pub(crate) fn launch_in(lab: &Lab, dir: &Path, name: &str, args: &[&str]) -> Job {
    launch_from(dir, name, &lab.load_env(), args)
}

/// [`launch_in`] with Ray's dashboard, as a launch without `--ray-head-args` has it, for the
/// tests of what the dashboard serves or announces.
pub(crate) fn launch_with_dashboard(lab: &Lab, dir: &Path, name: &str, args: &[&str]) -> Job {
    launch_argv(dir, name, &lab.load_env(), args, Dashboard::Kept)
}

pub(crate) fn launch_from(dir: &Path, name: &str, load_env: &str, args: &[&str]) -> Job {
    launch_argv(dir, name, load_env, args, Dashboard::Off)
}

/// Two runs of `args` on `node` at the same time, sharing it (`--no-exclusive`, one CPU each),
/// launched from `dir` as `names`: both held at submission and released together, so that the
/// scheduler starts them in one pass (else a whole-node job of another test, queued before the
/// second, has the node between the two; seen: the second started after the first had ended).
/// Each with Slurm's last view of it, once both have ended; that they overlapped on `node` is
/// checked: both runs' processes were seen alive at one moment (Slurm's start and end times,
/// in whole seconds, cannot tell two runs one after the other from two at once).
pub(crate) fn two_at_once_on(
    lab: &crate::harness::Lab,
    dir: &Path,
    node: &str,
    names: [&str; 2],
    args: &[&str],
) -> [(Job, HashMap<String, String>); 2] {
    let mut argv = vec![
        "-n",
        "1",
        "--no-exclusive",
        "--cpus-per-task",
        "1",
        "-w",
        node,
    ];
    argv.push("--sbatch-arg=--hold");
    argv.extend_from_slice(args);
    let [a, b] = names.map(|name| launch_from(dir, name, &lab.load_env(), &argv));
    let released = std::process::Command::new("scontrol")
        .args(["release", &format!("{},{}", a.id, b.id)])
        .output()
        .unwrap();
    assert!(released.status.success(), "{released:?}");
    let watch = AtOnce::watch([&a.id, &b.id]);
    let ia = a.wait(Duration::from_secs(240));
    let ib = b.wait(Duration::from_secs(240));
    for info in [&ia, &ib] {
        assert_eq!(info["NodeList"], node, "{info:?}");
    }
    assert!(
        watch.seen(),
        "the two runs' processes were never alive at the same time: {ia:?} {ib:?}"
    );
    [(a, ia), (b, ib)]
}

/// Watches, on a thread of its own, whether the processes of two runs (their Ray's, which
/// carry the run's mark) are alive at one moment.
struct AtOnce {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    watcher: std::thread::JoinHandle<bool>,
}

impl AtOnce {
    fn watch(job_ids: [&str; 2]) -> Self {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let marks = job_ids.map(|id| format!("{RUN_MARK}={id}-"));
        let stopped = stop.clone();
        let watcher = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let alive = marked_processes(&marks);
                if alive.iter().all(|n| *n > 0) {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            false
        });
        Self { stop, watcher }
    }

    /// Whether both were seen alive at once (the watch ends).
    fn seen(self) -> bool {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.watcher.join().expect("the watcher ends")
    }
}

/// The variable that marks every Ray process of a run: `RAYSLURM_RUN_MARK=JOB-...`.
const RUN_MARK: &str = "RAYSLURM_RUN_MARK";

/// How many live processes carry each of `marks` (a `RUN_MARK=JOB-` prefix) in their
/// environment, in one pass over /proc.
fn marked_processes<const N: usize>(marks: &[String; N]) -> [usize; N] {
    let mut counts = [0; N];
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        if entry.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        for (k, mark) in marks.iter().enumerate() {
            if environ
                .split(|b| *b == 0)
                .any(|v| v.starts_with(mark.as_bytes()))
            {
                counts[k] += 1;
            }
        }
    }
    counts
}

/// What a test's Ray run without a use for Ray's dashboard passes (see [`Dashboard::Off`]).
pub(crate) const NO_DASHBOARD: &str = "--ray-head-args=--include-dashboard=false";

/// Whether a Ray run launched by the harness gets Ray's dashboard.
#[derive(PartialEq)]
enum Dashboard {
    Kept,
    /// `--ray-head-args=--include-dashboard=false`, unless the test gives its own head
    /// arguments: the dashboard is a tenth of a Ray job's CPU (docs/benchmarks.md), and the lab's
    /// 2 cores are what the suite waits on. The tests of the dashboard, of Ray's Jobs API, of
    /// clusters and of the docs' examples keep it.
    Off,
}

fn launch_argv(dir: &Path, name: &str, load_env: &str, args: &[&str], dashboard: Dashboard) -> Job {
    let mut argv = vec![
        "launch",
        "--json",
        "--exp-name",
        name,
        "--load-env",
        load_env,
    ];
    // A small object store for Ray runs; a per-node run has no Ray.
    let ray = !args.contains(&"--per-node") && !args.contains(&"--no-ray");
    if !args.contains(&"--per-node") {
        argv.extend(["--object-store-memory", "100000000"]);
    }
    if ray && dashboard == Dashboard::Off && !args.iter().any(|a| a.starts_with("--ray-head-args"))
    {
        argv.push(NO_DASHBOARD);
    }
    if !args.contains(&"--time") {
        argv.extend(["--time", "10"]);
    }
    argv.extend_from_slice(args);
    let tmp_before = node_tmp_entries();
    let out = rayslurm(argv).cwd(dir).output();
    assert!(out.status.success(), "launch failed: {}", text(&out).1);
    Job::launched(&out.stdout, dir.to_owned(), tmp_before)
}

pub(crate) fn copy_example(job_dir: &Path, name: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    std::fs::copy(src, job_dir.join(name)).unwrap();
}

/// Processes of this job still alive on any node. The lab's nodes are PID namespaces below
/// this host's, so the host sees them all: a process is the job's if it carries the job's run
/// mark, holds a file below the job's Ray temp root, or is the job's watchdog.
pub(crate) fn leftovers(job_id: &str) -> Vec<String> {
    let mark = format!("{RUN_MARK}={job_id}-");
    let root = temp_root_prefix(job_id);
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let marked = environ
            .split(|b| *b == 0)
            .any(|v| v.starts_with(mark.as_bytes()));
        // Independent of how the bootstrap finds its processes: Ray's daemons and workers name
        // the job's temp root in their arguments.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let named = String::from_utf8_lossy(&cmdline).contains(&root);
        // The head's watchdog ends with the run.
        let watchdog = String::from_utf8_lossy(&cmdline).contains("--watchdog")
            && environ
                .split(|b| *b == 0)
                .any(|v| v == format!("SLURM_JOB_ID={job_id}").as_bytes());
        let holds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|fds| {
                fds.filter_map(Result::ok)
                    .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                    .any(|t| t.to_string_lossy().starts_with(&root))
            })
            .unwrap_or(false);
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
        if (marked || holds || named || watchdog) && !zombie {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            found.push(format!("{pid} {}", comm.trim()));
        }
    }
    found
}

pub(crate) fn assert_clean(job: &Job) {
    // Give the nodes' teardown a moment after Slurm has let the job go, and the other tests'
    // programs (a pip beside this one) time to remove the temp files they make as they run.
    let deadline = Instant::now() + Duration::from_secs(10);
    while (!leftovers(&job.id).is_empty() || !new_tmp_entries(&job.tmp_before).is_empty())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        leftovers(&job.id),
        Vec::<String>::new(),
        "processes left behind\nlog:\n{}",
        job.log_text()
    );
    assert_eq!(
        leftover_temp_dirs(&job.id),
        Vec::<PathBuf>::new(),
        "temp dirs left behind"
    );
    assert_eq!(
        new_tmp_entries(&job.tmp_before),
        Vec::<PathBuf>::new(),
        "files left behind in a node's /tmp"
    );
}

/// PIDs of the processes whose command line holds every one of `parts`.
pub(crate) fn processes_with(parts: &[&str]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            !zombie && parts.iter().all(|p| cmdline.contains(p))
        })
        .collect()
}
