//! End to end, on the real test cluster: a `--secret` reaches the run's program and is never
//! shown. Its value, a random string given through the launching shell's environment, must
//! appear in no output (`-v`, `--json`, `status`, `status --json`, `logs`, a dry run of
//! `--again`), in no file under the run's directory and private tree that anyone but the user
//! may read, not in the job's log, and on no process's command line (sampled from /proc while
//! the run lives: sbatch, srun, the bootstrap, Ray and the program). `exec --secret` on a
//! persistent cluster the same, and its value never reaches Ray (nothing in the cluster's Ray
//! temp roots on the nodes, where Ray keeps its logs and job table). A check that plants the
//! value shows each of these checks can fail. Skipped loudly without the cluster, failing
//! under CI=true.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::harness::{
    Job, NO_DASHBOARD, lab, leftover_temp_dirs, node_tmp_entries, rayslurm, sha256_hex, text,
    unique_name,
};

/// The variable the secret is given in, from the launching shell.
const VAR: &str = "RS_E2E_TOKEN";

/// A value no other test or file has.
fn random_secret() -> String {
    let seed = format!(
        "{}-{:?}",
        unique_name("secret"),
        std::time::SystemTime::now()
    );
    format!("rsSecret{}", &sha256_hex(seed.as_bytes())[..24])
}

/// What the program prints to show it saw the secret, without printing it.
fn seen_line(secret: &str) -> String {
    format!("seen={}", &sha256_hex(secret.as_bytes())[..16])
}

/// The command that prints [`seen_line`] of `$RS_E2E_TOKEN`, then stays a while (to be seen).
fn seeing_command(stay: u32) -> String {
    format!("echo seen=$(printf %s \"${VAR}\" | sha256sum | cut -c1-16); sleep {stay}")
}

/// Every process's command line, sampled until stopped: those that hold the needle, and how
/// many samples were taken.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<(Vec<String>, u32)>,
}

impl Sampler {
    fn start(needle: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let needle = needle.to_owned();
        let stopped = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let mut found = Vec::new();
            let mut samples = 0;
            // One sample at least, the last after the stop was asked (what was running then
            // is still running): a busy machine may not run this thread before the stop.
            loop {
                found.extend(cmdlines_with(&needle));
                samples += 1;
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            (found, samples)
        });
        Self { stop, handle }
    }

    fn finish(self) -> (Vec<String>, u32) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap()
    }
}

/// The command lines (`pid: argv`) of the processes whose command line holds `needle`.
fn cmdlines_with(needle: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline
                .contains(needle)
                .then(|| format!("{}: {cmdline}", e.file_name().to_string_lossy()))
        })
        .collect()
}

/// Every regular file below `root` (links not followed).
fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if meta.is_dir() {
                dirs.push(e.path());
            } else if meta.is_file() {
                files.push(e.path());
            }
        }
    }
    files
}

/// The logs below `dir` (the run's, an exec job's): private, and still never to hold a secret.
fn logs_under(dir: &Path) -> Vec<PathBuf> {
    let logs: Vec<PathBuf> = files_under(dir)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "log"))
        .collect();
    assert!(!logs.is_empty(), "no log below {}", dir.display());
    logs
}

fn holds(path: &Path, needle: &str) -> bool {
    let bytes = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&bytes).contains(needle)
}

/// Where `secret` shows where it must not: the files below `roots` that anyone but the user
/// may read (group or other read bit), the `private` files that must not hold it whatever
/// their mode (the job's log), and the `outputs` (what a command printed, by name).
fn leaks(
    secret: &str,
    roots: &[&Path],
    private: &[PathBuf],
    outputs: &[(String, String)],
) -> Vec<String> {
    let mut found = Vec::new();
    for root in roots {
        for file in files_under(root) {
            let mode = std::fs::metadata(&file).map_or(0, |m| m.permissions().mode());
            if mode & 0o044 != 0 && holds(&file, secret) {
                found.push(format!("{} (mode {:o})", file.display(), mode & 0o777));
            }
        }
    }
    for file in private {
        if holds(file, secret) {
            found.push(format!("{} (the job's own)", file.display()));
        }
    }
    for (name, said) in outputs {
        if said.contains(secret) {
            found.push(format!("the output of {name}"));
        }
    }
    found
}

