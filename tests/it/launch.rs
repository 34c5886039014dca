//! CLI tests of `launch`: rendered scripts (snapshots), bad input, and the sbatch paths
//! (fake `sbatch` on PATH: a real cluster cannot easily fail on demand).

use std::path::Path;

use crate::harness::{Run, filter_stamps, json_keys, rayslurm, shim, text};

/// The private tree of a test's launches: hidden inside its working directory.
fn state(dir: &Path) -> std::path::PathBuf {
    dir.join(".state")
}

/// Where a test's launches write their scripts, logs and run directories.
fn jobs(dir: &Path) -> std::path::PathBuf {
    state(dir).join("jobs")
}

/// Replaces what changes between runs: the directory, times, the binary's build and digest.
fn normalise(script: &str, dir: &Path) -> String {
    let s = script.replace(&state(dir).display().to_string(), "[STATE]");
    let s = s.replace(&dir.display().to_string(), "[DIR]");
    let s = regex::Regex::new(r"\b[0-9a-f]{64}\b")
        .unwrap()
        .replace_all(&s, "[SHA256]")
        .into_owned();
    let s = filter_stamps(&s);
    let s = regex::Regex::new(r"at \d{4}-\d\d-\d\dT[^ ]+\.")
        .unwrap()
        .replace_all(&s, "at [TIME].")
        .into_owned();
    regex::Regex::new(r"rayslurm-[0-9.]+-[0-9a-f]{16}")
        .unwrap()
        .replace_all(&s, "rayslurm-[BUILD]")
        .into_owned()
}

/// `rayslurm launch ARGS` in `dir`, its launches' private tree hidden inside it.
fn launch_in(dir: &Path, args: &[&str]) -> Run {
    rayslurm(std::iter::once("launch").chain(args.iter().copied()))
        .cwd(dir)
        .env("RAYSLURM_STATE_DIR", state(dir))
}

/// Runs a dry-run launch in a fresh directory and returns the normalised script.
fn dry_run(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut argv = vec!["--dry-run", "--exp-name", "exp"];
    argv.extend_from_slice(args);
    let ran = launch_in(dir.path(), &argv).expect_status(0).run();
    normalise(&ran.stdout, dir.path())
}

/// Files in a directory, hidden ones (the binary copy) excluded.
fn visible_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

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
    regex::Regex::new(r"(?s)# Added by rayslurm to every script:.*?unset rayslurm_sha256\n")
        .unwrap()
        .replace(script, "")
        .into_owned()
}

/// Runs a dry-run script whose binary copy was replaced by `fake` and returns the script's
/// exit code and stderr: what a node prints when the copy is there but does not start.
fn script_with_broken_copy(fake: &[u8]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--dry-run", "--exp-name", "b", "--command", "true"];
    let script = launch_in(dir.path(), &args).expect_status(0).run().stdout;
    // The copy the script names (a dry run makes none), as the node would find it: a binary
    // that is the one launch copied (its digest matches) and still does not start.
    let bin = regex::Regex::new(r"(?m)^rayslurm_bin='?([^'\n]+?)'?$")
        .unwrap()
        .captures(&script)
        .expect("the script names its binary")[1]
        .to_owned();
    std::fs::create_dir_all(Path::new(&bin).parent().unwrap()).unwrap();
    std::fs::write(&bin, fake).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let digest = regex::Regex::new(r"!= ([0-9a-f]{64}) ")
        .unwrap()
        .captures(&script)
        .expect("the script checks a digest")[1]
        .to_owned();
    let script = script.replace(&digest, &sha256(fake));
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    (out.status.code(), text(&out).1)
}

/// The message an old glibc's loader prints, from a stand-in that prints it.
#[test]
fn a_copy_the_nodes_glibc_cannot_load_says_so() {
    let fake = "#!/bin/bash\necho \"$0: /lib64/libc.so.6: version \\`GLIBC_2.34' not found (required by $0)\" >&2\nexit 1\n";
    let (code, stderr) = script_with_broken_copy(fake.as_bytes());
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("rayslurm: cannot run "), "{stderr}");
    assert!(
        stderr.contains(
            "the node's glibc is older than this build needs: /lib64/libc.so.6: version `GLIBC_2.34' not found"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("glibc 2.17"), "{stderr}");
}

