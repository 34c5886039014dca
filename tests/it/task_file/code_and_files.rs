//! Code and files of a task file (docs/task-files.md): `workdir: {url:, ref:}` cloned at
//! submission from a git repository the test makes, `.skyignore` in place of `.gitignore`,
//! and local `file_mounts` copied at submission, shown by the dry run, and refused where a
//! node cannot make the destination.

use std::path::Path;
use std::process::Command;

use crate::launch::{launch_in, run_dir, state};

/// A bare repository in `dir` (`repo.git`): `train.py` at tag `v1`, and `later.py` after it
/// on `main`. Its file:// URL.
pub(crate) fn bare_repo(dir: &Path) -> String {
    let git = |cwd: &Path, args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(cwd)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    let work = dir.join("repo-work");
    std::fs::create_dir(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("train.py"), "print('at v1')\n").unwrap();
    git(&work, &["add", "train.py"]);
    git(&work, &["commit", "-qm", "one"]);
    git(&work, &["tag", "v1"]);
    std::fs::write(work.join("later.py"), "print('after v1')\n").unwrap();
    git(&work, &["add", "later.py"]);
    git(&work, &["commit", "-qm", "two"]);
    git(dir, &["clone", "-q", "--bare", "repo-work", "repo.git"]);
    std::fs::remove_dir_all(&work).unwrap();
    format!("file://{}", dir.join("repo.git").display())
}

/// `sbatch` and `squeue` shims in `dir/.shims`: the job is 4242, pending.
fn shims(dir: &Path) -> std::path::PathBuf {
    let shims = dir.join(".shims");
    std::fs::create_dir(&shims).unwrap();
    crate::harness::shim(&shims, "sbatch", "echo 4242");
    crate::harness::shim(
        &shims,
        "squeue",
        "echo \"4242|PENDING|Resources|0:00|1|$(date +%Y-%m-%dT%H:%M:%S)|\"",
    );
    shims
}

/// Everything under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                pending.push(p.clone());
            }
            found.push(p.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    found.sort();
    found
}

#[test]
fn a_git_workdir_is_cloned_at_its_ref_into_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let url = bare_repo(dir.path());
    let shims = shims(dir.path());
    std::fs::write(
        dir.path().join("task.yaml"),
        format!("name: gitwd\nworkdir:\n  url: {url}\n  ref: v1\nrun: python train.py\n"),
    )
    .unwrap();
    launch_in(dir.path(), &["task.yaml"])
        .env("RAYSLURM_CONFIG", "/dev/null")
        .shims(&shims)
        .expect_status(0)
        .expect_stderr_contains(&format!("workdir: {url}@v1 cloned now"))
        .expect_stderr_contains(&format!("snapshot of {url}@v1: "))
        .run();
    let snap = run_dir(dir.path()).join("snapshot");
    assert_eq!(
        std::fs::read_to_string(snap.join("train.py")).unwrap(),
        "print('at v1')\n"
    );
    assert!(!snap.join("later.py").exists());
    assert!(snap.join(".git").is_dir(), "{:?}", tree(&snap));
}

#[test]
fn a_git_workdir_that_cannot_be_cloned_is_refused_with_what_git_said() {
    let dir = tempfile::tempdir().unwrap();
    let url = bare_repo(dir.path());
    let shims = shims(dir.path());
    std::fs::write(
        dir.path().join("task.yaml"),
        format!("workdir:\n  url: {url}\n  ref: no-such-tag\nrun: ls\n"),
    )
    .unwrap();
    let ran = launch_in(dir.path(), &["task.yaml"])
        .env("RAYSLURM_CONFIG", "/dev/null")
        .shims(&shims)
        .expect_status(2)
        .expect_stderr_contains("could not be cloned, so nothing was submitted: git said: ")
        .run();
    assert!(ran.stderr.contains("no-such-tag"), "{}", ran.stderr);
    assert!(
        !state(dir.path()).join("jobs").exists()
            || tree(&state(dir.path()).join("jobs"))
                .iter()
                .all(|p| !p.ends_with(".d"))
    );
}

