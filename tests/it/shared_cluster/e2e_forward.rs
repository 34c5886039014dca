//! End-to-end: `rayslurm forward` of the victim's run serves the victim alone, at both ends.
//! On the login node, another member's connection to the victim's local port is closed
//! unanswered (each connection would be a relay step run as the victim). On the head node,
//! a port of the run that another member holds is never connected to: the relay refuses,
//! naming the holder's uid. docs/security.md lists both attacks with this test.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::two_users::{
    ATTACKER, CancelOnPanic, Stop, VICTIM, answer, attacker_runs_on, project_dir, sh_as, uid,
    user_bin, users_slurm, victim_launches_as,
};
use crate::harness::{Lab, connect_probe, lab, scontrol_job, text};

/// The victim's run without Ray serves a page on port `remote` of its head node; the attacker,
/// with a shell there, listens on another port of the run (`held`) before the victim forwards
/// both. The attacker's connection to the victim's local port gets nothing; the victim's own
/// gets the page; the victim's connection to the held port never reaches the attacker's
/// listener, and the forward says whose it is.
#[test]
fn another_member_neither_uses_the_victims_forward_nor_is_connected_to_by_it() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("fwdattack");
    let content = format!("the victim's page, test {}", std::process::id());
    std::fs::write(dir.join("page.txt"), &content).unwrap();
    let base = 23000 + (std::process::id() % 500) as u16 * 2;
    let (remote, held) = (base, base + 1);
    let (local, local_held) = (base + 1000, base + 1001);
    let name = format!("fwdattack{}", std::process::id());
    let (job, head) = victims_server(lab, &dir, &name, remote);
    let _cancel = CancelOnPanic(job.clone());
    let stop = Stop(dir.join("stop"));
    let mut squat = attacker_runs_on(&head, &dir, &listener(held, &stop.0));
    // Kept open to the end: the listener's last word is how many connections came.
    let mut squat_says = BufReader::new(squat.stdout.take().unwrap());
    let mut bound = String::new();
    squat_says.read_line(&mut bound).unwrap();
    assert_eq!(bound.trim(), "bound", "{:?}", squat.wait_with_output());
    let mut forward = victims_forward(&dir, &name, &[(remote, local), (held, local_held)]);
    let mut out = BufReader::new(forward.stdout.take().unwrap());
    let mut urls = String::new();
    for _ in 0..2 {
        out.read_line(&mut urls).unwrap();
    }
    assert_eq!(
        urls,
        format!("http://localhost:{local}\nhttp://localhost:{local_held}\n")
    );
    std::fs::write(dir.join("probe.py"), connect_probe(local)).unwrap();
    std::fs::write(dir.join("probe_held.py"), connect_probe(local_held)).unwrap();
    let theirs = sh_as(ATTACKER, &dir, "python3 probe.py");
    let page = sh_as(
        VICTIM,
        &dir,
        &format!(
            "python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:{local}/page.txt\").read().decode())'"
        ),
    );
    let to_held = sh_as(VICTIM, &dir, "python3 probe_held.py");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(forward.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    let forwarded = forward.wait_with_output().unwrap();
    drop(stop);
    let mut came = String::new();
    std::io::Read::read_to_string(&mut squat_says, &mut came).unwrap();
    let squatted = squat.wait_with_output().unwrap();
    let _ = Command::new("scancel").arg(&job).status();
    let said = String::from_utf8_lossy(&forwarded.stderr);
    assert_eq!(text(&theirs).0.trim(), "closed", "{}", text(&theirs).1);
    assert_eq!(text(&page).0.trim(), content, "{}\n{said}", text(&page).1);
    assert_eq!(
        text(&to_held).0.trim(),
        "closed",
        "{}\n{said}",
        text(&to_held).1
    );
    assert!(
        said.contains("it is not yours (1 refused so far)")
            && said.contains(&format!(
                "the relay on {head} does not connect to 127.0.0.1:{held}: uid {} ({ATTACKER}) listens on it",
                uid(ATTACKER)
            ))
            && said.contains(&format!(
                "port {held} on 0.0.0.0 is held by user id {}, not by you",
                uid(ATTACKER)
            )),
        "{said}"
    );
    assert_eq!(
        came.trim(),
        "0 no-token",
        "the attacker's listener was connected to: {}",
        text(&squatted).1
    );
    assert!(forwarded.status.success(), "{:?}: {said}", forwarded.status);
}

/// The victim's run `name` without Ray, launched from `dir`, serving `dir` on port `port` of its
/// head node's 127.0.0.1; its job and head node, once the server is up.
fn victims_server(lab: &Lab, dir: &Path, name: &str, port: u16) -> (String, String) {
    let (job, log) = victim_launches_as(
        lab,
        dir,
        name,
        &format!(
            "--no-ray -n 1 --command 'exec python3 -u -m http.server {port} --bind 127.0.0.1 --directory {}'",
            dir.display()
        ),
    );
    let t0 = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("Serving HTTP on")) {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = Command::new("scancel").arg(&job).status();
            panic!(
                "the victim's server never started: {:?}",
                std::fs::read_to_string(&log)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let head = scontrol_job(&job)["BatchHost"].clone();
    (job, head)
}

/// The attacker's listener on `port` of every address of the node: it says `bound`, answers
/// every request until `stop` exists, then prints how many came.
fn listener(port: u16, stop: &Path) -> String {
    format!(
        "import os, socket, sys, time\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind((\"0.0.0.0\", {port}))\ns.listen(16)\nprint(\"bound\", flush=True)\n{}",
        answer(120, stop, false)
    )
}

/// The victim's `rayslurm forward NAME REMOTE:LOCAL ...` from `dir`, started as the victim
/// with `setpriv` (which execs it, so that the child's pid is the forward's own and Ctrl-C
/// reaches it), its output piped.
fn victims_forward(dir: &Path, name: &str, ports: &[(u16, u16)]) -> std::process::Child {
    let gid = Command::new("id").args(["-g", VICTIM]).output().unwrap();
    Command::new("setpriv")
        .arg(format!("--reuid={}", uid(VICTIM)))
        .arg(format!(
            "--regid={}",
            String::from_utf8_lossy(&gid.stdout).trim()
        ))
        .args(["--init-groups", "env", "-i"])
        .arg(format!("HOME=/home/{VICTIM}"))
        .arg(format!("USER={VICTIM}"))
        .args(users_slurm())
        .arg(user_bin())
        .args(["forward", name])
        .args(ports.iter().map(|(r, l)| format!("{r}:{l}")))
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}
