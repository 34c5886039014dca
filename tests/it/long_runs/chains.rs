//! `launch --after RUN`: a chain of runs, each waiting for the one before while it lives.

use crate::runs::fake::{Fake, launch};

/// `--after RUN`: a run still in Slurm's queue is waited for (`afterany`), one that has ended
/// is not (sbatch would refuse a job it has forgotten); the new run keeps RUN's directory.
#[test]
fn a_chain_waits_for_a_live_run_and_starts_at_once_after_an_ended_one() {
    let fake = Fake::new();
    fake.seed("pretrain", "301", 1, None);
    let run_dir = fake.logs.join("pretrain_301.d");
    // The run directory of the run followed.
    let same_dir = format!("  --run-dir {} \\\n", run_dir.display());
    fake.shim("squeue", &fake.line("301", "RUNNING"));
    // The dry runs ask Slurm (`sbatch --test-only`), which would take them.
    fake.shim(
        "sbatch",
        "[ \"$1\" = --test-only ] || exit 1\necho 'sbatch: Job 302 to start' >&2",
    );
    let mut args = launch("finetune", "true");
    args.extend([
        "--dry-run",
        "--requeue",
        "--singleton",
        "--after",
        "pretrain",
    ]);
    fake.run(args)
        .expect_status(0)
        .expect_stdout_contains("#SBATCH --dependency=afterany:301,singleton\n")
        .expect_stdout_contains("#SBATCH --requeue\n")
        .expect_stdout_contains("#SBATCH --signal=B:URG@60\n")
        .expect_stdout_contains(&same_dir)
        .expect_stderr_contains("this run waits for pretrain (job 301) to end")
        .run();

    // Ended, and forgotten by Slurm: no dependency, the same directory.
    fake.final_state("pretrain", "301", 0, "completed");
    fake.shim("squeue", "");
    fake.shim("sacct", "");
    let mut args = launch("finetune", "true");
    args.extend(["--dry-run", "--after", "301"]);
    fake.run(args)
        .expect_status(0)
        .expect_stdout_lacks("--dependency")
        .expect_stdout_contains(&same_dir)
        .expect_stderr_contains(
            "pretrain (job 301) has ended (COMPLETED): this run starts without waiting for it",
        )
        .run();

    // A run the store does not know is refused, and nothing is written.
    let before = std::fs::read_dir(&fake.logs).unwrap().count();
    let mut args = launch("x", "true");
    args.extend(["--after", "nosuch"]);
    fake.run(args).expect_status(2).run();
    assert_eq!(std::fs::read_dir(&fake.logs).unwrap().count(), before);
}
