//! End-to-end tests of long runs on the real test cluster: the time limit's warning, a
//! checkpoint in `RAYSLURM_RUN_DIR`, requeue and resume (by rayslurm at the time limit, by Slurm
//! on `scontrol requeue`), runs that must never be requeued, `cancel --signal`, and chains
//! (`--after`). The program is `examples/resumable_counter.py`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::harness::{Job, assert_clean, copy_example, launch, launch_in, node_tmp_entries};
use crate::harness::{lab, rayslurm, scontrol_job, text, wait_within};

const COUNTER: &str = "resumable_counter.py";

/// The step an attempt's first line says it started at (`attempt N: starting at step S`).
fn started_at_step(log: &str, attempt: u32) -> Option<u32> {
    let prefix = format!("attempt {attempt}: starting at step ");
    log.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|s| s.parse().ok())
}

fn counter(steps: u32) -> String {
    format!("python {COUNTER} {steps}")
}

/// Asks the running counter for a checkpoint (`cancel --signal USR1`, which it saves on and
/// goes on) and waits until it says it saved one; returns the step saved, past 0 (it saves
/// after a step): a checkpoint a later attempt can resume from, whenever the run is stopped.
fn checkpoint_now(job: &Job) -> u32 {
    let out = rayslurm(["cancel", &job.id, "--signal", "USR1"]).output();
    assert!(out.status.success(), "{}", text(&out).1);
    job.wait_for_log("(asked); going on", Duration::from_secs(60));
    let log = job.log_text();
    let step = log
        .lines()
        .filter_map(|l| l.split_once("checkpoint at step ").map(|(_, rest)| rest))
        .find_map(|rest| rest.trim_end().strip_suffix(" (asked); going on"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `checkpoint at step N (asked)` line:\n{log}"));
    assert!(step > 0, "{log}");
    step
}

/// Spawns `launch --follow --json` (its `command`): the job its first line names, the child,
/// and its stdout as it comes, whole once the child ends ([`wait_within`] it, then join).
fn follow_launch(mut command: Command, dir: &Path) -> (Job, Child, JoinHandle<String>) {
    let tmp_before = node_tmp_entries();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (first_line, first) = mpsc::channel();
    let lines = BufReader::new(child.stdout.take().unwrap());
    let followed = std::thread::spawn(move || {
        let mut all = String::new();
        for line in lines.lines().map_while(Result::ok) {
            if all.is_empty() {
                let _ = first_line.send(line.clone());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let Ok(first) = first.recv_timeout(Duration::from_secs(120)) else {
        let out = wait_within(child, Duration::from_secs(60));
        panic!("no JSON from launch: {}", text(&out).1);
    };
    let job = Job::launched(first.as_bytes(), dir.to_owned(), tmp_before);
    (job, child, followed)
}

#[test]
fn the_time_limit_warns_the_command_which_checkpoints_and_the_requeued_run_resumes() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("timelimit");
    copy_example(&dir, COUNTER);
    // The test gives the warning as soon as the counter has saved a checkpoint past step 0
    // (seconds into the first attempt; a 10-minute limit: Slurm's own never comes), so 20
    // one-second steps never fit in it, and the second attempt resumes.
    // Without Ray (the counter does not use it; two Ray starts saved on the lab's 2 cores): the
    // warning, the checkpoint, the requeue and the resume are the bootstrap's, the same with
    // Ray or without. A Ray run's next attempt after a requeue is
    // `a_job_slurm_requeues_as_preemption_does_resumes_on_its_next_attempt`'s, a Ray run
    // stopped by the time limit `the_time_limit_stops_the_run_cleanly`'s.
    let follow = rayslurm([
        "launch",
        "--exp-name",
        "timelimit",
        "--load-env",
        &lab.load_env(),
        "--no-ray",
        "--time",
        "10",
        "--stop-grace",
        "45",
        "--requeue",
        "--follow",
        "--json",
        "--command",
        &counter(20),
    ])
    .cwd(&dir)
    .command();
    let (job, child, followed) = follow_launch(follow, &dir);
    job.wait_for_log("attempt 1: starting at step 0", Duration::from_secs(300));
    let saved = checkpoint_now(&job);
    job.warn_time_limit();
    let out = wait_within(child, Duration::from_secs(900));
    let stdout = followed.join().unwrap();
    let stderr = text(&out).1;
    assert_eq!(
        out.status.code(),
        Some(0),
        "--follow's exit\n{stdout}\n{stderr}"
    );
    // --follow showed both attempts, the first one's checkpoint and the second's end.
    assert!(stdout.contains("attempt 1: starting at step 0"), "{stdout}");
    assert!(stdout.contains("stopping: checkpoint at step"), "{stdout}");
    assert!(stdout.contains("======== attempt 2 of job"), "{stdout}");
    let resumed = started_at_step(&stdout, 2).unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        resumed >= saved,
        "attempt 2 resumed from the checkpoint (at step {saved} or later): {stdout}"
    );
    assert!(stdout.contains("done at step 20"), "{stdout}");
    assert!(stdout.contains("the time limit is near"), "{stdout}");
    let row = job.status_row();
    assert_eq!(row["attempts"], 2, "{row}");
    assert_eq!(row["exit_code"], 0, "{row}");
    assert_eq!(row["state"], "COMPLETED", "{row}");
    let state_file = row["state_file"].as_str().unwrap();
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state_file).unwrap()).unwrap();
    assert_eq!(state["attempts"][0]["ending"], "time-limit", "{state}");
    assert_eq!(state["attempts"][0]["requeued"], true, "{state}");
    assert_eq!(state["attempts"][1]["ending"], "completed", "{state}");
    assert_eq!(scontrol_job(&job.id)["Restarts"], "1");
    assert_clean(&job);
}

#[test]
fn a_job_slurm_requeues_as_preemption_does_resumes_on_its_next_attempt() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("preempted");
    copy_example(&dir, COUNTER);
    let job = launch_in(
        lab,
        &dir,
        "preempted",
        &["--requeue", "--command", &counter(15)],
    );
    job.wait_for_log("attempt 1: starting at step 0", Duration::from_secs(300));
    // A checkpoint past step 0 to resume from.
    let saved = checkpoint_now(&job);
    // What preemption with PreemptMode=REQUEUE does: SIGTERM to the job, then Slurm requeues
    // it by itself.
    let out = Command::new("scontrol")
        .args(["requeue", &job.id])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = job.wait(Duration::from_secs(600));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert_eq!(info["Restarts"], "1", "{log}");
    let resumed = started_at_step(&log, 2).unwrap_or_else(|| panic!("{log}"));
    assert!(
        resumed >= saved,
        "resumed from its checkpoint (at step {saved} or later): {log}"
    );
    assert!(log.contains("done at step 15"), "{log}");
    let state = job.state();
    assert_eq!(state["attempts"][0]["ending"], "preempted", "{state}");
    assert_eq!(state["attempts"][1]["ending"], "completed", "{state}");
    let row = job.status_row();
    assert_eq!(
        (row["attempts"].clone(), row["exit_code"].clone()),
        (2.into(), 0.into()),
        "{row}"
    );
    assert_clean(&job);
}

#[test]
fn a_command_that_fails_by_itself_is_never_requeued() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let job = launch(
        lab,
        "fails4",
        &["--requeue", "--no-ray", "--command", "exit 4"],
    );
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    assert_eq!(info["JobState"], "FAILED", "{log}");
    assert_eq!(info["ExitCode"], "4:0", "{log}");
    // Slurm would show it PENDING again within seconds had it been requeued.
    std::thread::sleep(Duration::from_secs(5));
    let info = scontrol_job(&job.id);
    assert_eq!(
        (info["JobState"].as_str(), info["Restarts"].as_str()),
        ("FAILED", "0")
    );
    let state = job.state();
    assert_eq!(
        (state["ending"].clone(), state["requeued"].clone()),
        ("failed".into(), false.into())
    );
    assert_eq!(job.status_row()["exit_code"], 4);
    assert_clean(&job);
}

