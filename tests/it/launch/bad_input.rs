//! Bad `launch` input: exit 2 with `error: ...`, nothing written, nothing submitted; the
//! commonest messages as snapshots.

use crate::harness::{rayslurm, shim};

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let cases: &[(&[&str], &str)] = &[
        (&["-n", "0"], "--num-nodes"),
        (&["-n", "-2"], "--num-nodes"),
        (&["-n", "three"], "--num-nodes"),
        (&["--num-gpus", "-1"], "--num-gpus"),
        (&["--num-gpus", "a100:"], "not a GPU count"),
        (&["--num-gpus", "a 100:2"], "not a GPU type"),
        (&["--num-gpus", "a100\n#SBATCH --x:2"], "not a GPU type"),
        (&["--cpus-per-task", "0"], "--cpus-per-task"),
        (&["--exp-name", "a/b"], "--exp-name"),
        (&["--exp-name", ".."], "--exp-name"),
        (&["--exp-name", "a b"], "--exp-name"),
        (&["--exp-name", "a\nb"], "--exp-name"),
        // With the optional task file, clap reads `-x` as an option of its own.
        (&["--exp-name", "-x"], "-x"),
        (&["--exp-name=-x"], "--exp-name"),
        (&["--exp-name", ".x"], "--exp-name"),
        (&["--command", ""], "--command"),
        (&["--command", "  \n "], "--command"),
        (&["-p", "gpu\n#SBATCH --x"], "--partition"),
        (&["-A", "a\rb"], "--account"),
        (&["--qos", "q\n"], "--qos"),
        (&["-C", "c\nd"], "--constraint"),
        (&["-w", "n1\nn2"], "--node"),
        (&["--time", "2 hours"], "--time"),
        (&["--time", "1:2:3:4"], "--time"),
        (&["--mem-per-cpu", "lots"], "--mem-per-cpu"),
        (&["--sbatch-arg", "--x=1\n#SBATCH --y"], "--sbatch-arg"),
        (&["--sbatch-arg", "mail"], "--sbatch-arg"),
        (&["--env", "NOVALUE"], "--env"),
        (&["--env", "1BAD=x"], "--env"),
        (&["--env", "A-B=x"], "--env"),
        (&["--log-dir", "/nonexistent/dir"], "log directory"),
        (&["--log-dir", "/proc"], "not writable"),
        (&["--template", "/nonexistent/t.sh"], "template"),
        (&["--ray-args", "--x 'open"], "--ray-args"),
        (&["--min-nodes", "5"], "--min-nodes"),
        (&["--signal", "TERMINATE"], "not a signal name"),
        (&["--signal", "KILL"], "cannot be caught"),
        (
            &["--time", "1", "--stop-grace", "60"],
            "is not shorter than --time",
        ),
        (
            &["--time", "0:30", "--stop-grace", "30"],
            "is not shorter than --time",
        ),
        (
            &["--max-requeues", "2"],
            "--max-requeues goes with --requeue",
        ),
        (&["--after", " "], "--after is empty"),
        (
            &["--setup", "true", "--setup-timeout", "0"],
            "--setup-timeout",
        ),
        (&["--setup-timeout", "soon"], "--setup-timeout"),
        (&["--workdir", "/nonexistent/code"], "--workdir"),
    ];
    for (args, needle) in cases {
        let places = Places::new();
        // A case's own --exp-name or --command replaces the default: given twice, clap would
        // refuse the repetition before the value is ever checked.
        let mut argv = vec!["launch"];
        for (flag, default) in [("--exp-name", "x"), ("--command", "true")] {
            if !args.iter().any(|a| a.starts_with(flag)) {
                argv.extend([flag, default]);
            }
        }
        argv.extend_from_slice(args);
        places
            .launch(argv)
            .expect_status(2)
            .expect_stderr_lacks("cannot be used multiple times")
            .expect_stderr_contains(needle)
            .expect_stderr_starts_with("error:")
            .run();
        places.nothing_written(0, &format!("{args:?}"));
    }
}

/// Regression: `--array` in `--sbatch-arg` was refused only as `--array` or `-a`, but sbatch
/// also takes any unambiguous abbreviation of a long option (`--arr=0-3`), and flags before
/// `a` in one word (`-Ha0-3`): those went through, and every task of the array would have
/// shared one log and one final state. Refused before anything is written or submitted,
/// pointing at `launch --array`, which gives each task its own.
#[test]
fn array_jobs_are_refused_however_sbatch_would_spell_them() {
    let cases: &[&[&str]] = &[
        &["--sbatch-arg=--array=0-3"],
        &["--sbatch-arg", "--array=0-3"],
        &["--sbatch-arg=--arr=0-3"],
        &["--sbatch-arg=--ar=1-2"],
        &["--sbatch-arg", "--ar 1-2"],
        &["--sbatch-arg", "-a 0-3"],
        &["--sbatch-arg=-a0-3"],
        &["--sbatch-arg=-Ha0-3"],
        &["--sbatch-arg=--mail-type=END", "--sbatch-arg=--arr=0-3"],
    ];
    for args in cases {
        let places = Places::new();
        let mut argv = vec!["launch", "--exp-name", "sweep", "--command", "true"];
        argv.extend_from_slice(args);
        places
            .launch(argv)
            .expect_status(2)
            .expect_stdout("")
            .expect_stderr_starts_with("error: --sbatch-arg ")
            .expect_stderr_contains(
                "an array job goes through `--array`, which gives each task its own log, state and record",
            )
            .expect_stderr_contains("hint: pass `--array SPEC`")
            .expect_no_file(&places.calls)
            .run();
        places.nothing_written(0, &format!("{args:?}"));
    }
}

