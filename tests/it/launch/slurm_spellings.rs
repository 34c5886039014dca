//! Slurm's own spellings on rayslurm's command line: every value sbatch(1) documents for an
//! option rayslurm renders is accepted and written as sbatch reads it; Slurm's names of
//! rayslurm's options work or get a tip to rayslurm's; an `--sbatch-arg` that sets a directive
//! rayslurm writes itself is refused (exit 2, nothing written), naming the option to use.

use std::path::Path;

use crate::harness::rayslurm;

/// `rayslurm launch --dry-run ARGS` in `dir` (no config), its private tree inside `dir`.
fn launch(dir: &Path, args: &[&str]) -> crate::harness::Run {
    let base = [
        "launch",
        "--dry-run",
        "--exp-name",
        "x",
        "--command",
        "true",
    ];
    rayslurm(base.iter().chain(args).copied())
        .cwd(dir)
        .env("RAYSLURM_CONFIG", "/dev/null")
        .env("RAYSLURM_STATE_DIR", dir.join(".state"))
}

#[test]
fn slurm_values_are_accepted_and_rendered_as_sbatch_reads_them() {
    let cases: &[(&[&str], &str)] = &[
        (&["--mem", "16GB"], "#SBATCH --mem=16G\n"),
        (&["--mem", "16gb"], "#SBATCH --mem=16G\n"),
        (&["--mem", "0"], "#SBATCH --mem=0\n"),
        (&["--mem", "4000"], "#SBATCH --mem=4000\n"),
        (&["--mem-per-cpu", "1GB"], "#SBATCH --mem-per-cpu=1G\n"),
        (&["--mem-per-cpu", "512MB"], "#SBATCH --mem-per-cpu=512M\n"),
        // A time of zero is no limit: no stop-grace check against it.
        (&["--time", "0"], "#SBATCH --time=0\n"),
        (&["--time", "UNLIMITED"], "#SBATCH --time=UNLIMITED\n"),
        (&["--time", "INFINITE"], "#SBATCH --time=INFINITE\n"),
        (&["--time", "1-12"], "#SBATCH --time=1-12\n"),
        (&["--time", "90:30"], "#SBATCH --time=90:30\n"),
        (&["--time", "0", "--stop-grace", "300"], "@300\n"),
        (&["-N", "3"], "#SBATCH --nodes=3\n"),
        (&["-N3"], "#SBATCH --nodes=3\n"),
        (&["--nodes", "2"], "#SBATCH --nodes=2\n"),
        (&["--nodes=2"], "#SBATCH --nodes=2\n"),
        (&["-n", "2"], "#SBATCH --nodes=2\n"),
        (&["--nodelist", "n[1-2]"], "#SBATCH --nodelist=n[1-2]\n"),
        (&["--ntasks-per-node", "2"], "#SBATCH --ntasks-per-node=2\n"),
        // GPU lines are the user's own when rayslurm writes none.
        (
            &["--sbatch-arg=--gres=gpu:a100:2"],
            "#SBATCH --gres=gpu:a100:2\n",
        ),
    ];
    for (args, line) in cases {
        let dir = tempfile::tempdir().unwrap();
        launch(dir.path(), args)
            .case(format!("{args:?}"))
            .expect_status(0)
            .expect_stdout_contains(line)
            .run();
    }
}

#[test]
fn wrong_spellings_get_a_tip_to_the_right_option() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("node_count", &["--node", "2"], "--num-nodes 2"),
        ("min_max", &["-N", "2-4"], "--num-nodes 4 --min-nodes 2"),
        ("job_name", &["--job-name", "y"], "rayslurm's is --exp-name"),
        ("gres", &["--gres", "gpu:1"], "--num-gpus N (per node)"),
        ("short_j", &["-J", "y"], "--exp-name"),
        ("mem_unit", &["--mem", "16GiB"], "16GB"),
    ];
    for (name, args, tip) in cases {
        let dir = tempfile::tempdir().unwrap();
        let ran = launch(dir.path(), args)
            .case(*name)
            .expect_status(2)
            .expect_stderr_contains(tip)
            .run();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{name}");
        insta::assert_snapshot!(format!("spelling_{name}"), ran.transcript());
    }
}

#[test]
fn an_sbatch_arg_that_sets_an_owned_directive_is_refused() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("output", &["--sbatch-arg=--output=/x/%j.log"], "--log-dir"),
        ("job_name", &["--sbatch-arg=-Jother"], "--exp-name"),
        (
            "partition",
            &["--sbatch-arg=--part=gpu"],
            "--partition NAME",
        ),
        ("nodes", &["--sbatch-arg=-N4"], "--num-nodes"),
        ("ntasks", &["--sbatch-arg=--ntasks=8"], "--tasks-per-node"),
        (
            "gres",
            &["--num-gpus", "2", "--sbatch-arg=--gres=gpu:2"],
            "--num-gpus",
        ),
        ("signal", &["--sbatch-arg=--signal=USR1@60"], "--stop-grace"),
        (
            "dependency",
            &["--sbatch-arg=--dependency=afterok:1"],
            "--after",
        ),
    ];
    for (name, args, instead) in cases {
        let dir = tempfile::tempdir().unwrap();
        let ran = launch(dir.path(), args)
            .case(*name)
            .expect_status(2)
            .expect_stderr_contains("rayslurm writes")
            .expect_stderr_contains(instead)
            .run();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{name}");
        insta::assert_snapshot!(format!("owned_{name}"), ran.transcript());
    }
    // `up` shares the job flags, and the refusal.
    let dir = tempfile::tempdir().unwrap();
    rayslurm(["up", "c", "--dry-run", "--sbatch-arg=--time=5"])
        .cwd(dir.path())
        .env("RAYSLURM_CONFIG", "/dev/null")
        .env("RAYSLURM_STATE_DIR", dir.path().join(".state"))
        .expect_status(2)
        .expect_stderr_contains("instead, use --time TIME")
        .run();
}