/// `--restarts-on-error 1` (a task file's `max_restarts_on_errors: 1`): the failed command's
/// job goes back in the queue once, the next attempt runs it again, and after its second
/// failure the run ends failed, saying its budget is spent.
#[test]
fn a_failed_command_is_restarted_within_restarts_on_error_then_the_run_fails() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let job = launch(
        lab,
        "onerror",
        &[
            "--restarts-on-error",
            "1",
            "--no-ray",
            "--command",
            "echo \"try $RAYSLURM_RESTART_COUNT\"; exit 3",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(
        (info["JobState"].as_str(), info["Restarts"].as_str()),
        ("FAILED", "1"),
        "{log}"
    );
    assert!(log.contains("try 0") && log.contains("try 1"), "{log}");
    let state = job.state();
    let attempts: Vec<_> = (0..2)
        .map(|i| {
            let a = &state["attempts"][i];
            (a["ending"].clone(), a["requeued"].clone())
        })
        .collect();
    assert_eq!(
        attempts,
        [
            ("failed".into(), true.into()),
            ("failed".into(), false.into())
        ],
        "{state}"
    );
    let said = state["attempts"][1]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("not restarted: the command failed 2 times (--restarts-on-error 1)"),
        "{state}"
    );
    assert_clean(&job);
}

