//! Elastic clusters (`up --max-nodes`) on the login side, against fake Slurm commands: `up`
//! asks Slurm about the worker jobs first (`sbatch --test-only`).

use std::path::PathBuf;

use serde_json::Value;

use super::fake::Fake;

/// What sbatch says when Slurm refuses a job.
const REFUSED: &str =
    "sbatch: error: Batch job submission failed: Requested node configuration is not available";

/// A fake Slurm whose `sbatch --test-only` runs `test_only` and whose plain submission prints
/// job id 4242; `srun` says a tested release.
fn slurm_with_test_only(test_only: &str) -> Fake {
    let fake = Fake::new();
    fake.shim(
        "sbatch",
        &format!("if [ \"$1\" = --test-only ]; then {test_only}; fi\necho 4242"),
    );
    fake.shim("srun", "echo 'slurm 23.02.7'");
    fake
}

/// The scripts (`*.sh`) in the fake's private tree.
fn scripts(fake: &Fake) -> Vec<PathBuf> {
    let jobs = fake.state.join("jobs");
    let Ok(entries) = std::fs::read_dir(jobs) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect()
}

#[test]
fn up_max_nodes_fails_with_slurms_words_when_slurm_refuses_the_worker_jobs() {
    let fake = slurm_with_test_only(&format!("echo '{REFUSED}' >&2; exit 1"));
    let ran = fake
        .run(["up", "lab", "-n", "2", "--max-nodes", "4", "--detach"])
        .expect_status(1)
        .expect_stdout("")
        .expect_stderr_contains("Slurm refuses the worker jobs of elastic cluster `lab`")
        .expect_stderr_contains("nothing was submitted")
        .expect_stderr_contains("Requested node configuration is not available")
        .run();
    let calls = fake.calls("sbatch");
    assert_eq!(calls.len(), 1, "only the test: {calls:?}");
    let script = &scripts(&fake)[..];
    assert_eq!(
        script.len(),
        1,
        "the script is kept, as for a refused sbatch"
    );
    let script = script[0].display().to_string();
    assert!(ran.stderr.contains(&script), "{ran}");
    let run_dir = script.strip_suffix(".sh").unwrap();
    assert_eq!(
        calls[0],
        format!(
            "--test-only --job-name=lab-worker --nodes=1 --output={run_dir}.d/workers/%j.log --open-mode=append --no-requeue --export=ALL,RAYSLURM_ELASTIC_WORKER=test.0 {script}"
        )
    );
    assert!(records(&fake).is_empty(), "nothing recorded");
}

#[test]
fn up_max_nodes_submits_once_slurm_takes_the_worker_jobs() {
    let fake = slurm_with_test_only(
        "echo 'sbatch: Job 77 to start at 2026-11-25T19:00:00 using 2 processors on nodes node3 in partition debug' >&2; exit 0",
    );
    fake.run([
        "up",
        "lab",
        "--max-nodes",
        "3",
        "--worker-idle-timeout",
        "60",
        "--detach",
    ])
    .expect_status(0)
    .expect_stdout("4242\n")
    .expect_stderr_contains(
        "Slurm takes this cluster's worker jobs (sbatch --test-only: Job 77 to start at",
    )
    .expect_stderr_contains("cluster lab submitted as job 4242")
    .run();
    let calls = fake.calls("sbatch");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].starts_with("--test-only "), "{calls:?}");
    let script = scripts(&fake)[0].display().to_string();
    assert_eq!(calls[1], format!("--parsable {script}"));
    let text = std::fs::read_to_string(&script).unwrap();
    for flag in ["--max-nodes 3", "--worker-idle-timeout 60"] {
        assert!(text.contains(flag), "no `{flag}` in:\n{text}");
    }
    let record: Value = serde_json::from_str(&records(&fake)[0]).unwrap();
    assert_eq!(record["max_nodes"], 3);
    assert_eq!(record["cluster"], true);
}

#[test]
fn up_without_max_nodes_and_dry_runs_ask_slurm_nothing_more() {
    let fake = slurm_with_test_only("exit 1");
    fake.run(["up", "lab", "--detach"]).expect_status(0).run();
    fake.run(["up", "dry", "--max-nodes", "4", "--dry-run"])
        .expect_status(0)
        .expect_stdout_contains("--max-nodes 4")
        .run();
    assert_eq!(
        fake.calls("sbatch"),
        [format!("--parsable {}", scripts_named(&fake, "lab_"))]
    );
    let record = &records(&fake)[0];
    assert!(!record.contains("max_nodes"), "{record}");
}

/// The run records `up` wrote in the fake's store.
fn records(fake: &Fake) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(fake.state.join("runs")) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// The one script of the fake's whose name starts with `prefix`.
fn scripts_named(fake: &Fake, prefix: &str) -> String {
    let found: Vec<PathBuf> = scripts(fake)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].display().to_string()
}

#[test]
fn up_refuses_elastic_flags_that_cannot_work_and_submits_nothing() {
    let fake = slurm_with_test_only("exit 0");
    let cases: &[(&[&str], &str)] = &[
        (
            &["-n", "4", "--max-nodes", "2"],
            "--max-nodes 2 is less than --num-nodes 4",
        ),
        (
            &["--max-nodes", "4", "-w", "node1"],
            "--max-nodes does not go with --node `node1`",
        ),
        (
            &["--worker-idle-timeout", "60"],
            "--worker-idle-timeout goes with --max-nodes",
        ),
        (&["--max-nodes", "0"], "is not a whole number of at least 1"),
        (
            &["--max-nodes", "4", "--max-pending-workers", "0"],
            "is not a whole number of at least 1",
        ),
    ];
    for (args, said) in cases {
        fake.run(["up", "lab"].into_iter().chain(args.iter().copied()))
            .case(args.join(" "))
            .expect_status(2)
            .expect_stdout("")
            .expect_stderr_contains(said)
            .run();
    }
    assert!(fake.calls("sbatch").is_empty(), "nothing asked of Slurm");
}
