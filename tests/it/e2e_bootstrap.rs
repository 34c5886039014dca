//! End-to-end tests of the bootstrap on the real test cluster with real Ray
//! (`bash tests/cluster/cluster.sh up`; skipped loudly without it, failing under CI=true).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::{Lab, lab, rayslurm, text, wait_job_end};

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

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
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

    /// Waits until the log holds `needle`.
    pub(crate) fn wait_for_log(&self, needle: &str, limit: Duration) {
        let start = Instant::now();
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
            let state = crate::harness::scontrol_job(&self.id)
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
}

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

pub(crate) fn launch_from(dir: &Path, name: &str, load_env: &str, args: &[&str]) -> Job {
    let mut argv = vec![
        "launch",
        "--json",
        "--exp-name",
        name,
        "--load-env",
        load_env,
    ];
    // A small object store for Ray runs; a per-node run has no Ray.
    if !args.contains(&"--per-node") {
        argv.extend(["--object-store-memory", "100000000"]);
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
    let mark = format!("RAYSLURM_RUN_MARK={job_id}-");
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

/// Where the lab keeps each node's /tmp.
pub(crate) const NODE_TMP: &str = "/var/lib/rayslurm-lab/tmp";

/// Ray's temp dirs of the job left on any node's /tmp.
pub(crate) fn leftover_temp_dirs(job_id: &str) -> Vec<PathBuf> {
    let Ok(nodes) = std::fs::read_dir(NODE_TMP) else {
        return Vec::new();
    };
    let prefix = format!("rs0-{job_id}.");
    nodes
        .filter_map(Result::ok)
        .flat_map(|n| std::fs::read_dir(n.path()).into_iter().flatten())
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// What the paths below the job's Ray temp roots start with: `/tmp/rs0-JOB.RESTART`, with a
/// random suffix when that name was taken.
pub(crate) fn temp_root_prefix(job_id: &str) -> String {
    format!("/tmp/rs0-{job_id}.")
}

/// The prefix of what tests make in a node's /tmp themselves (and remove): not a run's leftover.
const TEST_MADE: &str = "rstest-";

/// Every entry of every node's /tmp.
pub(crate) fn node_tmp_entries() -> BTreeSet<PathBuf> {
    let dirs = |p: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(p)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    dirs(Path::new(NODE_TMP))
        .iter()
        .flat_map(|node| dirs(node))
        .collect()
}

/// Entries that appeared in a node's /tmp since `before`, other than Ray temp roots (`rs0-ID.R`:
/// this job's is checked by [`leftover_temp_dirs`], other jobs' may still be running).
fn new_tmp_entries(before: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    node_tmp_entries()
        .into_iter()
        .filter(|p| !before.contains(p))
        // Other jobs' Ray temp roots, and what tests make on the nodes themselves (named
        // `rstest-`), which the tests running beside this one may not have removed yet.
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            !is_ray_temp_root(&name) && !name.starts_with(TEST_MADE)
        })
        .collect()
}

/// A run's Ray temp root, of any user (`rs{uid}-{job}...`): the shared-cluster tests run
/// jobs of other users beside this one.
fn is_ray_temp_root(name: &str) -> bool {
    name.strip_prefix("rs")
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(uid, _)| !uid.is_empty() && uid.bytes().all(|b| b.is_ascii_digit()))
}