#[test]
fn a_cancelled_run_is_never_requeued_and_a_signal_reaches_the_command_alone() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("cancelled");
    copy_example(&dir, COUNTER);
    let job = launch_in(
        lab,
        &dir,
        "cancelled",
        &["--requeue", "--command", &counter(600)],
    );
    job.wait_for_log("attempt 1: starting at step 0", Duration::from_secs(300));
    // `cancel --signal`: the command saves and goes on; TERM too reaches it without stopping
    // the run (it is what this program stops on, so it is not sent here).
    let out = rayslurm(["cancel", &job.id, "--signal", "USR1"]).output();
    assert!(out.status.success(), "{}", text(&out).1);
    job.wait_for_log("(asked); going on", Duration::from_secs(30));
    assert_eq!(scontrol_job(&job.id)["JobState"], "RUNNING");
    let out = rayslurm(["cancel", &job.id]).output();
    assert!(out.status.success(), "{}", text(&out).1);
    let info = job.wait(Duration::from_secs(120));
    std::thread::sleep(Duration::from_secs(5));
    let info_later = scontrol_job(&job.id);
    let log = job.log_text();
    assert_eq!(info["JobState"], "CANCELLED", "{log}");
    assert_eq!(
        (
            info_later["JobState"].as_str(),
            info_later["Restarts"].as_str()
        ),
        ("CANCELLED", "0"),
        "{log}"
    );
    let state = job.state();
    assert_eq!(
        (state["ending"].clone(), state["requeued"].clone()),
        ("stopped".into(), false.into()),
        "{state}"
    );
    assert_clean(&job);
}

#[test]
fn a_run_after_another_waits_for_it_and_resumes_from_its_checkpoint() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("chain");
    copy_example(&dir, COUNTER);
    // One CPU each, not whole nodes: they run one after another whatever the nodes.
    let chained = |name, after: Option<&str>, steps| {
        let mut args = vec!["--no-ray", "--no-exclusive", "--cpus-per-task", "1"];
        if let Some(after) = after {
            args.extend(["--after", after]);
        }
        let command = counter(steps);
        args.extend(["--command", &command]);
        launch_in(lab, &dir, name, &args)
    };
    // Still running when the second is launched (a few seconds at most).
    let first = chained("chainone", None, 8);
    first.wait_for_log("attempt 1: starting at step 0", Duration::from_secs(300));
    // Named by experiment: the latest run of `chainone`, still running.
    let second = chained("chaintwo", Some("chainone"), 10);
    let pending = scontrol_job(&second.id);
    assert_eq!(pending["JobState"], "PENDING", "{pending:?}");
    assert_eq!(
        pending["Dependency"],
        format!("afterany:{}(unfulfilled)", first.id)
    );
    let info = second.wait(Duration::from_secs(300));
    let log = second.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains("attempt 1: starting at step 8 of 10"), "{log}");
    assert!(log.contains("done at step 10"), "{log}");
    // A third after the second, which has ended: it starts at once, in the same directory.
    let third = chained("chainthree", Some(&second.id), 11);
    assert_eq!(scontrol_job(&third.id)["Dependency"], "(null)");
    let info = third.wait(Duration::from_secs(300));
    let log = third.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(
        log.contains("attempt 1: starting at step 10 of 11"),
        "{log}"
    );
    for job in [&first, &second, &third] {
        assert_clean(job);
    }
}

#[test]
fn the_time_limit_warns_every_rank_of_a_per_node_run_with_its_signal() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // The warning, given by the test once both ranks run (a 10-minute limit: Slurm's own never
    // comes). Each rank is told with --signal, not the SIGTERM of a cancel, and the run ends as
    // stopped by the time limit.
    let job = launch(
        lab,
        "pernodewarn",
        &[
            "--per-node",
            "-n",
            "2",
            "--time",
            "10",
            "--stop-grace",
            "60",
            "--signal",
            "USR1",
            "--command",
            "trap 'echo \"rank $RANK warned by USR1\"; exit 0' USR1; echo \"rank $RANK started\"; \
             while true; do sleep 1; done",
        ],
    );
    for rank in 0..2 {
        job.wait_for_log(&format!("] rank {rank} started"), Duration::from_secs(300));
    }
    job.warn_time_limit();
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    for rank in 0..2 {
        assert!(
            log.contains(&format!("] rank {rank} warned by USR1")),
            "rank {rank}:\n{log}"
        );
    }
    assert!(log.contains("the time limit is near"), "{log}");
    let state = job.state();
    assert_eq!(state["ending"], "time-limit", "{state}");
    assert_eq!(state["exit_code"], 143, "{state}");
    assert_eq!(state["requeued"], false, "{state}");
    assert_eq!(info["Restarts"], "0");
    assert_clean(&job);
}

