//! Refusals that name where the value came from: a flag (the message names it), a variable
//! (`RAYSLURM_*`), or a config file and its line; a missing `RAYSLURM_CONFIG` file; `up`'s
//! positional NAME; `exec`'s command without `--` (one word or several); `--per-node
//! --no-ray`; a node-local `--log-dir`. Each exits 2 (the warning excepted) and writes nothing.

use std::path::Path;

use crate::harness::{Run, filter_stamps, rayslurm};

/// `rayslurm ARGS` in `dir`, its private tree inside it, with no config file unless a case
/// sets `RAYSLURM_CONFIG` itself.
fn in_dir(dir: &Path, args: &[&str]) -> Run {
    rayslurm(args.iter().copied())
        .cwd(dir)
        .env("RAYSLURM_CONFIG", "/dev/null")
        .env("RAYSLURM_STATE_DIR", dir.join(".state"))
}

/// A case: its name, the arguments, the variables set, and what stderr must say.
type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

const LAUNCH: &[&str] = &[
    "launch",
    "--dry-run",
    "--exp-name",
    "x",
    "--command",
    "true",
];

/// The refusals, each run in a directory with `site.toml`, `ray.toml` and `sig.toml`.
const CASES: &[Case] = &[
    (
        "time_variable",
        LAUNCH,
        &[("RAYSLURM_TIME", "2h")],
        "invalid --time `2h` (from the variable RAYSLURM_TIME)",
    ),
    (
        "partition_variable",
        LAUNCH,
        &[("RAYSLURM_PARTITION", "a b")],
        "(from the variable RAYSLURM_PARTITION)",
    ),
    (
        "time_file",
        LAUNCH,
        &[("RAYSLURM_CONFIG", "site.toml")],
        "/site.toml` line 4, key `time`)",
    ),
    (
        "interface_variable",
        LAUNCH,
        &[("RAYSLURM_INTERFACE", "a/b")],
        "invalid --interface `a/b` (from the variable RAYSLURM_INTERFACE)",
    ),
    (
        "ray_args_file",
        LAUNCH,
        &[("RAYSLURM_CONFIG", "ray.toml")],
        "ray.toml` line 2, key `ray_args`)",
    ),
    (
        "signal_file",
        LAUNCH,
        &[("RAYSLURM_CONFIG", "sig.toml")],
        "sig.toml` line 3, key `signal`)",
    ),
    (
        "missing_config",
        LAUNCH,
        &[("RAYSLURM_CONFIG", "/nonexistent/rayslurm.toml")],
        "that RAYSLURM_CONFIG names does not exist",
    ),
    (
        "up_name",
        &["up", "bad/name", "--dry-run"],
        &[],
        "invalid NAME `bad/name`",
    ),
    (
        "exec_without_dashes",
        &["exec", "c", "python", "x.py"],
        &[],
        "put the command after `--`",
    ),
    // Regression: one word, taken for a task file, said "cannot read task file `nvidia-smi`".
    (
        "exec_one_word",
        &["exec", "c", "nvidia-smi"],
        &[],
        "as in `rayslurm exec CLUSTER -- nvidia-smi ...`",
    ),
    (
        "per_node_no_ray",
        &[
            "launch",
            "--dry-run",
            "--exp-name",
            "x",
            "--command",
            "true",
            "--per-node",
            "--no-ray",
        ],
        &[],
        "--per-node and --no-ray ask for different runs",
    ),
];

#[test]
fn refusals_name_where_the_value_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("site.toml");
    std::fs::write(
        &conf,
        "# the site's\n[launch]\npartition = \"lab\"\ntime = \"2h\"\n",
    )
    .unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("ray.toml", "[launch]\nray_args = \"--x 'open\"\n");
    write("sig.toml", "[launch]\n\nsignal = \"TERMINATE\"\n");
    let cases = CASES;
    for (name, args, vars, needle) in cases {
        let mut run = in_dir(dir.path(), args).case(*name);
        for (k, v) in *vars {
            // A config file is named by its absolute path, as RAYSLURM_CONFIG must be.
            run = match *k {
                "RAYSLURM_CONFIG" => run.env(k, dir.path().join(v)),
                _ => run.env(k, v),
            };
        }
        let ran = run
            .expect_status(2)
            .expect_stderr_contains(needle)
            .expect_stderr_starts_with("error:")
            .run();
        assert!(
            !dir.path().join(".state").exists(),
            "{name} wrote its state"
        );
        insta::assert_snapshot!(
            format!("config_error_{name}"),
            ran.transcript()
                .replace(&dir.path().display().to_string(), "[DIR]")
        );
    }
    // A typed flag is named by the message itself: no note.
    in_dir(dir.path(), &[LAUNCH, &["--time", "2h"]].concat())
        .env("RAYSLURM_TIME", "2h")
        .expect_status(2)
        .expect_stderr_contains("invalid --time `2h`\n")
        .run();
}

#[test]
fn ip_family_in_a_file_takes_the_flag_s_values() {
    for value in ["\"auto\"", "4", "\"6\"", "6"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("c.toml"),
            format!("[launch]\nip_family = {value}\n"),
        )
        .unwrap();
        let want = format!("--ip-family {}", value.trim_matches('"'));
        in_dir(dir.path(), LAUNCH)
            .case(value)
            .env("RAYSLURM_CONFIG", dir.path().join("c.toml"))
            .expect_status(0)
            .expect_stdout_contains(&want)
            .run();
    }
}

#[test]
fn a_node_local_log_dir_is_warned_about() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let shared = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    let logs = dir.path().join("logs");
    let ran = in_dir(
        shared.path(),
        &[LAUNCH, &["--log-dir", logs.to_str().unwrap()]].concat(),
    )
    .expect_status(0)
    .expect_stderr_contains("inside the node-local `/tmp`: the compute nodes")
    .run();
    // Slurm's answer to the dry run, after its script (an estimate, a refusal, or sbatch's
    // failure where no cluster is up), is not this test's.
    let mut stderr: Vec<&str> = Vec::new();
    for line in ran.stderr.lines() {
        stderr.push(line);
        if line.starts_with("dry run: wrote") {
            break;
        }
    }
    let warning = filter_stamps(
        &stderr
            .join("\n")
            .replace(&dir.path().display().to_string(), "[TMP]")
            .replace(&shared.path().display().to_string(), "[DIR]"),
    );
    insta::assert_snapshot!("warning_node_local_log_dir", warning);
    in_dir(shared.path(), LAUNCH)
        .expect_status(0)
        .expect_stderr_lacks("node-local")
        .run();
}