/// `launch --array` refuses a spec sbatch would refuse (or that runs nothing) and the options
/// an array cannot go with yet, before anything is written or submitted.
#[test]
fn bad_array_specs_and_what_an_array_cannot_go_with_are_refused() {
    let cases: &[(&[&str], &str)] = &[
        (&["--array", ""], "--array ``: no task ids"),
        (&["--array", "%2"], "no task ids"),
        (&["--array", "7-3"], "`7-3` is an empty range"),
        (&["--array", "0-15:0"], "`0-15:0` has a step of 0"),
        (&["--array", "0-7%0"], "`%0` lets no task run"),
        (&["--array", "0-7%2%3"], "`%2%3` is not a number of tasks"),
        (&["--array", "0..7"], "`0..7` is not a task id"),
        (&["--array", "0-99999"], "more than 10000 tasks"),
        (
            &["--array", "0-3", "--requeue"],
            "--array goes without --requeue",
        ),
        (
            &["--array", "0-3", "--restarts-on-error", "1"],
            "--array goes without --restarts-on-error",
        ),
        (
            &["--array", "0-3", "--after", "train"],
            "--array goes without --after",
        ),
        (
            &["--array", "0-3", "--follow"],
            "--array goes without --follow",
        ),
    ];
    for (args, needle) in cases {
        let places = Places::new();
        let mut argv = vec!["launch", "--exp-name", "sweep", "--command", "true"];
        argv.extend_from_slice(args);
        places
            .launch(argv)
            .expect_status(2)
            .expect_stdout("")
            .expect_stderr_starts_with("error: --array ")
            .expect_stderr_contains(needle)
            .expect_no_file(&places.calls)
            .run();
        places.nothing_written(0, &format!("{args:?}"));
    }
}

/// The messages of the commonest mistakes, as snapshots: their wording is reviewed as a diff.
#[test]
fn usage_error_messages() {
    let cases: &[(&str, &[&str])] = &[
        ("bad_exp_name", &["--exp-name", "a/b", "--command", "true"]),
        (
            "bad_time",
            &["--exp-name", "x", "--command", "true", "--time", "2 hours"],
        ),
        (
            "bad_mem",
            &["--exp-name", "x", "--command", "true", "--mem", "16GiB"],
        ),
        (
            "env_without_equals",
            &["--exp-name", "x", "--command", "true", "--env", "NOVALUE"],
        ),
        (
            "sbatch_array",
            &[
                "--exp-name",
                "x",
                "--command",
                "true",
                "--sbatch-arg=--arr=0-3",
            ],
        ),
    ];
    for (name, args) in cases {
        let places = Places::new();
        let argv = std::iter::once("launch").chain(args.iter().copied());
        let ran = places.launch(argv).expect_status(2).run();
        insta::assert_snapshot!(format!("error_{name}"), ran.transcript());
        places.nothing_written(0, name);
    }
}

/// A plain file where the default log directory `./rayslurm-logs` would be (planted, or left
/// by mistake): refused at once with its owner and what to do, exit 2, nothing submitted and
/// the file untouched; not a failure deep in the launch.
#[test]
fn a_file_named_like_the_default_log_directory_is_refused_naming_its_owner() {
    let places = Places::new();
    let file = places.dir.path().join("rayslurm-logs");
    std::fs::write(&file, "not a directory\n").unwrap();
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap()
        .name;
    places
        .launch(["launch", "--exp-name", "x", "--command", "true"])
        .expect_status(2)
        .expect_stdout("")
        .expect_stderr_starts_with(&format!(
            "error: the default log directory `{}` is a file, not a directory (owner uid ",
            file.display()
        ))
        .expect_stderr_contains(&format!("({me}))"))
        .expect_stderr_contains("hint: remove or rename that file, or pass --log-dir DIR")
        .expect_no_file(&places.calls)
        .run();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory\n");
    places.nothing_written(1, "the file");
}

/// Where a refused launch runs: a working directory, a state directory, and an `sbatch` that
/// records any call in `calls` (the harness stubs every other Slurm client, failing the test
/// on a call).
struct Places {
    dir: tempfile::TempDir,
    shims: tempfile::TempDir,
    state: tempfile::TempDir,
    calls: std::path::PathBuf,
}

impl Places {
    fn new() -> Self {
        let shims = tempfile::tempdir().unwrap();
        let calls = shims.path().join("sbatch.calls");
        shim(
            shims.path(),
            "sbatch",
            &format!("echo \"$*\" >> {}; echo 4242", calls.display()),
        );
        Self {
            dir: tempfile::tempdir().unwrap(),
            shims,
            state: tempfile::tempdir().unwrap(),
            calls,
        }
    }

    /// `rayslurm ARGV` there.
    fn launch<'a>(&self, argv: impl IntoIterator<Item = &'a str>) -> crate::harness::Run {
        rayslurm(argv)
            .cwd(self.dir.path())
            .shims(self.shims.path())
            .env("RAYSLURM_STATE_DIR", self.state.path())
    }

    /// Nothing was submitted or written for the refused launch `case`: `sbatch` was not
    /// called, the working directory holds only its `before` entries and the state directory
    /// is empty (no script, log or record of a run).
    fn nothing_written(&self, before: usize, case: &str) {
        assert!(!self.calls.exists(), "{case}: sbatch was called");
        assert_eq!(
            std::fs::read_dir(self.dir.path()).unwrap().count(),
            before,
            "{case}: wrote a script or log"
        );
        assert_eq!(
            std::fs::read_dir(self.state.path()).unwrap().count(),
            0,
            "{case}: recorded a run"
        );
    }
}