#[test]
fn a_copy_for_another_cpu_says_so() {
    // An ELF header alone, for a machine that is not this one.
    let (machine, arch) = match std::env::consts::ARCH {
        "aarch64" => (62u8, "x86_64"),
        _ => (183u8, "aarch64"),
    };
    let mut elf = vec![0u8; 64];
    elf[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    elf[16] = 2;
    elf[18] = machine;
    let (code, stderr) = script_with_broken_copy(&elf);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(&format!(
            "it is built for {arch}, the node is {}",
            std::env::consts::ARCH
        )),
        "{stderr}"
    );
}

#[test]
fn a_copy_that_fails_otherwise_shows_the_first_line_of_its_error() {
    let fake = "#!/bin/bash\necho 'first line' >&2\necho 'second line' >&2\nexit 3\n";
    let (code, stderr) = script_with_broken_copy(fake.as_bytes());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.ends_with(": first line (exit code 3)\n"), "{stderr}");
    assert!(!stderr.contains("second line"), "{stderr}");
}

#[test]
fn dry_run_writes_the_script_only() {
    let dir = tempfile::tempdir().unwrap();
    launch_in(
        dir.path(),
        &["--dry-run", "--exp-name", "d", "--command", "true"],
    )
    .expect_status(0)
    .expect_stdout_starts_with("#!/bin/bash\n")
    .expect_stderr_contains("dry run: wrote")
    .run();
    // The script in the private tree, a link to its log in the working directory.
    let files = visible_files(&jobs(dir.path()));
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with("d_") && files[0].ends_with(".sh"));
    let links = visible_files(dir.path());
    assert_eq!(links, [files[0].replace(".sh", ".log")]);
    assert!(
        !state(dir.path())
            .join("bin")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "a dry run copies no binary"
    );
}

#[test]
fn dry_run_json() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--dry-run",
        "--json",
        "--exp-name",
        "d",
        "--command",
        "true",
    ];
    let v = launch_in(dir.path(), &args)
        .expect_json("/job_id", serde_json::Value::Null)
        .expect_json("/submitted", false)
        .run()
        .json();
    assert!(v["script"].as_str().unwrap().ends_with(".sh"));
    assert!(v["log"].as_str().unwrap().ends_with(".log"));
    insta::assert_snapshot!("launch_json_keys", json_keys(&v));
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let cases: &[(&[&str], &str)] = &[
        (&["-n", "0"], "--num-nodes"),
        (&["-n", "-2"], "--num-nodes"),
        (&["-n", "three"], "--num-nodes"),
        (&["--num-gpus", "-1"], "--num-gpus"),
        (&["--cpus-per-task", "0"], "--cpus-per-task"),
        (&["--exp-name", "a/b"], "--exp-name"),
        (&["--exp-name", ".."], "--exp-name"),
        (&["--exp-name", "a b"], "--exp-name"),
        (&["--exp-name", "a\nb"], "--exp-name"),
        (&["--exp-name", "-x"], "--exp-name"),
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
        (&["--mem", "16GB"], "--mem"),
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
    ];
    for (args, needle) in cases {
        let dir = tempfile::tempdir().unwrap();
        // A case's own --exp-name or --command replaces the default: given twice, clap would
        // refuse the repetition before the value is ever checked.
        let mut argv = Vec::new();
        for (flag, default) in [("--exp-name", "x"), ("--command", "true")] {
            if !args.iter().any(|a| a.starts_with(flag)) {
                argv.extend([flag, default]);
            }
        }
        argv.extend_from_slice(args);
        launch_in(dir.path(), &argv)
            .expect_status(2)
            .expect_stderr_lacks("cannot be used multiple times")
            .expect_stderr_contains(needle)
            .expect_stderr_starts_with("error:")
            .run();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{args:?} wrote a file"
        );
    }
}

