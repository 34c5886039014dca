//! The scripts `launch --dry-run` renders, as snapshots, and hostile text (quotes, `$`,
//! backticks, newlines) that reaches bash unchanged.

use super::{dry_run, launch_in};

#[test]
fn script_defaults() {
    insta::assert_snapshot!(dry_run(&["--command", "python train.py"]));
}

#[test]
fn script_with_every_directive() {
    insta::assert_snapshot!(dry_run(&[
        "--command",
        "python train.py --lr 0.1",
        "-n",
        "4",
        "--num-gpus",
        "2",
        "-w",
        "node[01-04]",
        "-p",
        "gpu",
        "-A",
        "proj",
        "--qos",
        "high",
        "-C",
        "a100",
        "--tasks-per-node",
        "1",
        "--cpus-per-task",
        "16",
        "--mem",
        "64G",
        "--time",
        "1-12:00:00",
        "--sbatch-arg=--mail-type=END",
        "--sbatch-arg",
        "--comment=two words",
        "--stop-grace",
        "120",
    ]));
}

#[test]
fn script_gpus_as_gres_and_per_node() {
    insta::assert_snapshot!(
        "gres",
        dry_run(&[
            "--command",
            "x",
            "--num-gpus",
            "4",
            "--gpu-directive",
            "gres",
            "--no-exclusive",
            "--mem-per-cpu",
            "2G"
        ])
    );
    insta::assert_snapshot!(
        "per_node",
        dry_run(&[
            "--command",
            "x",
            "--num-gpus",
            "1",
            "--gpu-directive",
            "gpus-per-node"
        ])
    );
}

#[test]
fn script_with_cluster_options() {
    insta::assert_snapshot!(dry_run(&[
        "--command",
        "bash run.sh",
        "-n",
        "3",
        "--interface",
        "ib0",
        "--ip-family",
        "6",
        "--min-nodes",
        "2",
        "--ready-timeout",
        "60",
        "--object-store-memory",
        "100000000",
        "--ray-args",
        "--object-manager-port=0",
        "--ray-head-args",
        "--include-dashboard=false --system-config='{\"a\": 1}'",
        "--port-base",
        "40000",
        "--stop-grace",
        "0",
    ]));
}

#[test]
fn script_quotes_hostile_text() {
    insta::assert_snapshot!(dry_run(&[
        "--command",
        "python -c \"print('it''s $HOME')\"; echo `id` ü\nsecond line",
        "--load-env",
        "module load cuda/12; source 'my venv/bin/activate'",
        "--env",
        "MSG=it's a \"quote\" $x",
        "--env",
        "EMPTY=",
    ]));
}

/// What the script hands to bash arrives unchanged: the rendered `--command` word, the
/// `--env` exports and the `--load-env` text, evaluated by bash, are the original strings.
#[test]
fn hostile_text_survives_bash() {
    let command = "python -c \"print('a')\" ; echo `id` $HOME 'x'\"y\" \\ ü 🚀\nline two";
    let value = "it's \"q\" $x `y` \\n";
    let dir = tempfile::tempdir().unwrap();
    let env = format!("V={value}");
    let args = [
        "--dry-run",
        "--exp-name",
        "h",
        "--command",
        command,
        "--env",
        &env,
        "--load-env",
        "L='keep $this'",
    ];
    let script = launch_in(dir.path(), &args).expect_status(0).run().stdout;
    // Replace the hand-over with printing what it would pass on.
    // Without the check of the binary's digest (a dry run copies no binary).
    let probe = without_prelude(&script);
    let probe = probe
        .replace(
            "exec \"$rayslurm_bin\" bootstrap",
            "printf '%s\\0' \"$V\" \"$L\"; shift_args() { :; }; printf '%s\\0'",
        )
        .replace("if [ ! -x \"$rayslurm_bin\" ]; then", "if false; then")
        .replace("\"$rayslurm_bin\" --version", "true");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&probe)
        .output()
        .unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    let words: Vec<&str> = printed.split('\0').collect();
    assert_eq!(words[0], value);
    assert_eq!(words[1], "keep $this");
    assert_eq!(
        words[words.len() - 2],
        command,
        "the last word is the command"
    );
}

/// The script without the check rayslurm adds before every command (it would find no binary
/// after a dry run).
fn without_prelude(script: &str) -> String {
    regex::Regex::new(r"(?s)# Added by rayslurm to every script:.*?unset rayslurm_sha256[^\n]*\n")
        .unwrap()
        .replace(script, "")
        .into_owned()
}

/// `launch -- CMD ARGS` as `exec` takes it: each word quoted as given, the same script as
/// `--command` with that line; both at once are refused.
#[test]
fn the_words_after_two_dashes_are_the_command() {
    let words = dry_run(&["--", "python", "train.py", "a b", "$HOME"]);
    let line = dry_run(&["--command", "python train.py 'a b' '$HOME'"]);
    assert_eq!(words, line);
    let dir = tempfile::tempdir().unwrap();
    let both = [
        "--exp-name",
        "x",
        "--command",
        "true",
        "--",
        "python",
        "x.py",
    ];
    let ran = launch_in(dir.path(), &both).expect_status(2).run();
    assert!(ran.stderr.contains("cannot be used with"), "{}", ran.stderr);
}

/// A program named where a task file goes is refused as one, saying how to run it.
#[test]
fn a_program_given_as_the_task_file_is_refused_with_how_to_run_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.py"), "print('hi')\n").unwrap();
    std::fs::write(dir.path().join("run"), "#!/bin/sh\necho hi\n").unwrap();
    for (file, command) in [("train.py", "python train.py"), ("run", "run")] {
        let ran = launch_in(dir.path(), &[file]).expect_status(2).run();
        assert!(
            ran.stderr
                .contains(&format!("`{file}` is a program, not a task file"))
                && ran.stderr.contains(&format!("-- {command}`")),
            "{}",
            ran.stderr
        );
    }
    assert!(!super::jobs(dir.path()).exists(), "nothing written");
}

/// `launch --array` writes one script for the whole array: `#SBATCH --array` as given, each
/// task's own log (`%a`), a bootstrap told to name each task's files; a dry run makes no log.
#[test]
fn an_arrays_dry_run_shows_its_array_and_one_log_a_task() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--dry-run",
        "--exp-name",
        "sweep",
        "--array",
        "0-15:4%2",
        "--command",
        "echo task $SLURM_ARRAY_TASK_ID",
    ];
    let ran = super::launch_in(dir.path(), &args).expect_status(0).run();
    let script = super::normalise(&ran.stdout, dir.path());
    for line in [
        "#SBATCH --array=0-15:4%2\n",
        "#SBATCH --output=[STATE]/jobs/sweep_",
        "_%a.log\n",
        "  --array-task \\\n",
        "--command 'echo task $SLURM_ARRAY_TASK_ID'",
    ] {
        assert!(script.contains(line), "no `{line}` in:\n{script}");
    }
    assert_eq!(script.matches("#SBATCH --array").count(), 1, "{script}");
    let jobs = super::visible_files(&super::jobs(dir.path()));
    assert_eq!(jobs.len(), 1, "only the script: {jobs:?}");
    assert!(jobs[0].ends_with(".sh"), "{jobs:?}");
}