pub(crate) fn assert_clean(job: &Job) {
    // Give the nodes' teardown a moment after Slurm has let the job go.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !leftovers(&job.id).is_empty() && Instant::now() < deadline {
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

#[test]
fn three_nodes_form_a_cluster_and_the_command_sees_them() {
    let Some((lab, _turn)) = lab("three_nodes_form_a_cluster_and_the_command_sees_them") else {
        return;
    };
    let dir = lab.workdir("copy");
    copy_example(&dir, "ray_nodes.py");
    let script = dir.join("ray_nodes.py");
    let cmd = format!(
        "python {} && env | grep -E '^(RAYSLURM_|RAY_ADDRESS=|PYTHONUNBUFFERED=)' && printf 'IPS<%s>\\n' \"$RAYSLURM_NODE_IPS\"",
        script.display()
    );
    let job = launch(lab, "three", &["-n", "3", "--command", &cmd]);
    let info = job.wait(Duration::from_secs(240));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
    assert!(log.contains("nodes alive: 3 (rayslurm says 3)"), "{log}");
    assert!(log.contains("total = 500000500000 from 3 nodes"), "{log}");
    // The job's nodes, head first, and their IPs (the lab may have more nodes than the job).
    let nodes = crate::harness::expand_nodes(&info["NodeList"]);
    for node in &nodes {
        assert!(
            log.contains(&format!("  {node} ")),
            "{node} ran a task: {log}"
        );
    }
    assert!(log.contains("RAYSLURM_NUM_NODES=3"), "{log}");
    assert!(log.contains("RAYSLURM_NODE_RANK=0"), "{log}");
    let head_ip = lab.ip_of(&nodes[0]);
    assert!(
        log.contains(&format!("RAYSLURM_HEAD_IP={head_ip}")),
        "{log}"
    );
    assert!(log.contains(&format!("RAY_ADDRESS={head_ip}:")), "{log}");
    assert!(log.contains("RAYSLURM_NUM_GPUS_PER_NODE=0"), "{log}");
    assert!(
        log.contains(&format!("Ray dashboard on {} at 127.0.0.1:", nodes[0])),
        "{log}"
    );
    assert!(log.contains("PYTHONUNBUFFERED=1"), "{log}");
    // RAYSLURM_NODE_IPS is one IP a line, head first.
    let ips_at = log.find("IPS<").expect("IPS printed") + "IPS<".len();
    let ips_end = ips_at + log[ips_at..].find('>').expect("IPS closed");
    let ips: Vec<&str> = log[ips_at..ips_end].lines().collect();
    assert_eq!(ips.len(), 3, "{ips:?}");
    assert_eq!(ips[0], head_ip, "head first");
    let mut sorted: Vec<String> = ips.iter().map(|s| (*s).to_owned()).collect();
    sorted.sort();
    let mut expected: Vec<String> = nodes.iter().map(|n| lab.ip_of(n)).collect();
    expected.sort();
    assert_eq!(sorted, expected);
    assert_eq!(job.state()["ending"], "completed");
    assert!(
        !job.ray_logs().exists(),
        "a run that succeeds keeps no Ray logs"
    );
    assert_clean(&job);
}

#[test]
fn exit_code_of_the_command_is_the_jobs() {
    let Some((lab, _turn)) = lab("exit_code_of_the_command_is_the_jobs") else {
        return;
    };
    // Also: a head-only flag reaches the head alone (a worker would refuse it), and without a
    // dashboard no dashboard is announced.
    let job = launch(
        lab,
        "exit3",
        &[
            "-n",
            "2",
            "--ray-head-args=--include-dashboard=false",
            "--command",
            "echo about to fail; exit 3",
        ],
    );
    let info = job.wait(Duration::from_secs(180));
    assert_eq!(info["JobState"], "FAILED", "log:\n{}", job.log_text());
    assert_eq!(info["ExitCode"], "3:0");
    let state = job.state();
    assert_eq!(state["exit_code"], 3);
    assert_eq!(state["ending"], "failed");
    let log = job.log_text();
    assert!(log.contains("about to fail"), "{log}");
    assert!(log.contains("cluster ready: 2 node(s)"), "{log}");
    assert!(!log.contains("Ray dashboard on"), "{log}");
    assert_clean(&job);
}

#[test]
fn scancel_during_the_run_leaves_no_ray_process() {
    let Some((lab, _turn)) = lab("scancel_during_the_run_leaves_no_ray_process") else {
        return;
    };
    let job = launch(
        lab,
        "cancel",
        &["-n", "3", "--command", "echo command-started; sleep 300"],
    );
    job.wait_for_log("command-started", Duration::from_secs(180));
    assert!(
        !leftovers(&job.id).is_empty(),
        "Ray runs during the job (the check can see it)"
    );
    let status = std::process::Command::new("scancel")
        .arg(&job.id)
        .status()
        .unwrap();
    assert!(status.success());
    let info = job.wait(Duration::from_secs(60));
    assert_eq!(info["JobState"], "CANCELLED", "log:\n{}", job.log_text());
    assert_clean(&job);
}

#[test]
fn two_jobs_share_a_node() {
    let Some((lab, _turn)) = lab("two_jobs_share_a_node") else {
        return;
    };
    let node = lab.nodes.last().unwrap().clone();
    let cmd = "python -c 'import ray, time; ray.init(); print(\"cpus\", ray.cluster_resources()[\"CPU\"]); time.sleep(8)'";
    let args = [
        "-n",
        "1",
        "--no-exclusive",
        "--cpus-per-task",
        "1",
        "-w",
        &node,
        "--command",
        cmd,
    ];
    let a = launch(lab, "share-a", &args);
    let b = launch(lab, "share-b", &args);
    let ia = a.wait(Duration::from_secs(240));
    let ib = b.wait(Duration::from_secs(240));
    for (job, info) in [(&a, &ia), (&b, &ib)] {
        let log = job.log_text();
        assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
        assert!(
            log.contains("cpus 1.0"),
            "Ray is told the job's one CPU: {log}"
        );
        assert_clean(job);
    }
    // They really ran at the same time on the same node.
    assert_eq!(ia["NodeList"], ib["NodeList"]);
    assert!(
        ia["StartTime"] <= ib["EndTime"] && ib["StartTime"] <= ia["EndTime"],
        "{ia:?} {ib:?}"
    );
}

#[test]
fn ipv6_head_address_works() {
    let Some((lab, _turn)) = lab("ipv6_head_address_works") else {
        return;
    };
    let cmd = "echo \"address=$RAY_ADDRESS\"; python -c 'import ray; ray.init(); print(\"alive\", sum(n[\"Alive\"] for n in ray.nodes()))'";
    let job = launch(
        lab,
        "ipv6",
        &["-n", "2", "--ip-family", "6", "--command", cmd],
    );
    let info = job.wait(Duration::from_secs(180));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
    let address = log
        .lines()
        .find_map(|l| l.strip_prefix("address="))
        .expect("address printed");
    let host = address
        .strip_prefix('[')
        .and_then(|a| a.split_once("]:"))
        .map(|(h, _)| h);
    assert!(
        host.is_some_and(|h| lab.node_ips6.iter().any(|ip| ip == h)),
        "bracketed IPv6 of a node: {address}"
    );
    assert!(log.contains("alive 2"), "{log}");
    assert_clean(&job);
}

#[test]
fn a_worker_that_cannot_start_fails_the_job_fast() {
    let Some((lab, _turn)) = lab("a_worker_that_cannot_start_fails_the_job_fast") else {
        return;
    };
    let dir = lab.workdir("badworker");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // `ray` that refuses to start on every node but the head (the job's first node).
    crate::harness::shim(
        &bin,
        "ray",
        &format!(
            "head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)\nif [ \"$(hostname)\" != \"$head\" ]; then echo 'simulated: cannot start ray here' >&2; exit 7; fi\nexec {}/bin/ray \"$@\"",
            lab.venv.display()
        ),
    );
    let load_env = format!("{}; export PATH={}:$PATH", lab.load_env(), bin.display());
    let tmp_before = node_tmp_entries();
    let out = rayslurm([
        "launch",
        "--json",
        "--exp-name",
        "badworker",
        "--load-env",
        &load_env,
        "-n",
        "2",
        "--time",
        "10",
        "--object-store-memory",
        "100000000",
        "--command",
        "echo should-not-run",
    ])
    .cwd(&dir)
    .output();
    assert!(out.status.success(), "{}", text(&out).1);
    let job = Job::launched(&out.stdout, dir, tmp_before);
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "FAILED", "log:\n{log}");
    assert!(!log.contains("\nshould-not-run"), "{log}");
    let worker = crate::harness::expand_nodes(&info["NodeList"])
        .pop()
        .unwrap();
    assert!(
        log.contains(&format!("Ray on node {worker} failed to start")),
        "{log}"
    );
    assert!(
        log.contains("simulated: cannot start ray here"),
        "the cause is shown: {log}"
    );
    assert_eq!(job.state()["ending"], "startup-failed");
    // The failed node keeps what `ray start` said, beside the job's log.
    let kept = job
        .ray_logs()
        .join("attempt-0")
        .join(&worker)
        .join("ray-start.out");
    let kept_text = std::fs::read_to_string(&kept).unwrap_or_default();
    assert!(
        kept_text.contains("simulated: cannot start ray here"),
        "{}: {kept_text}\nlog:\n{log}",
        kept.display()
    );
    let run_time = info["RunTime"].clone();
    assert!(
        run_time.starts_with("00:00:") || run_time.starts_with("00:01:"),
        "failed fast: {run_time}"
    );
    assert!(job.dir.exists());
    assert_clean(&job);
}