/// Regression: `--array` in `--sbatch-arg` was refused only as `--array` or `-a`, but sbatch
/// also takes any unambiguous abbreviation of a long option (`--arr=0-3`), and flags before
/// `a` in one word (`-Ha0-3`): those went through, and every task of the array would have
/// shared one log and one final state. Refused before anything is written or submitted.
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
        let dir = tempfile::tempdir().unwrap();
        let shims = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let calls = shims.path().join("sbatch.calls");
        shim(
            shims.path(),
            "sbatch",
            &format!("echo \"$*\" >> {}; echo 4242", calls.display()),
        );
        let mut argv = vec!["launch", "--exp-name", "sweep", "--command", "true"];
        argv.extend_from_slice(args);
        rayslurm(argv)
            .cwd(dir.path())
            .shims(shims.path())
            .env("RAYSLURM_STATE_DIR", state.path())
            .expect_status(2)
            .expect_stdout("")
            .expect_stderr_starts_with("error: --sbatch-arg ")
            .expect_stderr_contains(
                "array jobs are not supported yet, since every task would share one log and one final state",
            )
            .expect_no_file(&calls)
            .run();
        assert!(!calls.exists(), "{args:?}: sbatch was called");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{args:?}: wrote a script or log"
        );
        assert_eq!(
            std::fs::read_dir(state.path()).unwrap().count(),
            0,
            "{args:?}: recorded a run"
        );
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
            &["--exp-name", "x", "--command", "true", "--mem", "16GB"],
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
        let dir = tempfile::tempdir().unwrap();
        let ran = launch_in(dir.path(), args).expect_status(2).run();
        insta::assert_snapshot!(format!("error_{name}"), ran.transcript());
    }
}

#[test]
fn a_template_that_does_not_parse_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("mine.sh.tera");
    std::fs::write(
        &t,
        "#!/bin/bash\n#SBATCH --nodes={{ num_nodes }}\n{% if load_env %}\nnever closed\n",
    )
    .unwrap();
    let args = [
        "--dry-run",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--template",
    ];
    // A missing value is a usage error.
    launch_in(dir.path(), &args).expect_status(2).run();
    launch_in(dir.path(), &args)
        .arg(&t)
        .expect_status(2)
        .expect_stderr_contains("mine.sh.tera")
        // It names the line.
        .expect_stderr_contains("line 5, column 1")
        .run();
    assert_eq!(visible_files(dir.path()), ["mine.sh.tera"]);
}

#[test]
fn a_user_template_gets_the_documented_context() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("mine.sh.tera");
    std::fs::write(&t, "#!/bin/bash\n{% for d in directives %}#SBATCH {{ d }}\n{% endfor %}echo {{ exp_name }} {{ num_nodes }} {{ command | shell_quote }} {{ log_path }}\n").unwrap();
    let args = [
        "--dry-run",
        "--exp-name",
        "mine",
        "-n",
        "2",
        "--command",
        "a b",
    ];
    launch_in(dir.path(), &args)
        .arg("--template")
        .arg(&t)
        .expect_status(0)
        .expect_stdout_contains("#SBATCH --nodes=2")
        .expect_stdout_contains("echo mine 2 'a b' ")
        .run();
}

#[test]
fn template_command_prints_the_builtin() {
    rayslurm(["template"])
        .expect_status(0)
        .expect_stdout_contains("{% for directive in directives")
        .run();
}

/// A fresh directory and `launch --command true ARGS` in it, with a fake `sbatch` running
/// `body` (kept in the directory's `.shims`).
fn launch_with_sbatch(body: &str, args: &[&str]) -> (tempfile::TempDir, Run) {
    let dir = tempfile::tempdir().unwrap();
    let shims = dir.path().join(".shims");
    std::fs::create_dir(&shims).unwrap();
    shim(&shims, "sbatch", body);
    let mut argv = vec!["--command", "true"];
    argv.extend_from_slice(args);
    let run = launch_in(dir.path(), &argv).shims(&shims);
    (dir, run)
}

#[test]
fn submission_prints_only_the_job_id_on_stdout() {
    let (_dir, run) = launch_with_sbatch(
        "[ \"$1\" = --parsable ] && [ -f \"$2\" ] && echo '4242;lab'",
        &["--exp-name", "s"],
    );
    run.expect_status(0)
        .expect_stdout("4242\n")
        .expect_stderr_contains("submitted job 4242")
        .expect_stderr_contains("script: ")
        .expect_stderr_contains("log: ")
        .run();
}

#[test]
fn submission_json() {
    let (_dir, run) = launch_with_sbatch("echo 77", &["--json", "--exp-name", "s"]);
    let v = run
        .expect_json("/job_id", "77")
        .expect_json("/exp_name", "s")
        .run()
        .json();
    assert!(Path::new(v["script"].as_str().unwrap()).exists());
    insta::assert_snapshot!("launch_json_keys", json_keys(&v));
}

