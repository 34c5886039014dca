//! End to end, on the real test cluster: a dry run asks Slurm whether it would take the job
//! (`sbatch --test-only`) and prints Slurm's own answer: its refusal of a wrong partition, node
//! count or GPU type (exit 0; exit 2 with `--check`), its estimate of the start for a right one, for
//! `launch` and `up` alike. Nothing is submitted: neither the queue nor accounting ever has a
//! job of the dry runs' name. Skipped loudly without the cluster, failing under CI=true.

use std::path::Path;
use std::process::Command;

use crate::harness::{Run, lab, rayslurm, unique_name};

fn in_dir(dir: &Path, args: &[&str]) -> Run {
    rayslurm(args)
        .cwd(dir)
        .env("RAYSLURM_STATE_DIR", dir.join(".state"))
}

/// What a Slurm client prints for `args` (its stdout), failing the test if it fails.
fn slurm(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The jobs of experiment `name` that the queue or accounting knows.
fn jobs_named(name: &str) -> String {
    let queued = slurm("squeue", &["-h", "-n", name, "-o", "%i %j"]);
    let accounted = slurm(
        "sacct",
        &[
            "-n",
            "-X",
            "-S",
            "now-1hours",
            "--name",
            name,
            "-o",
            "jobid,jobname",
        ],
    );
    format!("{queued}{accounted}").trim().to_owned()
}

#[test]
fn a_dry_run_shows_slurms_refusal_and_submits_nothing() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("e2e-dry-refused");
    let name = unique_name("dry").replace('-', "_");
    let launch = |extra: &[&str]| {
        in_dir(
            &dir,
            &[&["launch", "--exp-name", &name, "--command", "true"], extra].concat(),
        )
    };
    let partition = "Slurm would refuse this job (sbatch --test-only, nothing submitted): sbatch: error: invalid partition specified: nope";
    launch(&["--dry-run", "--partition", "nope"])
        .expect_status(0)
        .expect_stdout_contains("#SBATCH --partition=nope")
        .expect_stderr_contains(&format!("warning: {partition}"))
        .run();
    launch(&["--dry-run", "--check", "--partition", "nope"])
        .expect_status(2)
        .expect_stderr_contains(&format!("error: {partition}"))
        .expect_stderr_contains("hint: change the option Slurm names")
        .run();
    // More nodes than the cluster has: Slurm 22.05's words, whatever they are, are shown.
    launch(&["--check", "--num-nodes", "99"])
        .expect_status(2)
        .expect_stderr_contains(
            "error: Slurm would refuse this job (sbatch --test-only, nothing submitted): ",
        )
        .expect_stderr_contains("node configuration is not available")
        .run();
    // A GPU type no node has (the lab's GRES are typed: a100_80gb, l4, h100).
    launch(&["--check", "--sbatch-arg=--gres=gpu:nosuch:1"])
        .expect_status(2)
        .expect_stderr_contains(
            "error: Slurm would refuse this job (sbatch --test-only, nothing submitted): ",
        )
        .expect_stderr_contains("node configuration is not available")
        .run();
    in_dir(&dir, &["up", &name, "--dry-run", "--partition", "nope"])
        .expect_status(0)
        .expect_stderr_contains(
            "Slurm would refuse this cluster's job (sbatch --test-only, nothing submitted): sbatch: error: invalid partition specified: nope",
        )
        .run();
    assert_eq!(jobs_named(&name), "", "a dry run submitted a job");
}

#[test]
fn a_dry_run_shows_slurms_estimate() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("e2e-dry-taken");
    let name = unique_name("dry").replace('-', "_");
    // (Slurm 26.05 puts a word between the time and `using`.)
    let estimate = r"\(sbatch --test-only, nothing submitted\): Job \d+ to start at \S+(?: \S+)? using \d+ processors on nodes \S+ in partition lab\n";
    let ran = in_dir(
        &dir,
        &[
            "launch",
            "--exp-name",
            &name,
            "--command",
            "true",
            "--check",
            "-N",
            "2",
        ],
    )
    .expect_status(0)
    .run();
    assert_eq!(jobs_named(&name), "", "a dry run submitted a job");
    let said = regex::Regex::new(&format!("Slurm would take this job {estimate}")).unwrap();
    assert!(said.is_match(&ran.stderr), "{}", ran.stderr);
    // A GPU type the lab's nodes 1 and 2 have.
    let ran = in_dir(
        &dir,
        &[
            "launch",
            "--exp-name",
            &name,
            "--command",
            "true",
            "--check",
            "--sbatch-arg=--gres=gpu:a100_80gb:2",
        ],
    )
    .expect_status(0)
    .run();
    assert!(said.is_match(&ran.stderr), "{}", ran.stderr);
    let ran = in_dir(&dir, &["up", &name, "--dry-run"])
        .expect_status(0)
        .run();
    let said =
        regex::Regex::new(&format!("Slurm would take this cluster's job {estimate}")).unwrap();
    assert!(said.is_match(&ran.stderr), "{}", ran.stderr);
    assert_eq!(jobs_named(&name), "", "a dry run submitted a job");
}
