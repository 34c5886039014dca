//! Settings from environment variables: `RAYSLURM_NO_RAY_AUTH` beside `--no-ray-auth` and the
//! files' `ray_auth`, an empty variable counting as unset, and a bad value naming its variable.

use std::path::Path;

use super::dry_run;
use crate::harness::{Run, rayslurm};

/// How a run is told whether Ray's token auth is off: `--no-ray-auth`, the variable
/// `RAYSLURM_NO_RAY_AUTH`, and `ray_auth` in the project and the user file.
#[derive(Clone, Copy)]
struct AuthGiven {
    flag: bool,
    var: Option<&'static str>,
    project: Option<bool>,
    user: Option<bool>,
}

const NOTHING: AuthGiven = AuthGiven {
    flag: false,
    var: None,
    project: None,
    user: None,
};

/// (case, what is given, whether the run is open)
const AUTH_CASES: &[(&str, AuthGiven, bool)] = &[
    ("nothing: token auth", NOTHING, false),
    (
        "the user file",
        AuthGiven {
            user: Some(false),
            ..NOTHING
        },
        true,
    ),
    (
        "project over user",
        AuthGiven {
            project: Some(true),
            user: Some(false),
            ..NOTHING
        },
        false,
    ),
    (
        "the variable over files",
        AuthGiven {
            var: Some("true"),
            project: Some(true),
            ..NOTHING
        },
        true,
    ),
    (
        "the variable as 1",
        AuthGiven {
            var: Some("1"),
            ..NOTHING
        },
        true,
    ),
    (
        "a false variable",
        AuthGiven {
            var: Some("false"),
            ..NOTHING
        },
        false,
    ),
    (
        "an empty variable is unset",
        AuthGiven {
            var: Some(""),
            user: Some(false),
            ..NOTHING
        },
        true,
    ),
    (
        "the flag",
        AuthGiven {
            flag: true,
            project: Some(true),
            ..NOTHING
        },
        true,
    ),
];

impl AuthGiven {
    /// `launch --dry-run` in `root`, told as this says (the files written into `root`).
    fn dry_run(self, root: &Path) -> Run {
        let user_file = root.join("user.toml");
        // A file RAYSLURM_CONFIG names must exist: an empty one sets nothing.
        std::fs::write(&user_file, "").unwrap();
        for (path, value) in [
            (root.join("rayslurm.toml"), self.project),
            (user_file.clone(), self.user),
        ] {
            if let Some(v) = value {
                std::fs::write(path, format!("[launch]\nray_auth = {v}\n")).unwrap();
            }
        }
        let mut run = dry_run().cwd(root).env("RAYSLURM_CONFIG", &user_file);
        if self.flag {
            run = run.arg("--no-ray-auth");
        }
        match self.var {
            Some(v) => run.env("RAYSLURM_NO_RAY_AUTH", v),
            None => run,
        }
    }
}

/// `ray_auth = false` in a file, `RAYSLURM_NO_RAY_AUTH` (`true`, `1`, ... / `false`, `0`, ...)
/// and `--no-ray-auth`: the run is open when the flag says so, or the variable does, or else the
/// highest file that sets `ray_auth` says `false`. A false variable is as good as none.
#[test]
fn ray_auth_from_the_flag_the_variable_and_the_files() {
    let open_flag = "\n  --no-ray-auth \\\n";
    for (case, given, open) in AUTH_CASES {
        let root = tempfile::tempdir().unwrap();
        let run = given.dry_run(root.path()).case(*case).expect_status(0);
        if *open {
            run.expect_stdout_contains(open_flag).run();
        } else {
            run.expect_stdout_lacks(open_flag).run();
        }
    }
    dry_run()
        .env("RAYSLURM_NO_RAY_AUTH", "maybe")
        .expect_status(2)
        .expect_stderr_contains("the value comes from the variable RAYSLURM_NO_RAY_AUTH")
        .run();
}

/// `export RAYSLURM_X=` clears a default rather than giving an empty value: the files (or the
/// built-in default) decide, for text and numbers alike.
#[test]
fn an_empty_variable_counts_as_unset() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("rayslurm.toml"),
        "[launch]\npartition = \"p-project\"\nready_timeout = 113\n",
    )
    .unwrap();
    dry_run()
        .cwd(root.path())
        .env("RAYSLURM_PARTITION", "")
        .env("RAYSLURM_READY_TIMEOUT", "")
        .env("RAYSLURM_STOP_GRACE", "")
        .expect_status(0)
        .expect_stdout_contains("\n#SBATCH --partition=p-project\n")
        .expect_stdout_contains("\n  --ready-timeout 113 \\\n")
        .expect_stdout_contains("\n  --stop-grace 60 \\\n")
        .run();
}

/// A bad value in a variable is refused like the same value on the command line, naming the
/// variable.
#[test]
fn a_bad_variable_exits_2_and_names_it() {
    for (var, value) in [
        ("RAYSLURM_READY_TIMEOUT", "soon"),
        ("RAYSLURM_GPU_DIRECTIVE", "gpus"),
        ("RAYSLURM_IDLE_TIMEOUT", "5d"),
    ] {
        let root = tempfile::tempdir().unwrap();
        let run = if var == "RAYSLURM_IDLE_TIMEOUT" {
            rayslurm(["up", "c", "--dry-run"])
        } else {
            dry_run()
        };
        run.cwd(root.path())
            .env("RAYSLURM_STATE_DIR", root.path().join("state"))
            .env(var, value)
            .expect_status(2)
            .expect_stdout("")
            .expect_stderr_contains(value)
            .expect_stderr_contains(&format!("the value comes from the variable {var}"))
            .run();
    }
}

/// An empty `RAYSLURM_MAX_REQUEUES` is no site's value: `--max-requeues` without `--requeue` is
/// refused as without the variable (a site's value excuses it: it is for the runs that ask).
#[test]
fn an_empty_max_requeues_variable_leaves_the_flag_without_requeue_refused() {
    for value in ["", "3"] {
        let root = tempfile::tempdir().unwrap();
        let run = dry_run()
            .arg("--max-requeues")
            .arg("2")
            .cwd(root.path())
            .env("RAYSLURM_MAX_REQUEUES", value);
        if value.is_empty() {
            run.expect_status(2)
                .expect_stderr_contains("--max-requeues goes with --requeue")
                .run();
        } else {
            run.expect_status(0).run();
        }
    }
}