#[test]
fn sbatch_failure_keeps_the_script_and_shows_the_error() {
    let (dir, run) = launch_with_sbatch(
        "echo 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2; exit 1",
        &["--exp-name", "f"],
    );
    let ran = run
        .expect_status(1)
        .expect_stdout("")
        .expect_stderr_contains("Invalid partition name specified")
        .run();
    let files: Vec<String> = visible_files(&jobs(dir.path()))
        .into_iter()
        .filter(|f| f.ends_with(".sh"))
        .collect();
    assert_eq!(files.len(), 1);
    assert!(
        ran.stderr.contains(&files[0]),
        "names the kept script: {ran}"
    );
    insta::assert_snapshot!(
        "error_sbatch_fails",
        normalise(&ran.transcript(), dir.path())
    );
}

#[test]
fn missing_sbatch_suggests_dry_run_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ran = launch_in(dir.path(), &["--exp-name", "m", "--command", "true"])
        .env("PATH", "/nonexistent")
        .expect_stderr_contains("sbatch")
        .expect_stderr_contains("--dry-run")
        .run();
    assert_ne!(ran.output.status.code(), Some(0), "{ran}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    insta::assert_snapshot!("error_sbatch_missing", ran.transcript());
}

/// Twelve launches at once, some in the same second: each gets a script of its own (the second
/// and later of a second with `-2`, `-3`, ... suffixes) holding exactly what it printed. Twelve,
/// so that two of them usually race for one name between checking it is free and taking it
/// (with the script written by replacing instead of linking to a new name, this test failed in
/// 10 of 12 runs; with six launches, in 2 of 6).
#[test]
fn launches_in_the_same_second_never_overwrite() {
    let stem = regex::Regex::new(r"^same_(\d{4}-\d{6})(?:-(\d+))?\.sh$").unwrap();
    let wrote = regex::Regex::new(r"dry run: wrote (\S+) ").unwrap();
    const LAUNCHES: usize = 12;
    // The launches share a second unless they straddle twelve; should they, try again.
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep.log"), "x").unwrap();
        let start = std::sync::Barrier::new(LAUNCHES);
        let outputs: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..LAUNCHES)
                .map(|_| {
                    s.spawn(|| {
                        let run = rayslurm([
                            "launch",
                            "--dry-run",
                            "--exp-name",
                            "same",
                            "--command",
                            "true",
                        ])
                        .cwd(dir.path())
                        .env("RAYSLURM_STATE_DIR", state(dir.path()));
                        start.wait();
                        run.output()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for out in &outputs {
            assert!(out.status.success(), "{}", text(out).1);
        }
        let scripts: Vec<String> = visible_files(&jobs(dir.path()))
            .into_iter()
            .filter(|f| f.ends_with(".sh"))
            .collect();
        assert_eq!(scripts.len(), LAUNCHES, "{scripts:?}");
        // Nothing was overwritten: each launch's file holds the script that launch printed.
        for out in &outputs {
            let (stdout, stderr) = text(out);
            let path = &wrote.captures(&stderr).expect("names the script")[1];
            let written = std::fs::read_to_string(path).unwrap();
            assert_eq!(written.trim_end(), stdout.trim_end(), "{path}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("keep.log")).unwrap(),
            "x"
        );
        let mut by_second = std::collections::BTreeMap::<String, Vec<u32>>::new();
        for name in &scripts {
            let c = stem.captures(name).unwrap_or_else(|| panic!("{name}"));
            let n = c.get(2).map_or(1, |n| n.as_str().parse().unwrap());
            by_second.entry(c[1].to_owned()).or_default().push(n);
        }
        if by_second.values().all(|ns| ns.len() < 2) {
            continue;
        }
        for ns in by_second.values_mut() {
            ns.sort_unstable();
            let expected: Vec<u32> = (1..=ns.len() as u32).collect();
            assert_eq!(*ns, expected, "{scripts:?}");
        }
        return;
    }
    panic!("{LAUNCHES} launches never shared a second in five tries");
}

/// Regression (reported): the `dry run: wrote ...` line must start a line of its own after the
/// script, on one terminal where stdout and stderr meet.
#[test]
fn dry_run_output_ends_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{} launch --dry-run --exp-name d --command true 2>&1",
            crate::harness::bin().display()
        ))
        .current_dir(dir.path())
        .env("RAYSLURM_CONFIG", "/nonexistent/rayslurm.toml")
        .output()
        .unwrap();
    let merged = String::from_utf8_lossy(&out.stdout);
    assert!(merged.ends_with('\n'), "{merged:?}");
    assert!(
        merged.lines().any(|l| l.starts_with("dry run: wrote ")),
        "{merged}"
    );
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