#[test]
fn a_skyignore_leaves_its_files_out_and_gitignore_aside() {
    let dir = tempfile::tempdir().unwrap();
    let code = dir.path().join("code");
    std::fs::create_dir_all(code.join("logs")).unwrap();
    let out = Command::new("git")
        .arg("-C")
        .arg(&code)
        .args(["init", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(code.join(".gitignore"), "logs/\n").unwrap();
    std::fs::write(code.join(".skyignore"), "secret.txt\n").unwrap();
    for f in ["train.py", "secret.txt", "logs/kept.log"] {
        std::fs::write(code.join(f), f).unwrap();
    }
    let shims = shims(dir.path());
    std::fs::write(
        dir.path().join("task.yaml"),
        "name: skyig\nworkdir: code\nrun: ls\n",
    )
    .unwrap();
    launch_in(dir.path(), &["task.yaml"])
        .env("RAYSLURM_CONFIG", "/dev/null")
        .shims(&shims)
        .expect_status(0)
        .run();
    let snap = run_dir(dir.path()).join("snapshot");
    assert_eq!(
        tree(&snap),
        [
            ".gitignore",
            ".skyignore",
            "logs",
            "logs/kept.log",
            "train.py"
        ]
    );
}

/// A file and a directory to the workdir, home and /tmp: the dry run says what is copied
/// where and writes nothing; submitted, the workdir's are in the snapshot, the others beside
/// it with their manifest.
#[test]
fn file_mounts_are_copied_at_submission_and_shown_by_the_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("data")).unwrap();
    std::fs::write(d.join("data/a.csv"), "1,2\n").unwrap();
    std::fs::write(d.join("cfg.json"), "{}\n").unwrap();
    std::fs::write(
        d.join("task.yaml"),
        "name: mounts\nrun: ls\nfile_mounts:\n  inputs/data: ./data\n  ~/rs-test/cfg.json: cfg.json\n  /tmp/rs-test/data: data\n",
    )
    .unwrap();
    let ran = launch_in(d, &["task.yaml", "--dry-run"])
        .env("RAYSLURM_CONFIG", "/dev/null")
        .expect_status(0)
        .run();
    for line in [
        format!(
            "file_mounts: {}/./data copied now, to `inputs/data` in each node's workdir",
            d.display()
        ),
        format!(
            "file_mounts: {}/cfg.json copied now, to `~/rs-test/cfg.json` under your home on each node",
            d.display()
        ),
        format!(
            "file_mounts: {}/data copied now, to `/tmp/rs-test/data` on each node's own disk",
            d.display()
        ),
    ] {
        assert!(ran.stderr.contains(&line), "{line}\n{}", ran.stderr);
    }
    assert!(!jobs_has_a_run(d));
    let shims = shims(d);
    launch_in(d, &["task.yaml"])
        .env("RAYSLURM_CONFIG", "/dev/null")
        .shims(&shims)
        .expect_status(0)
        .run();
    let run = run_dir(d);
    assert_eq!(
        std::fs::read_to_string(run.join("snapshot/inputs/data/a.csv")).unwrap(),
        "1,2\n"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("file_mounts/1")).unwrap(),
        "{}\n"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("file_mounts/2/a.csv")).unwrap(),
        "1,2\n"
    );
    let manifest = std::fs::read_to_string(run.join("file_mounts/manifest.json")).unwrap();
    assert!(
        manifest.contains("rs-test/cfg.json") && manifest.contains("/tmp/rs-test/data"),
        "{manifest}"
    );
}

fn jobs_has_a_run(dir: &Path) -> bool {
    std::fs::read_dir(state(dir).join("jobs"))
        .is_ok_and(|mut d| d.any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".d")))
}