#[test]
fn ray_missing_on_a_worker_fails_the_job_fast() {
    let Some((lab, _turn)) = lab("ray_missing_on_a_worker_fails_the_job_fast") else {
        return;
    };
    // `ray` reaches PATH through a directory in the head node's own /tmp: the workers inherit
    // that PATH, but their /tmp has no such directory.
    let local = format!("{TEST_MADE}rayonly-{}", std::process::id());
    let load_env = format!(
        "mkdir -p /tmp/{local} && ln -sf {}/bin/ray /tmp/{local}/ray && export PATH=/tmp/{local}:$PATH",
        lab.venv.display()
    );
    let job = launch_with_env(
        lab,
        "noray",
        &load_env,
        &["-n", "2", "--command", "echo should-not-run"],
    );
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    let nodes = crate::harness::expand_nodes(&info["NodeList"]);
    let _ = std::fs::remove_dir_all(Path::new(NODE_TMP).join(&nodes[0]).join(&local));
    assert_eq!(info["JobState"], "FAILED", "log:\n{log}");
    assert!(!log.contains("\nshould-not-run"), "{log}");
    assert!(
        log.contains(&format!(
            "`ray` was not found on PATH on node {}; make --load-env put Ray on PATH on every node",
            nodes[1]
        )),
        "{log}"
    );
    assert_eq!(job.state()["ending"], "startup-failed");
    // No node got as far as writing a Ray log; no empty directories are left for them.
    assert!(
        !job.ray_logs().join("attempt-0").join(&nodes[1]).exists(),
        "{log}"
    );
    let run_time = &info["RunTime"];
    assert!(run_time.starts_with("00:00:"), "failed fast: {run_time}");
    assert_clean(&job);
}

