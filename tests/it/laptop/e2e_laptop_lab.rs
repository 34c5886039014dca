//! The lab's laptop and login node, before any rayslurm runs across them: what the tests of
//! `rayslurm --host` rely on, each shown with a control beside it.

use std::path::Path;

use crate::harness::{LAPTOP_ROOT, LAPTOP_USER, LOGIN_HOST, Laptop, SLURM_CLIENTS, lab, text};

/// `ssh lab-login ...` on the laptop, to its end.
fn ssh(laptop: &Laptop, args: &[&str]) -> std::process::Output {
    laptop
        .command("ssh")
        .arg(LOGIN_HOST)
        .args(args)
        .output()
        .unwrap()
}

fn stdout_of(out: &std::process::Output, what: &str) -> String {
    let (stdout, stderr) = text(out);
    assert!(
        out.status.success(),
        "{what}: exit {:?}\n{stdout}{stderr}",
        out.status.code()
    );
    stdout
}

#[test]
fn e2e_the_laptop_logs_in_to_the_login_node_as_rsalice_with_one_authentication() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "login") else {
        return;
    };
    let (mine, everyone) = (laptop.auth_count(), lab.sshd_auth_count(LAPTOP_USER));
    assert_eq!(mine, 0, "a new laptop's key has never logged in");
    let out = ssh(&laptop, &["id -un; echo \"$HOME\"; pwd"]);
    let stdout = stdout_of(&out, "ssh lab-login");
    assert_eq!(
        stdout,
        format!("{LAPTOP_USER}\n/home/{LAPTOP_USER}\n/home/{LAPTOP_USER}\n")
    );
    assert_eq!(laptop.auth_count(), 1, "one login, one authentication");
    assert!(lab.sshd_auth_count(LAPTOP_USER) > everyone);
}

#[test]
fn e2e_slurms_commands_answer_on_the_login_node_over_ssh() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "squeue") else {
        return;
    };
    let out = ssh(
        &laptop,
        &["sbatch --version && squeue -h -u nobody-at-all -o %i; squeue | head -n1"],
    );
    let stdout = stdout_of(&out, "ssh lab-login squeue");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("slurm"), "{stdout}");
    assert!(lines[1].trim_start().starts_with("JOBID"), "{stdout}");
}

#[test]
fn e2e_the_laptop_has_no_slurm_and_no_ray() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "no-slurm") else {
        return;
    };
    let python = lab.venv.join("bin/python");
    // The control: on the login node both are there.
    assert!(python.exists(), "{}", python.display());
    let out = ssh(&laptop, &["sbatch --version"]);
    stdout_of(&out, "sbatch on the login node");
    // Each client the login node has is masked; one it lacks is missing on the laptop too.
    for client in SLURM_CLIENTS {
        let out = laptop.command(client).arg("--version").output().unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(127), "{client}: {stdout}{stderr}");
        if which::which(client).is_ok() {
            assert!(
                stderr.contains("no Slurm on the laptop"),
                "{client}: {stderr}"
            );
        }
    }
    let out = laptop.sh(&format!(
        "test ! -e {python} && test ! -e /srv/rayslurm-lab/shared && test ! -e /home/{LAPTOP_USER} \
         && test ! -e /etc/slurm/slurm.conf && ! python3 -c 'import ray' 2>/dev/null",
        python = python.display()
    ));
    stdout_of(
        &out,
        "the lab's Ray, shared directory, homes and slurm.conf are hidden",
    );
    let out = laptop.sh("rayslurm --version");
    assert!(
        stdout_of(&out, "rayslurm on the laptop").starts_with("rayslurm "),
        "{out:?}"
    );
}