/// Two runs `--after` the same run share its directory; started at the same moment, one holds
/// the directory and the other fails at start-up naming it (they would overwrite each other's
/// checkpoints).
#[test]
fn two_runs_after_one_run_never_use_its_directory_at_once() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("lease");
    // One CPU each and not exclusive, so that one free node holds them (other tests hold the
    // rest).
    let one_cpu = ["--no-ray", "--no-exclusive", "--cpus-per-task", "1"];
    let first = launch_in(
        lab,
        &dir,
        "leaseone",
        &[&one_cpu[..], &["--command", "true"]].concat(),
    );
    let info = first.wait(Duration::from_secs(300));
    assert_eq!(info["JobState"], "COMPLETED", "{}", first.log_text());
    // Both held at submission and released together, so that they start at once.
    let after = |name| {
        let held = [
            "--after",
            &first.id,
            "--sbatch-arg=--hold",
            "--command",
            "sleep 10",
        ];
        launch_in(lab, &dir, name, &[&one_cpu[..], &held].concat())
    };
    let (a, b) = (after("leasetwo"), after("leasethree"));
    let released = Command::new("scontrol")
        .args(["release", &format!("{},{}", a.id, b.id)])
        .output()
        .unwrap();
    assert!(released.status.success(), "{released:?}");
    let ends = [&a, &b].map(|job| job.wait(Duration::from_secs(300))["JobState"].clone());
    let (won, lost) = match ends.each_ref().map(String::as_str) {
        ["COMPLETED", "FAILED"] => (&a, &b),
        ["FAILED", "COMPLETED"] => (&b, &a),
        other => panic!(
            "one completes, one fails: {other:?}\n{}\n{}",
            a.log_text(),
            b.log_text()
        ),
    };
    let state = lost.state();
    assert_eq!(state["ending"], "startup-failed", "{}", lost.log_text());
    let message = state["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("in use by job {} (attempt 0)", won.id))
            && message.contains(".d`"),
        "{message}"
    );
    assert_eq!(won.state()["ending"], "completed");
    for job in [&first, &a, &b] {
        assert_clean(job);
    }
}

/// Slurm's warning drains Ray's worker nodes with the deadline (`examples/drain_notice.py` keeps
/// an actor busy on each node and asks Ray which nodes are draining once it is warned): the
/// worker is listed with about the command's grace left (the stop grace less 5 s), the head is
/// not, a task placed then runs on the head, and the worker, let go, is ended by Ray.
#[test]
fn the_time_limit_warning_drains_the_worker_nodes_in_ray_with_the_deadline() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("drain");
    copy_example(&dir, "drain_notice.py");
    let job = launch_in(
        lab,
        &dir,
        "drain",
        &[
            "-n",
            "2",
            "--time",
            "10",
            "--stop-grace",
            "45",
            "--signal",
            "USR1",
            "--command",
            "python drain_notice.py",
        ],
    );
    job.wait_for_log(
        "busy on 2 nodes; waiting for the allocation's end",
        Duration::from_secs(300),
    );
    job.warn_time_limit();
    let info = job.wait(Duration::from_secs(120));
    let log = job.log_text();
    let head = lab.ip_of(&info["BatchHost"]);
    let draining: Vec<(&str, u32)> = log
        .lines()
        .filter_map(|l| l.split("draining: ").nth(1)?.split_once(", "))
        .filter_map(|(ip, rest)| Some((ip, rest.split(' ').next()?.parse().ok()?)))
        .collect();
    let [(worker, left)] = draining[..] else {
        panic!("not one node draining: {draining:?}\n{log}");
    };
    assert!(
        worker != head && lab.node_ips.iter().any(|ip| ip == worker),
        "{log}"
    );
    assert!((25..=40).contains(&left), "{left} s left:\n{log}");
    assert!(
        log.contains(&format!("Ray drain: drained {worker}")),
        "{log}"
    );
    assert!(
        log.contains(&format!("a task placed now runs on {head}")),
        "{log}"
    );
    assert_eq!(job.state()["ending"], "time-limit", "{}", job.state());
    assert_clean(&job);
}