#[test]
fn hostile_command_runs_exactly_as_written() {
    let Some((lab, _turn)) = lab("hostile_command_runs_exactly_as_written") else {
        return;
    };
    let cmd = "printf '[%s]\\n' \"it's\" '$HOME stays' \"a \\\"quoted\\\" word\" 'ü 日本 🚀' \"$((6*7))\"\necho `echo backticks` ; echo \"two;\" && echo 'lines'";
    let job = launch(lab, "hostile", &["-n", "1", "--no-ray", "--command", cmd]);
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
    let expected =
        "[it's]\n[$HOME stays]\n[a \"quoted\" word]\n[ü 日本 🚀]\n[42]\nbackticks\ntwo;\nlines\n";
    assert!(log.contains(expected), "expected:\n{expected}\nlog:\n{log}");
}

#[test]
fn plain_multi_node_program_without_ray() {
    let Some((lab, _turn)) = lab("plain_multi_node_program_without_ray") else {
        return;
    };
    let dir = lab.workdir("plaincopy");
    copy_example(&dir, "hello_nodes.sh");
    let cmd = format!("bash {}", dir.join("hello_nodes.sh").display());
    let job = launch(lab, "plain", &["-n", "3", "--no-ray", "--command", &cmd]);
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "log:\n{log}");
    for node in crate::harness::expand_nodes(&info["NodeList"]) {
        let ip = lab.ip_of(&node);
        assert!(
            log.contains(&format!("\n{node}\n")),
            "{node} answered: {log}"
        );
        assert!(log.contains(&format!("  {ip}\n")), "{ip} listed: {log}");
    }
    assert_eq!(job.state()["ending"], "completed");
}

