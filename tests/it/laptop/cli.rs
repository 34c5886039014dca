//! Where `--host` comes from, without a cluster: the flag, `RAYSLURM_HOST`, the user's own
//! config file's `host`, and never a project file's (whoever wrote it would choose where the
//! user's commands and code go). An empty `RAYSLURM_HOST` (what a command run there by
//! `--host` has) means here, whatever the config file says.

use crate::harness::{rayslurm, text};

/// A login node no one can reach: ssh fails at once, naming it.
const NOWHERE: &str = "rsl-no-such-host.invalid";

#[test]
fn the_config_files_host_sends_commands_there_and_an_empty_variable_keeps_them_here() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("host = \"{NOWHERE}\"\n")).unwrap();
    let state = dir.path().join("state");
    let run = |host_var: Option<&str>| {
        let mut run = rayslurm(["status"])
            .env("RAYSLURM_CONFIG", config.as_os_str())
            .env("RAYSLURM_STATE_DIR", state.as_os_str())
            .cwd(dir.path());
        run = match host_var {
            Some(v) => run.env("RAYSLURM_HOST", v),
            None => run.env_remove("RAYSLURM_HOST"),
        };
        run.output()
    };
    let out = run(None);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("cannot connect to {NOWHERE} over SSH")),
        "{stderr}"
    );
    // Set but empty: here (no runs recorded: an empty list).
    let out = run(Some(""));
    let (stdout, stderr) = text(&out);
    assert!(!stderr.contains("over SSH"), "{stdout}{stderr}");
}

#[test]
fn a_project_file_cannot_name_the_login_node() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rayslurm.toml"),
        format!("host = \"{NOWHERE}\"\n[launch]\ntime = \"1:00\"\n"),
    )
    .unwrap();
    let out = rayslurm([
        "launch",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--dry-run",
    ])
    .env("RAYSLURM_CONFIG", "/dev/null")
    .env("RAYSLURM_STATE_DIR", dir.path().join("state").as_os_str())
    .env_remove("RAYSLURM_HOST")
    .cwd(dir.path())
    .output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("a project file cannot choose where your commands and code go"),
        "{stderr}"
    );
    assert!(
        stdout.is_empty() && !dir.path().join("rayslurm-logs").exists(),
        "{stdout}"
    );
}

#[test]
fn a_host_that_is_no_name_is_refused_before_ssh_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = rayslurm(["--host=-oProxyCommand=touch pwned", "status"])
        .env("RAYSLURM_STATE_DIR", dir.path().join("state").as_os_str())
        .cwd(dir.path())
        .output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("not a host name"), "{stderr}");
    assert!(!dir.path().join("pwned").exists());
}

/// A project file in the laptop's directory is not read with `--host` (the login node's
/// settings apply): said before anything else happens.
#[test]
fn a_project_file_on_the_laptop_is_said_not_to_be_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rayslurm.toml"),
        "[launch]\npartition = \"gpu\"\n",
    )
    .unwrap();
    let out = rayslurm([
        "--host",
        NOWHERE,
        "launch",
        "--exp-name",
        "x",
        "--command",
        "true",
    ])
    .env("RAYSLURM_CONFIG", "/dev/null")
    .env("RAYSLURM_STATE_DIR", dir.path().join("state").as_os_str())
    .cwd(dir.path())
    .output();
    let (stdout, stderr) = text(&out);
    assert!(
        stderr.contains("./rayslurm.toml here is not read with --host"),
        "{stdout}{stderr}"
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
}