/// `rayslurm ARGS` in `dir` with the secret in its environment; (name, stdout + stderr), and
/// whether it succeeded.
fn said(dir: &Path, secret: &str, args: &[&str]) -> ((String, String), bool) {
    let out = rayslurm(args)
        .cwd(dir)
        .env("RAYSLURM_STATE_DIR", dir.join(".state"))
        .env(VAR, secret)
        .output();
    let (stdout, stderr) = text(&out);
    (
        (
            format!("`rayslurm {}`", args.join(" ")),
            format!("{stdout}\n{stderr}"),
        ),
        out.status.success(),
    )
}

/// The checks themselves can fail: a value planted in a file others may read, in the job's
/// log (mode 0600), in an output, and on a command line is found; one in a 0600 file is not.
#[test]
fn the_secret_checks_find_a_planted_value() {
    let secret = random_secret();
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open.txt");
    std::fs::write(&open, format!("a line with {secret}\n")).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let own = dir.path().join("own.txt");
    std::fs::write(&own, &secret).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o600)).unwrap();
    let log = dir.path().join("job.log");
    std::fs::write(&log, format!("seen {secret}\n")).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
    let found = leaks(
        &secret,
        &[dir.path()],
        &[log],
        &[("`status`".into(), format!("x {secret} y"))],
    );
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found.iter().any(|f| f.contains("open.txt (mode 644)")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.contains("job.log (the job's own)")),
        "{found:?}"
    );
    assert!(!found.iter().any(|f| f.contains("own.txt")), "{found:?}");

    let sampler = Sampler::start(&secret);
    let mut child = std::process::Command::new("sh")
        // Two commands: a shell given one may exec it, and its command line (with the
        // secret) is gone before the sampler looks. Alive until killed below: the sampler's
        // last look, after the stop, may come seconds later on a loaded machine (a whole run
        // once saw none with `sleep 2`).
        .args(["-c", "sleep 60; true", &secret])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    let (cmdlines, samples) = sampler.finish();
    let _ = child.kill();
    let _ = child.wait();
    assert!(samples > 0);
    assert!(
        cmdlines
            .iter()
            .any(|c| c.contains(&format!("sleep 60; true {secret}"))),
        "{cmdlines:?}"
    );
}

/// A 2-node run with Ray (sbatch, srun, the bootstrap on both nodes): the program sees the
/// secret; it is never shown, recorded where others may read it, nor on a command line.
#[test]
fn a_launch_secret_reaches_the_program_and_is_never_shown() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("e2e-secret");
    let secret = random_secret();
    let name = unique_name("secret").replace('-', "_");
    let load_env = lab.load_env();
    let command = seeing_command(6);
    let sampler = Sampler::start(&secret);
    let tmp_before = node_tmp_entries();
    let out = rayslurm([
        "-v",
        "launch",
        "--json",
        "--exp-name",
        &name,
        "-N",
        "2",
        "--secret",
        VAR,
        "--load-env",
        &load_env,
        "--object-store-memory",
        "100000000",
        NO_DASHBOARD,
        "--time",
        "5",
        "--command",
        &command,
    ])
    .cwd(&dir)
    .env("RAYSLURM_STATE_DIR", dir.join(".state"))
    .env(VAR, &secret)
    .output();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "launch failed: {stderr}");
    let job = Job::launched(&out.stdout, dir.clone(), tmp_before);
    let mut outputs = vec![(
        "`rayslurm -v launch`".to_owned(),
        format!("{stdout}\n{stderr}"),
    )];
    job.wait(Duration::from_secs(600));
    let (cmdlines, samples) = sampler.finish();
    let log = job.log_text();
    assert!(
        log.contains(&seen_line(&secret)),
        "the program did not see the secret:\n{log}"
    );
    for args in [
        vec!["status", "--json", &name],
        vec!["status", &name],
        vec!["-v", "logs", &name],
        vec!["-v", "launch", "--again", &name, "--dry-run"],
    ] {
        let (output, ok) = said(&dir, &secret, &args);
        assert!(ok, "{}: {}", output.0, output.1);
        outputs.push(output);
    }
    let found = leaks(&secret, &[&dir], &logs_under(&dir), &outputs);
    assert!(found.is_empty(), "the secret shows in: {found:#?}");
    assert!(samples >= 20, "too few samples of /proc: {samples}");
    assert!(
        cmdlines.is_empty(),
        "the secret is on command lines: {cmdlines:#?}"
    );
}

