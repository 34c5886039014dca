//! The run store: runs found by experiment name or job id (close matches offered), an empty
//! store, a damaged record, and records kept by concurrent launches.

use std::path::Path;

use super::fake::{Fake, launch};

#[test]
fn unknown_target_is_a_usage_error_with_close_matches() {
    let fake = Fake::new();
    fake.seed("resnet-sweep", "101", 1, None);
    fake.seed("bert", "102", 2, None);
    let mut messages = Vec::new();
    for cmd in ["logs", "status", "cancel"] {
        let ran = fake
            .run([cmd, "resnet-swep"])
            .expect_status(2)
            .expect_stderr_contains("error: no run has the experiment name or job id `resnet-swep`")
            .expect_stderr_contains("hint: did you mean `resnet-sweep`?")
            .run();
        messages.push(ran.transcript());
    }
    assert!(fake.calls("scancel").is_empty());
    let ran = fake
        .run(["logs", "103"])
        .expect_status(2)
        .expect_stderr_contains("`101`")
        .run();
    messages.push(ran.transcript());
    insta::assert_snapshot!("error_unknown_run", messages.join("\n"));
}

#[test]
fn empty_store() {
    let fake = Fake::new();
    fake.run(["status", "--json"])
        .expect_status(0)
        .expect_stdout("[]\n")
        .run();
    let ran = fake
        .run(["logs", "x"])
        .expect_status(2)
        .expect_stderr_contains("no runs are recorded")
        .run();
    insta::assert_snapshot!(
        "error_no_runs_recorded",
        ran.transcript()
            .replace(&fake.state.display().to_string(), "[STATE]")
    );
}

#[test]
fn damaged_record_is_skipped_with_a_warning() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    std::fs::write(fake.record("broken"), "{\"exp_name\": \"x\", ").unwrap();
    fake.shim("squeue", &fake.line("101", "RUNNING"));
    let ran = fake
        .run(["status", "--json"])
        .expect_status(0)
        .expect_stderr_contains("warning: skipping the damaged run record")
        .expect_stderr_contains("broken.json")
        .run();
    assert_eq!(ran.rows().len(), 1, "{ran}");
}

#[test]
fn launch_records_runs_and_concurrent_launches_keep_all() {
    let fake = Fake::new();
    // Job ids from a counter, as slurmctld hands them out.
    let counter = fake.shims.join("next-id");
    fake.shim(
        "sbatch",
        &format!("exec 9>>{c}.lock; flock 9; n=$(( $(cat {c} 2>/dev/null || echo 300) + 1 )); echo $n > {c}; echo $n", c = counter.display()),
    );
    std::thread::scope(|s| {
        let launches: Vec<_> = (0..6)
            .map(|_| {
                let run = fake
                    .run(launch("sweep", "python train.py --lr 0.1"))
                    .expect_status(0);
                s.spawn(move || run.run())
            })
            .collect();
        for launched in launches {
            launched.join().unwrap();
        }
    });
    // Gone from Slurm's queue, and no accounting of them.
    fake.shim("squeue", "exit 0");
    fake.shim("sacct", "exit 0");
    let ran = fake.run(["status", "--json", "sweep"]).run();
    let rows = ran.rows();
    assert_eq!(rows.len(), 6, "{ran}");
    let mut ids: Vec<&str> = rows.iter().map(|r| r["job_id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["301", "302", "303", "304", "305", "306"]);
    let row = &rows[0];
    assert_eq!(row["command"], "python train.py --lr 0.1");
    assert_eq!(row["nodes"], 1);
    // The log is the user's alone; the default log directory has a link to it.
    let log = Path::new(row["log"].as_str().unwrap());
    assert_eq!(
        std::fs::read_link(
            fake.logs
                .join("rayslurm-logs")
                .join(log.file_name().unwrap())
        )
        .unwrap(),
        log
    );
    assert_eq!(Path::new(row["workdir"].as_str().unwrap()), fake.logs);
}

/// The image a run's programs run in is in its record, and `status --json` shows it; a run
/// without one has no such key.
#[test]
fn the_runs_image_is_recorded_and_shown() {
    let fake = Fake::new();
    fake.shim("sbatch", "echo 401");
    std::fs::write(fake.logs.join("img.sqsh"), "").unwrap();
    let mut args = launch("boxed", "python train.py");
    args.extend([
        "--container-image",
        "img.sqsh",
        "--container-runtime",
        "apptainer",
    ]);
    fake.run(args).expect_status(0).run();
    fake.seed("plain", "402", 1, None);
    // Gone from Slurm's queue, and no accounting of them.
    fake.shim("squeue", "exit 0");
    fake.shim("sacct", "exit 0");
    let ran = fake.run(["status", "--json"]).expect_status(0).run();
    let rows = ran.rows();
    let image = fake.logs.join("img.sqsh").display().to_string();
    let of = |job: &str| rows.iter().find(|r| r["job_id"] == job).unwrap().clone();
    assert_eq!(of("401")["container_image"], image.as_str(), "{ran}");
    assert!(of("402").get("container_image").is_none(), "{ran}");
}