/// `/inputs`, which a user cannot make on a bare node, is shown there in a private view of
/// the node's filesystem; a system directory is refused at its line with the ways out; in an
/// image it is a bind mount of the copy.
#[test]
fn a_file_mount_outside_home_and_tmp_is_in_a_view_or_bound_into_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("data")).unwrap();
    std::fs::write(
        d.join("task.yaml"),
        "run: ls\nfile_mounts:\n  /inputs: ./data\n",
    )
    .unwrap();
    let ran = launch_in(d, &["task.yaml", "--dry-run"])
        .env("RAYSLURM_CONFIG", "/dev/null")
        .expect_status(0)
        .run();
    assert!(
        ran.stderr
            .contains("to `/inputs` shown on each node in a private view of its filesystem"),
        "{}",
        ran.stderr
    );
    std::fs::write(
        d.join("system.yaml"),
        "run: ls\nfile_mounts:\n  /usr/local/inputs: ./data\n",
    )
    .unwrap();
    let ran = launch_in(d, &["system.yaml", "--dry-run"])
        .env("RAYSLURM_CONFIG", "/dev/null")
        .expect_status(2)
        .run();
    for needle in [
        "error: system.yaml:3: file_mounts./usr/local/inputs: `/usr/local/inputs` is the node's own system directory",
        "relative to the workdir",
        "`~/data: ./data`",
    ] {
        assert!(ran.stderr.contains(needle), "{needle}: {}", ran.stderr);
    }
    assert!(!jobs_has_a_run(d));
    std::fs::write(d.join("img.sqsh"), "").unwrap();
    let ran = launch_in(
        d,
        &[
            "task.yaml",
            "--dry-run",
            "--container-image",
            "img.sqsh",
            "--container-runtime",
            "apptainer",
        ],
    )
    .env("RAYSLURM_CONFIG", "/dev/null")
    .expect_status(0)
    .run();
    assert!(
        ran.stderr
            .contains("to `/inputs` bound into the container image"),
        "{}",
        ran.stderr
    );
    let binds = regex::Regex::new(r"--container-mounts[= ]\S*file_mounts/0:/inputs").unwrap();
    assert!(binds.is_match(&ran.stdout), "{}", ran.stdout);
}

/// The private view a run's programs get where a file mount goes outside the home and `/tmp`
/// (`rayslurm root-view`, as the bootstrap runs them): the program sees each source at its
/// destination, new at the top (`/rstest-…`) or beside what a node's directory has
/// (`/tmp/…/new`, its directory made anew in the view); nothing is made on the machine itself;
/// a destination below a link is refused by name.
#[test]
fn a_private_view_shows_each_mount_and_makes_nothing_on_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["base", "src", "real", "beside"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    std::fs::write(d.join("src/a"), "from-src").unwrap();
    std::fs::write(d.join("beside/kept"), "kept").unwrap();
    std::os::unix::fs::symlink(d.join("real"), d.join("link")).unwrap();
    let top = format!("/rstest-{}", d.file_name().unwrap().to_string_lossy());
    let beside = d.join("beside/new");
    let view = |dst: &Path, script: &str| {
        let (base, src) = (d.join("base"), d.join("src"));
        crate::harness::rayslurm([
            "root-view".as_ref(),
            "--base".as_ref(),
            base.as_os_str(),
            "--bind".as_ref(),
            src.as_os_str(),
            dst.as_os_str(),
            "--".as_ref(),
            "bash".as_ref(),
            "-c".as_ref(),
            std::ffi::OsStr::new(script),
        ])
        .cwd(d)
    };
    let ran = view(Path::new(&top), &format!("cat {top}/a"))
        .expect_status(0)
        .run();
    assert_eq!(ran.stdout, "from-src");
    let script = format!(
        "cat {0}/a {1}",
        beside.display(),
        d.join("beside/kept").display()
    );
    let ran = view(&beside, &script).expect_status(0).run();
    assert_eq!(ran.stdout, "from-srckept");
    assert!(!Path::new(&top).exists() && !beside.exists());
    let ran = view(&d.join("link/x"), "true").expect_status(1).run();
    assert!(
        ran.stderr
            .contains("is a link on this node: nothing can be shown below it"),
        "{}",
        ran.stderr
    );
    assert_eq!(std::fs::read_dir(d.join("real")).unwrap().count(), 0);
}
