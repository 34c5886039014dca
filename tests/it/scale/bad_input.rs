//! Bad input at scale, with bounded memory and no quadratic step: an `--env-file` of 10,000
//! lines through `launch --dry-run`, a `SLURM_JOB_NODELIST` that would name a billion nodes
//! given to the bootstrap, a log of 100,000 lines followed with `logs -f` while it is written,
//! and a log of 200 MB printed and followed whole (in a few MB of memory) and by its tail
//! (reading only the tail). CLI tests against the fake Slurm of `runs::fake`: no cluster, so
//! they run in tests/run.sh's step. What each rayslurm cost is read from its /proc: its peak
//! resident memory (`VmHWM`, read every 2 ms while it runs: wait4's `ru_maxrss` would also
//! count this test process, whose memory the child had until its exec) and, exactly, the bytes
//! it read (`rchar` of /proc/PID/io, which a zombie keeps: read before it is reaped). The
//! bounds are loose (a copy of the whole log in memory, or a reread of it every 0.2 s, is what
//! they catch); docs/scale.md has the figures.
//! The host list's and the env file's linear times are unit tests beside their code
//! (`slurm::hostlist`, `launch::config::env_file`).

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::process::{Child, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;

use crate::harness::Run;
use crate::runs::fake::{Fake, INVALID_JOB_ID, write_final_state};

/// What a child cost.
#[derive(Debug)]
struct Cost {
    status: ExitStatus,
    /// Bytes it (and the fake Slurm commands it ran) read with read(2) and its kin (`rchar`).
    read: u64,
    /// Its peak resident memory (`VmHWM`), in KiB.
    peak_kib: u64,
    took: Duration,
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let (read, peak, took) = (self.read, self.peak_kib, self.took);
        write!(f, "{read} bytes read, peak {peak} KiB, {took:.2?}")
    }
}

/// The most memory a rayslurm that prints or follows a log of any size may take: a few MB of
/// its own and a 64 KiB buffer, never the log.
const PEAK_KIB: u64 = 64 * 1024;

/// Spawns `run` with stdout and stderr piped.
fn spawn(run: &Run) -> Child {
    run.command()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rayslurm starts")
}

/// The peak resident memory of the live process `pid` so far, in KiB (`None` once it has
/// ended: a zombie has no memory left to show).
fn peak_kib(pid: Pid) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Waits (at most `limit`, then kills it and fails) for the spawned `child` to end, reading
/// its peak memory all along and the bytes it read once it has ended, then reaps it. Its
/// streams must be read by the caller meanwhile.
fn wait_measured(child: &mut Child, started: Instant, limit: Duration) -> Cost {
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid fits"));
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    let mut peak = 0;
    while waitid(Id::Pid(pid), flags).expect("waitid") == WaitStatus::StillAlive {
        peak = peak_kib(pid).unwrap_or(0).max(peak);
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rayslurm still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = started.elapsed();
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).expect("a zombie's io");
    let read = io
        .lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("rchar");
    assert!(peak > 0, "no memory figure of rayslurm was read");
    Cost {
        status: child.wait().expect("rayslurm is reaped"),
        read,
        peak_kib: peak,
        took,
    }
}

/// Reads a stream to its end on a thread, keeping all of it.
fn read_all(stream: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stream).read_to_string(&mut text);
        text
    })
}

/// Fails the test if `run` called a Slurm client the test did not fake.
fn no_real_slurm(run: &Run, cost: &Cost, stderr: String) {
    run.check_no_real_slurm(&Output {
        status: cost.status,
        stdout: Vec::new(),
        stderr: stderr.into_bytes(),
    });
}

/// The 10,000 lines: `K_i=vi`, some `export`ed, every 1,000th a quoted value with spaces, a
/// comment every 100, and `K_0` given again half way (the later value wins, as ever).
fn env_file_of_10000_lines() -> String {
    let mut text = String::new();
    for i in 0..10_000 {
        if i % 100 == 0 {
            text.push_str(&format!("# part {}\n", i / 100));
        }
        match i {
            5_000 => text.push_str("K_0=again\n"),
            i if i % 1_000 == 999 => text.push_str(&format!("K_{i}=\"two words {i}\"\n")),
            i if i % 2 == 1 => text.push_str(&format!("export K_{i}=v{i}\n")),
            i => text.push_str(&format!("K_{i}=v{i}\n")),
        }
    }
    text
}