/// `up NAME` on one node, waited for (the secret in its environment too, as a user's shell
/// would have it).
fn up_one_node(lab: &crate::harness::Lab, dir: &Path, secret: &str, name: &str) -> Job {
    let load_env = lab.load_env();
    let tmp_before = node_tmp_entries();
    let ((_, up_said), ok) = said(
        dir,
        secret,
        &[
            "up",
            name,
            "--json",
            "-n",
            "1",
            "--no-exclusive",
            "--load-env",
            &load_env,
            "--object-store-memory",
            "100000000",
            "--time",
            "5",
        ],
    );
    assert!(ok, "up failed: {up_said}");
    let json = up_said.lines().next().unwrap_or_default();
    Job::launched(json.as_bytes(), dir.to_owned(), tmp_before)
}

/// `exec --secret` on a persistent cluster: the job sees it; it is never shown, never in a
/// file others may read, never on a command line, and never reaches Ray.
#[test]
fn an_exec_secret_reaches_the_job_and_never_ray() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("e2e-exec-secret");
    let secret = random_secret();
    let name = format!("sec{}", std::process::id());
    let sampler = Sampler::start(&secret);
    let cluster = up_one_node(lab, &dir, &secret, &name);
    let command = seeing_command(3);
    let (exec_said, ok) = said(
        &dir,
        &secret,
        &["-v", "exec", &name, "--secret", VAR, "--command", &command],
    );
    let (per_node_said, per_node_ok) = said(
        &dir,
        &secret,
        &[
            "exec",
            &name,
            "--per-node",
            "--secret",
            VAR,
            "--command",
            &command,
        ],
    );
    // Ray's temp roots on the nodes, while the cluster lives: its logs and job table.
    let in_ray: Vec<String> = leftover_temp_dirs(&cluster.id)
        .iter()
        .flat_map(|root| files_under(root))
        .filter(|f| holds(f, &secret))
        .map(|f| f.display().to_string())
        .collect();
    let mut outputs = vec![exec_said, per_node_said];
    for args in [
        vec!["queue", &name, "--json"],
        vec!["logs", &name, "1"],
        vec!["logs", &name, "2"],
        vec!["status", "--json", &name],
    ] {
        let (output, ok) = said(&dir, &secret, &args);
        assert!(ok, "{}: {}", output.0, output.1);
        outputs.push(output);
    }
    let _ = said(&dir, &secret, &["down", &name]);
    cluster.wait(Duration::from_secs(300));
    let (cmdlines, samples) = sampler.finish();
    assert!(ok, "exec failed: {}", outputs[0].1);
    assert!(per_node_ok, "exec --per-node failed: {}", outputs[1].1);
    let seen = seen_line(&secret);
    assert!(
        outputs[3].1.contains(&seen),
        "the job did not see it: {}",
        outputs[3].1
    );
    assert!(
        outputs[4].1.contains(&seen),
        "the rank did not see it: {}",
        outputs[4].1
    );
    assert!(in_ray.is_empty(), "the secret reached Ray: {in_ray:#?}");
    let found = leaks(&secret, &[&dir], &logs_under(&dir), &outputs);
    assert!(found.is_empty(), "the secret shows in: {found:#?}");
    assert!(samples >= 20, "too few samples of /proc: {samples}");
    assert!(
        cmdlines.is_empty(),
        "the secret is on command lines: {cmdlines:#?}"
    );
}