/// The raylet of a worker node of the job (not the head's), seen from this host.
fn worker_raylet(job_id: &str, head_ip: &str) -> Option<u32> {
    let root = temp_root_prefix(job_id);
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .find_map(|e| {
            let pid: u32 = e.file_name().to_string_lossy().parse().ok()?;
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline);
            let ours = cmdline.contains(&root);
            let on_head = cmdline.contains(&format!("--node_ip_address={head_ip}\0"));
            (comm.trim() == "raylet" && ours && !on_head).then_some(pid)
        })
}

#[test]
fn a_node_failing_mid_run_fails_the_job_fast() {
    let Some((lab, _turn)) = lab("a_node_failing_mid_run_fails_the_job_fast") else {
        return;
    };
    let job = launch(
        lab,
        "nodefail",
        &["-n", "2", "--command", "echo command-started; sleep 300"],
    );
    job.wait_for_log("command-started", Duration::from_secs(600));
    let log = job.log_text();
    let head_ip = log
        .split("starting Ray head at ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .expect("head address in the log")
        .to_owned();
    let raylet = worker_raylet(&job.id, &head_ip).expect("the worker's raylet runs");
    let killed_at = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(raylet as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let info = job.wait(Duration::from_secs(60));
    let log = job.log_text();
    assert!(
        killed_at.elapsed() < Duration::from_secs(30),
        "the job ended {:?} after the node failed",
        killed_at.elapsed()
    );
    assert_eq!(info["JobState"], "FAILED", "log:\n{log}");
    assert!(
        log.contains("stopped unexpectedly"),
        "the worker names the failure: {log}"
    );
    assert!(
        log.contains("a worker node failed"),
        "the head names the cause: {log}"
    );
    assert_eq!(job.state()["ending"], "node-failed");
    // Every node keeps Ray's logs; the raylet's own log is among them.
    for node in crate::harness::expand_nodes(&info["NodeList"]) {
        let raylet_log = job
            .ray_logs()
            .join("attempt-0")
            .join(&node)
            .join("raylet.out");
        assert!(
            raylet_log.is_file(),
            "{} kept\nlog:\n{log}",
            raylet_log.display()
        );
    }
    assert!(log.contains("Ray's logs of node"), "{log}");
    assert_clean(&job);
}

#[test]
fn the_time_limit_stops_the_run_cleanly() {
    let Some((lab, _turn)) = lab("the_time_limit_stops_the_run_cleanly") else {
        return;
    };
    // A 3-minute limit with the warning asked for 60 s early: Slurm sends it 60 to 120 s in
    // (its timer may fire up to a minute early), well after the command started; the command
    // gets SIGTERM (the default --signal).
    let cmd = "trap 'echo got-sigterm; exit 143' TERM; echo command-started; sleep 300 & wait";
    let job = launch(
        lab,
        "timelimit",
        &[
            "-n",
            "2",
            "--time",
            "3",
            "--stop-grace",
            "60",
            "--command",
            cmd,
        ],
    );
    let info = job.wait(Duration::from_secs(200));
    let log = job.log_text();
    assert!(
        log.contains("command-started") && log.contains("got-sigterm"),
        "{log}"
    );
    assert_ne!(
        info["JobState"], "TIMEOUT",
        "stopped before the limit: {log}"
    );
    assert_eq!(job.state()["ending"], "time-limit");
    assert_eq!(job.state()["exit_code"], 143);
    assert_clean(&job);
}

/// Regression: the script asked Slurm for SIGTERM `--stop-grace` seconds before the limit, but
/// the bootstrap killed the command 10 s after passing it on, whatever the grace.
#[test]
fn the_command_gets_the_stop_grace_to_finish() {
    let Some((lab, _turn)) = lab("the_command_gets_the_stop_grace_to_finish") else {
        return;
    };
    // 20 s to "checkpoint" after SIGTERM: within the 60 s grace (less the teardown margin).
    let cmd = "trap 'echo got-sigterm; sleep 20; echo checkpoint-saved; exit 0' TERM; \
               echo command-started; sleep 300 & wait";
    let job = launch(
        lab,
        "stopgrace",
        &["--time", "3", "--stop-grace", "60", "--command", cmd],
    );
    let info = job.wait(Duration::from_secs(200));
    let log = job.log_text();
    assert!(
        log.contains("got-sigterm") && log.contains("checkpoint-saved"),
        "the command finished its 20 s of clean-up: {log}"
    );
    assert!(!log.contains("killing it"), "{log}");
    assert_ne!(info["JobState"], "TIMEOUT", "ended before the limit: {log}");
    // Warned, it exited 0, but it did not finish: the time limit stopped it.
    assert_eq!(job.state()["ending"], "time-limit");
    assert_eq!(job.state()["exit_code"], 143);
    assert_clean(&job);
}

#[test]
fn a_ready_timeout_fails_the_job_and_stops_starting_workers() {
    let Some((lab, _turn)) = lab("a_ready_timeout_fails_the_job_and_stops_starting_workers") else {
        return;
    };
    // Ray needs several seconds to start here: 2 s is never enough.
    let job = launch(
        lab,
        "readytimeout",
        &[
            "-n",
            "3",
            "--ready-timeout",
            "2",
            "--command",
            "echo should-not-run",
        ],
    );
    let info = job.wait(Duration::from_secs(60));
    let log = job.log_text();
    assert_eq!(info["JobState"], "FAILED", "log:\n{log}");
    assert!(log.contains("not ready after --ready-timeout 2 s"), "{log}");
    assert!(!log.contains("\nshould-not-run"), "{log}");
    assert_eq!(job.state()["ending"], "startup-failed");
    assert_clean(&job);
}

/// A regression test: `/tmp/rs{uid}-{jobid}` was used when it existed (made by another user it
/// failed the run, a link had the bootstrap fill its target). Job ids are guessable; a name
/// that is taken gets a fresh suffix, and what was there is left alone.
#[test]
fn a_temp_root_name_taken_on_the_nodes_does_not_fail_the_run() {
    let Some((lab, _turn)) = lab("a_temp_root_name_taken_on_the_nodes_does_not_fail_the_run")
    else {
        return;
    };
    // Held, so that the names can be taken on every node before it starts.
    let job = launch(
        lab,
        "takenroot",
        &["-n", "3", "--sbatch-arg=--hold", "--command", "true"],
    );
    let target = lab.workdir("takenroot-target");
    let mut planted = Vec::new();
    for (k, node) in lab.nodes.iter().enumerate() {
        let name = Path::new(NODE_TMP)
            .join(node)
            .join(format!("rs0-{}.0", job.id));
        if k % 2 == 0 {
            std::os::unix::fs::symlink(&target, &name).unwrap();
        } else {
            std::fs::create_dir(&name).unwrap();
        }
        planted.push(name);
    }
    let released = std::process::Command::new("scontrol")
        .args(["release", &job.id])
        .output()
        .unwrap();
    assert!(released.status.success(), "{released:?}");
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    for p in &planted {
        let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir(p));
    }
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert_eq!(job.state()["ending"], "completed", "{log}");
    let said = format!("`/tmp/rs0-{}.0` was there already", job.id);
    assert_eq!(log.matches(&said).count(), lab.nodes.len(), "{log}");
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "nothing written through the link"
    );
    assert_clean(&job);
}