#[test]
fn launch_dry_run_with_an_env_file_of_10000_lines_exports_every_variable() {
    let fake = Fake::new();
    // The dry run asks Slurm whether it would take the job.
    fake.shim(
        "sbatch",
        "echo 'sbatch: Job 77 to start at 2026-11-27T19:00:00 using 1 processors on nodes node1 in partition lab' >&2",
    );
    let file = fake.logs.join("big.env");
    std::fs::write(&file, env_file_of_10000_lines()).unwrap();
    let t0 = Instant::now();
    let ran = fake
        .run([
            "launch",
            "--exp-name",
            "x",
            "--command",
            "true",
            "--dry-run",
        ])
        .arg("--env-file")
        .arg(&file)
        .arg("--env")
        .arg("K_5=flag")
        .expect_status(0)
        .expect_stdout_contains("export K_1=v1\n")
        .expect_stdout_contains("export K_2=v2\n")
        .expect_stdout_contains("export K_999='two words 999'\n")
        .expect_stdout_contains("export K_9998=v9998\n")
        .expect_stdout_contains("export K_9999='two words 9999'\n")
        .expect_stdout_count("export K_0=", 1)
        .expect_stdout_contains("export K_0=again\n")
        .expect_stdout_contains("export K_5=flag\n")
        .expect_stdout_lacks("export K_5=v5")
        .run();
    let took = t0.elapsed();
    eprintln!("launch --dry-run with 10,000 env lines: {took:?}");
    // 9,999 keys of the file (K_0 twice), K_5 once (the flag's value).
    let exports = ran
        .stdout
        .lines()
        .filter(|l| l.starts_with("export K_"))
        .count();
    assert_eq!(exports, 9_999, "every key once");
    let asked = fake.calls("sbatch");
    assert!(
        asked.len() == 1 && asked[0].starts_with("--test-only "),
        "{asked:?}"
    );
    // No bound on `took`: beside the end-to-end tests this took 12 s once on 2 cores, and a
    // quadratic step at 10,000 lines is caught where no load hides it, by env_file's unit test
    // (100,000 lines).
}

/// Slurm's node list is read before anything else the bootstrap does: one naming a billion
/// nodes is refused at once, by its value, with nothing allocated for it.
#[test]
fn bootstrap_refuses_a_node_list_of_a_billion_nodes_at_once_naming_it() {
    let fake = Fake::new();
    let t0 = Instant::now();
    let args = [
        "bootstrap",
        "--worker",
        "--ip-family=auto",
        "--ready-timeout=60",
        "--stop-grace=5",
    ];
    fake.run(args)
        .env("SLURM_JOB_ID", "101")
        .env("SLURMD_NODENAME", "node1")
        .env("SLURM_JOB_NODELIST", "node[1-999999999]")
        .expect_status(1)
        .expect_stderr_contains("cannot read SLURM_JOB_NODELIST `node[1-999999999]`")
        .expect_stderr_contains("names 999999999 hosts or more, more than the 1000000")
        .run();
    // Loose (the suite loads 2 cores): expanding a billion names would take minutes, or fail.
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
}

/// What `logs -f` printed of the numbered log: how many lines, the first and the last, and
/// the first line out of order (a line lost, doubled or moved), if any.
#[derive(Debug, Default)]
struct Seen {
    lines: u64,
    first: String,
    last: String,
    out_of_order: Option<String>,
}

const LINES: u64 = 100_000;

fn numbered(n: u64) -> String {
    format!("line {n:06} of the run's output")
}

