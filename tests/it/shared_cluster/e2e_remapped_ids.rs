//! Inside a container that remaps ids (pyxis `--container-remap-root`, here `unshare -r`, which
//! maps the user to root and leaves host root unmapped), root's directories show the overflow
//! id: the private tree is still found safe where it is, and still refused where the group can
//! write. Run as the lab's first member (`rsalice`): root would pass every check.

use std::path::Path;
use std::process::{Command, Output};

use crate::harness::{bin, lab, text, unique_name};

/// `script` run by `sh -c` as `rsalice` inside a new user namespace (`unshare -r`), with `$0`
/// a copy of the binary under test she can run and `$1` `arg`, in an environment holding
/// only HOME, PATH and `vars`.
fn remapped(vars: &[String], script: &str, arg: &str) -> Output {
    let copy = Path::new("/srv/rayslurm-lab/test-bin").join(unique_name("rayslurm-userns"));
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(bin(), &copy).unwrap();
    let run = || {
        Command::new("runuser")
            .args(["-u", "rsalice", "--", "env", "-i", "HOME=/home/rsalice"])
            .arg("PATH=/usr/bin:/bin")
            .args(vars)
            .args(["unshare", "-r", "sh", "-c"])
            .arg(format!("test \"$(id -u)\" = 0 || exit 97; {script}"))
            .arg(&copy)
            .arg(arg)
            .output()
            .expect("runuser runs")
    };
    // A test beside this one may fork while the copy is still open for writing here: the
    // child holds it until its exec, and exec'ing the copy then fails with "Text file busy".
    let mut out = run();
    for _ in 0..5 {
        if !String::from_utf8_lossy(&out.stderr).contains("Text file busy") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        out = run();
    }
    let _ = std::fs::remove_file(&copy);
    assert_ne!(
        out.status.code(),
        Some(97),
        "unshare -r did not map the user to root"
    );
    out
}

/// `rayslurm launch --dry-run` as `rsalice` inside a new user namespace, with the state
/// directory `state`.
fn dry_run_remapped(state: &Path) -> Output {
    remapped(
        &[format!("RAYSLURM_STATE_DIR={}", state.display())],
        "cd /home/rsalice && exec \"$0\" launch --dry-run --exp-name userns --command true",
        "",
    )
}

#[test]
fn a_private_tree_is_safe_inside_a_container_that_remaps_ids_and_a_shared_one_is_not() {
    let Some((_lab, _turn)) = lab() else {
        return;
    };
    let state = Path::new("/home/rsalice").join(unique_name(".userns-state"));
    let out = dry_run_remapped(&state);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("dry run: wrote {}/jobs/userns_", state.display())),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&state);

    // The group's 2775 project directory stays refused inside as well.
    let shared = Path::new("/srv/rayslurm-lab/project");
    let out = dry_run_remapped(&shared.join(unique_name("state")));
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("`{}`", shared.display()))
            && stderr.contains("mode 2775")
            && stderr.contains("can be written by others"),
        "{stderr}"
    );
}

/// A listener on 127.0.0.1 started as `user`, outside any user namespace, that closes the
/// first connection at once, and ends 30 s after it listens if none came; returns it and its
/// port once it listens.
fn listen_as(user: &str) -> (std::process::Child, u16) {
    let mut child = Command::new("runuser")
        .args(["-u", user, "--", "python3", "-c"])
        .arg(
            // It ends by itself (a refused relay never connects, and killing `runuser`
            // would leave it behind).
            "import socket, time\n\
             s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n\
             print(s.getsockname()[1], flush=True)\n\
             s.settimeout(30)\n\
             try:\n    c, _ = s.accept(); c.close(); time.sleep(5)\n\
             except OSError:\n    pass",
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("runuser runs");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    (child, line.trim().parse().expect("a port"))
}

/// `rayslurm relay --to 127.0.0.1:PORT` as `rsalice` inside `unshare -r`.
fn relay_remapped(port: u16) -> Output {
    remapped(
        &[],
        "exec \"$0\" relay --to \"127.0.0.1:$1\" </dev/null",
        &port.to_string(),
    )
}

/// The check of a listening socket's owner, which keeps the token and the relay from another
/// user's port, holds inside a container that remaps ids: `/proc/net/tcp` shows the owner as
/// the reader's namespace sees it, so the user's own listener is theirs (root inside) and
/// another member's is an unmapped id, refused.
#[test]
fn a_listener_of_another_member_is_refused_inside_a_container_that_remaps_ids() {
    let Some((_lab, _turn)) = lab() else {
        return;
    };
    let (mut bobs, port) = listen_as("rsbob");
    let out = relay_remapped(port);
    let _ = bobs.kill();
    let _ = bobs.wait();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "port {port} on 127.0.0.1 is held by user id 65534, not by you (user id 0)"
        )),
        "{stderr}"
    );

    // The user's own listener, started outside, is theirs inside: the relay connects.
    let (mut own, port) = listen_as("rsalice");
    let out = relay_remapped(port);
    let _ = own.kill();
    let _ = own.wait();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
