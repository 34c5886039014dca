use super::*;

/// A PATH of links to the tools the script needs, with `sbatch` or without.
fn tools(dir: &Path, with_slurm: bool) -> std::path::PathBuf {
    let bin = dir.join(if with_slurm { "bin-slurm" } else { "bin" });
    std::fs::create_dir(&bin).unwrap();
    for tool in [
        "sh", "mkdir", "rm", "find", "cat", "tar", "hostname", "ls", "id",
    ] {
        let found = which::which(tool).unwrap();
        std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
    }
    if with_slurm {
        std::os::unix::fs::symlink("/bin/true", bin.join("sbatch")).unwrap();
    }
    bin
}

/// The script run here by `sh`, as the login node would: its exit code and what it said.
fn run_here(script: &str, home: &Path, path: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(path.join("sh"))
        .arg("-c")
        .arg(script)
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_script_asks_for_the_copy_then_runs_it_with_the_words_and_leaves_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let ssh = Ssh::new("login", dir.path()).unwrap();
    let mut session = Session {
        ssh: &ssh,
        id: "s1".into(),
        binary: "ab12".into(),
        words: vec![Word::Plain("status".into()), Word::Plain("it's".into())],
        sent: None,
        env_file: false,
        terminal: false,
        version: "rayslurm 1.0 (test)".into(),
    };
    // No Slurm there: named, exit 2, nothing made.
    let (code, _, said) = run_here(&session.script(), &home, &tools(dir.path(), false));
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("has no Slurm where rayslurm runs over SSH"),
        "{said}"
    );
    assert!(!home.join(".local").exists());
    // Slurm, no copy yet: the code that asks for one.
    let slurm = tools(dir.path(), true);
    let (code, _, said) = run_here(&session.script(), &home, &slurm);
    assert_eq!(code, Some(NEEDS_BINARY), "{said}");
    // A rayslurm on the PATH there: used if it is this version, else the copy is asked for.
    let fake = |said: &str| {
        let path = slurm.join("rayslurm");
        let _ = std::fs::remove_file(&path);
        std::fs::write(
            &path,
            format!("#!/bin/sh\n[ \"$1\" = --version ] && {{ echo '{said}'; exit 0; }}\necho \"on path:$*\"\n"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    std::fs::set_permissions(&slurm, std::fs::Permissions::from_mode(0o755)).unwrap();
    fake("rayslurm 0.9 (older)");
    let (code, out, said) = run_here(&session.script(), &home, &slurm);
    assert_eq!(code, Some(NEEDS_BINARY), "{out}{said}");
    fake("rayslurm 1.0 (test)");
    let (code, out, said) = run_here(&session.script(), &home, &slurm);
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "on path:status it's\n"),
        "{said}"
    );
    std::fs::set_permissions(
        slurm.join("rayslurm"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let (code, _, said) = run_here(&session.script(), &home, &slurm);
    assert_eq!(
        code,
        Some(NEEDS_BINARY),
        "one anyone can change is not run: {said}"
    );
    // The copy: run with the words as given, in a private directory removed after.
    let copies = home.join(".local/state/rayslurm/laptop-bin");
    std::fs::create_dir_all(&copies).unwrap();
    for d in [home.join(".local/state/rayslurm"), copies.clone()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let copy = copies.join("rayslurm-ab12");
    std::fs::write(
        &copy,
        "#!/bin/sh\necho \"args:$*\"; ls \"$HOME/.local/state/rayslurm/laptop\"\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (code, out, said) = run_here(&session.script(), &home, &slurm);
    assert_eq!(code, Some(3), "{said}");
    assert!(out.starts_with("args:status it's\n"), "{out}");
    assert!(out.contains("s1"), "its own directory while it runs: {out}");
    let left = std::fs::read_dir(home.join(".local/state/rayslurm/laptop"))
        .unwrap()
        .count();
    assert_eq!(left, 0, "the private directory is removed");
    // The Python API's outcome asks no Slurm.
    session.words = vec![Word::Plain("call-outcome".into())];
    let (code, _, said) = run_here(&session.script(), &home, &tools(&home, false));
    assert_eq!(code, Some(3), "{said}");
}

#[test]
fn the_script_runs_the_words_quoted_and_paths_into_what_was_sent() {
    let dir = tempfile::tempdir().unwrap();
    let ssh = Ssh::new("login", dir.path()).unwrap();
    let session = Session {
        ssh: &ssh,
        id: "abc".into(),
        binary: "f00d".into(),
        words: vec![
            Word::Plain("launch".into()),
            Word::Plain("--command=echo 'hi'".into()),
            Word::Sent {
                before: "--workdir=".into(),
                rel: "w0".into(),
            },
        ],
        sent: Some(dir.path()),
        env_file: true,
        terminal: false,
        version: "rayslurm 1.0 (test)".into(),
    };
    let script = session.script();
    assert!(
        script.contains("B=$S/laptop-bin/rayslurm-f00d\n"),
        "{script}"
    );
    assert!(script.contains("U=$S/laptop/abc\n"), "{script}");
    assert!(
        script.contains(r#""$B" launch '--command=echo '\''hi'\''' --workdir="$U"/w0 </dev/null"#),
        "{script}"
    );
    assert!(script.contains("tar -xf - -C \"$U\""), "{script}");
    assert!(script.contains(". \"$U/env.sh\""), "{script}");
    // What sh makes of it: the words as given.
    let out = Command::new("sh")
        .arg("-n")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", read_all(&out.stderr[..]));
}