#[test]
fn logs_follow_of_a_100000_line_log_written_as_it_is_followed_prints_each_line_once_in_order() {
    let fake = Fake::new();
    let log = fake.seed("big", "101", 1, Some(""));
    let state = fake.logs.join("big_101.state.json");
    let (running, done) = (fake.line("101", "RUNNING"), fake.line("101", "COMPLETED"));
    fake.shim(
        "squeue",
        &format!(
            "if [ -e {} ]; then {done}; else {running}; fi",
            state.display()
        ),
    );
    let run = fake.run(["logs", "-f", "big"]);
    let started = Instant::now();
    let mut child = spawn(&run);
    let stdout = child.stdout.take().unwrap();
    let stderr = read_all(child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut seen = Seen::default();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            seen.lines += 1;
            if seen.out_of_order.is_none() && line != numbered(seen.lines) {
                seen.out_of_order = Some(format!("line {}: {line:?}", seen.lines));
            }
            if seen.lines == 1 {
                seen.first.clone_from(&line);
            }
            seen.last = line;
        }
        seen
    });
    // The nodes write it in 50 bursts over 5 s, as a run does; then the run ends.
    let mut writer = OpenOptions::new().append(true).open(&log).unwrap();
    let mut n = 0;
    for _ in 0..50 {
        let burst: String = (0..LINES / 50)
            .map(|_| {
                n += 1;
                numbered(n) + "\n"
            })
            .collect();
        writer.write_all(burst.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    write_final_state(&state, "101", 0, "completed");
    let cost = wait_measured(&mut child, started, Duration::from_secs(90));
    let seen = reader.join().unwrap();
    let stderr = stderr.join().unwrap();
    no_real_slurm(&run, &cost, stderr.clone());
    let size = std::fs::metadata(&log).unwrap().len();
    eprintln!("logs -f of {LINES} lines ({size} bytes) written over 5 s: {cost}");
    assert_eq!(cost.status.code(), Some(0), "{stderr}");
    assert_eq!(seen.out_of_order, None, "{seen:?}");
    assert_eq!(
        (seen.lines, seen.first.as_str(), seen.last.as_str()),
        (LINES, numbered(1).as_str(), numbered(LINES).as_str())
    );
    // Each byte read once: a follower that read the log again at each look (every 0.2 s)
    // would read it tens of times.
    assert!(
        cost.read < size + (2 << 20),
        "read {} bytes of a {size}-byte log",
        cost.read
    );
    assert!(cost.peak_kib < PEAK_KIB, "peak {} KiB", cost.peak_kib);
}

/// A 200 MB log, quickly made: its first line, a hole of 200 MB (read as NUL bytes), its
/// last three lines.
fn log_of_200_mb(fake: &Fake, job: &str) -> (std::path::PathBuf, u64) {
    let log = fake.seed("huge", job, 1, Some("first line\n"));
    let mut file = OpenOptions::new().write(true).open(&log).unwrap();
    file.seek(SeekFrom::Start(200 << 20)).unwrap();
    file.write_all(b"\ntail 1\ntail 2\ntail 3\n").unwrap();
    let size = file.metadata().unwrap().len();
    (log, size)
}

/// What was printed: its bytes, its first 11 and last 21.
fn read_counting(
    stream: impl Read + Send + 'static,
) -> std::thread::JoinHandle<(u64, Vec<u8>, Vec<u8>)> {
    std::thread::spawn(move || {
        let mut stream = stream;
        let (mut total, mut head, mut tail) = (0u64, Vec::new(), Vec::new());
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = stream.read(&mut buf).unwrap();
            if n == 0 {
                return (total, head, tail);
            }
            total += n as u64;
            if head.len() < 11 {
                head.extend_from_slice(&buf[..n.min(11 - head.len())]);
            }
            tail.extend_from_slice(&buf[..n]);
            let cut = tail.len().saturating_sub(21);
            tail = tail.split_off(cut);
        }
    })
}

/// Runs `args` on the fake world to its end, measuring it; returns its cost and output.
fn measured(fake: &Fake, args: &[&str]) -> (Cost, (u64, Vec<u8>, Vec<u8>), String) {
    let run = fake.run(args.iter().copied());
    let started = Instant::now();
    let mut child = spawn(&run);
    let out = read_counting(child.stdout.take().unwrap());
    let err = read_all(child.stderr.take().unwrap());
    let cost = wait_measured(&mut child, started, Duration::from_secs(120));
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    no_real_slurm(&run, &cost, err.clone());
    eprintln!("{args:?}: printed {} bytes; {cost}", out.0);
    (cost, out, err)
}

#[test]
fn logs_of_a_200_mb_log_take_a_few_mb_and_its_tail_reads_only_the_tail() {
    let fake = Fake::new();
    let (_, size) = log_of_200_mb(&fake, "102");
    // The run has ended (its final state) and Slurm has forgotten it: `-f` prints it all and
    // stops.
    fake.final_state("huge", "102", 0, "completed");
    fake.shim("squeue", INVALID_JOB_ID);
    for args in [&["logs", "-f", "huge"][..], &["logs", "huge"]] {
        let (cost, (printed, head, tail), err) = measured(&fake, args);
        assert_eq!(cost.status.code(), Some(0), "{args:?}: {err}");
        assert_eq!(printed, size, "{args:?}: all of it");
        assert_eq!(head, b"first line\n", "{args:?}");
        assert_eq!(tail, b"tail 1\ntail 2\ntail 3\n", "{args:?}");
        assert!(
            cost.peak_kib < PEAK_KIB,
            "{args:?}: peak {} KiB",
            cost.peak_kib
        );
    }
    // The last lines only: read from the end, in a block or two, not the 200 MB before them.
    for args in [
        &["logs", "--tail", "2", "huge"][..],
        &["logs", "-f", "--tail", "2", "huge"],
    ] {
        let (cost, (printed, head, _), err) = measured(&fake, args);
        assert_eq!(cost.status.code(), Some(0), "{args:?}: {err}");
        assert_eq!(
            (printed, head.as_slice()),
            (14, &b"tail 2\ntail 3\n"[..11]),
            "{args:?}"
        );
        assert!(cost.read < 1 << 20, "{args:?}: read {} bytes", cost.read);
        assert!(
            cost.peak_kib < PEAK_KIB,
            "{args:?}: peak {} KiB",
            cost.peak_kib
        );
    }
}