#[test]
fn e2e_the_login_node_cannot_read_the_laptops_files() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "private") else {
        return;
    };
    let code = laptop.write("project/train.py", "print('from the laptop')\n");
    let scratch = Path::new("/tmp").join(crate::harness::unique_name("laptop-scratch"));
    let made = laptop.sh(&format!("echo scratch >{}", scratch.display()));
    stdout_of(&made, "a file in the laptop's /tmp");
    // The control: the laptop reads it.
    assert_eq!(laptop.read(&code), "print('from the laptop')\n");
    let key = laptop.home().join(".ssh/id_ed25519");
    stdout_of(
        &laptop.sh(&format!("test -s {}", key.display())),
        "the laptop's key",
    );
    for path in [&code, &key, &scratch] {
        assert!(!path.exists(), "{} is seen from the host", path.display());
        let out = ssh(&laptop, &["cat", &path.display().to_string()]);
        assert!(
            !out.status.success(),
            "the login node read {}",
            path.display()
        );
    }
    let on_host: Vec<_> = std::fs::read_dir(LAPTOP_ROOT).unwrap().collect();
    assert!(on_host.is_empty(), "{LAPTOP_ROOT} on the host: {on_host:?}");
    let out = ssh(&laptop, &["ls", "-A", LAPTOP_ROOT]);
    assert_eq!(stdout_of(&out, "ls on the login node"), "");
}

#[test]
fn e2e_a_key_the_login_node_does_not_know_is_refused() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "wrong-key") else {
        return;
    };
    let made = laptop.sh("ssh-keygen -q -t ed25519 -N '' -C wrong -f ~/wrong_key");
    stdout_of(&made, "ssh-keygen");
    // No config (it would add the right key), the login node named in full.
    let with = |key: &str| {
        laptop
            .command("ssh")
            .args(["-F", "/dev/null", "-i", key, "-o", "IdentitiesOnly=yes"])
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=yes",
                "-p",
                "2222",
            ])
            .arg(format!("{LAPTOP_USER}@127.0.0.1"))
            .arg("true")
            .output()
            .unwrap()
    };
    let home = laptop.home();
    let out = with(&home.join("wrong_key").display().to_string());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(255), "{stderr}");
    assert!(stderr.contains("Permission denied (publickey)"), "{stderr}");
    assert_eq!(laptop.auth_count(), 0);
    // The control: the same command with the laptop's own key gets in.
    let out = with(&home.join(".ssh/id_ed25519").display().to_string());
    stdout_of(&out, "ssh with the laptop's key");
    assert_eq!(laptop.auth_count(), 1);
}

#[test]
fn e2e_one_master_connection_is_one_authentication() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "master") else {
        return;
    };
    let master = [
        "-o",
        "ControlMaster=auto",
        "-o",
        "ControlPath=~/.ssh/cm-%C",
        "-o",
        "ControlPersist=60",
    ];
    for k in 0..5 {
        let mut args = master.to_vec();
        let command = format!("echo {k}");
        args.push(&command);
        let out = ssh(&laptop, &args);
        assert_eq!(stdout_of(&out, "ssh through the master"), format!("{k}\n"));
    }
    assert_eq!(
        laptop.auth_count(),
        1,
        "5 commands through one master connection"
    );
    let mut args = master.to_vec();
    args.extend(["-O", "exit"]);
    let out = ssh(&laptop, &args);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "ssh -O exit: {stderr}");
    // The control: without a master, each command logs in again.
    for _ in 0..2 {
        stdout_of(&ssh(&laptop, &["true"]), "ssh without a master");
    }
    assert_eq!(laptop.auth_count(), 3, "2 more logins without the master");
    assert!(Path::new(LAPTOP_ROOT).read_dir().unwrap().next().is_none());
}

/// A command started on the laptop is the process the test holds (no nsenter or setpriv left
/// between): a signal the test sends, as Ctrl-C does, reaches it.
#[test]
fn e2e_a_signal_to_a_laptop_command_reaches_the_command_itself() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "signal") else {
        return;
    };
    let mut child = laptop
        .command("bash")
        .args([
            "-c",
            "trap 'exit 130' INT; echo $$; while :; do sleep 0.05; done",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line = crate::harness::first_line(&mut child);
    assert_eq!(
        line.trim(),
        child.id().to_string(),
        "the shell is the child itself"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = crate::harness::wait_within(child, std::time::Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(130), "{out:?}");
}
