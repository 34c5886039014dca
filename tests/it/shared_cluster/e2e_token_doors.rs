//! End-to-end: the run's token goes only through doors rayslurm has checked. Another member of
//! the victim's group (`rsbob`) with a shell on the head node binds a port of the victim's run,
//! on the head node's own IP (where the login node connects) or on 127.0.0.1 (where the head
//! connects), before Ray's dashboard binds it or after it died: no request with the token ever
//! reaches them, the head names the port and their uid, and the victim's `exec`, `queue` and
//! `down` say why they send the cluster nothing. And no process of the run carries the token on
//! its command line, which every user of a node can read. docs/security.md lists each attack
//! with its test here.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::two_users::{
    ATTACKER, CancelOnPanic, Stop, VICTIM, answer, attacker_runs_on, listeners_on, project_dir,
    sh_as, uid, user_bin, users_slurm, victim_launches_as,
};
use crate::harness::{
    Job, Lab, connect_probe, first_line, lab, processes_with, text, wait_job_end,
};

/// No command line on this machine holds `token` (it sees the processes of every lab node,
/// each node's PID namespace a child of this one, and of the login node; /proc/PID/cmdline is
/// readable by every user); and the look saw the run's own programs (Ray's GCS, a raylet and
/// rayslurm's bootstrap), so a look that found nothing at all cannot pass.
fn no_command_line_holds(token: &str, when: &str) {
    assert!(token.len() >= 16, "a real token: {token:?}");
    let holding: Vec<_> = processes_with(&[token])
        .into_iter()
        .map(|pid| {
            let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            (pid, String::from_utf8_lossy(&argv).replace('\0', " "))
        })
        .collect();
    assert!(
        holding.is_empty(),
        "{when}: the token is on these command lines: {holding:?}"
    );
    for program in ["gcs_server", "raylet", "rayslurm"] {
        assert!(
            !processes_with(&[program]).is_empty(),
            "{when}: no {program} among the processes: the look saw no run"
        );
    }
}

/// The victim's cluster, tried by another member three ways. Its dashboard forwarded to the
/// login node's 127.0.0.1, where every user can connect and each connection would be an `srun`
/// step run as the victim: another member's connection is closed unanswered, the victim's own
/// is served. While the victim's `exec` runs a job, no process anywhere carries the token on
/// its command line. Then Ray's dashboard dies while the other member, with a shell on the head
/// node, tries to take its port on the head node's IP: the port stays the victim's, and the
/// victim's `exec`, `queue` and `down` say the dashboard ended. One cluster for all three (a Ray
/// start is seconds of the lab's 2 cores).
#[test]
fn another_member_can_neither_use_the_victims_dashboard_forward_nor_get_the_token_on_its_port() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("forward");
    let name = format!("fwd{}", std::process::id());
    let out = sh_as(
        VICTIM,
        &dir,
        &format!(
            "\"$RAYSLURM\" up {name} -n 1 --time 5 --json --object-store-memory 100000000 --load-env 'source {}/bin/activate'",
            lab.venv.display()
        ),
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "up as {VICTIM}: {stderr}");
    // Cancelled if the test fails before its `down`, so that its node is not held until the
    // time limit.
    let cluster = Job::launched(
        stdout.lines().next().unwrap_or_default().as_bytes(),
        dir.clone(),
        Default::default(),
    );
    the_victims_dashboard_forward_serves_the_victim_alone(&dir, &name);
    no_command_line_holds_the_token_while_a_job_runs(&dir, &name, &cluster.log);
    the_dead_dashboards_port_stays_the_victims_on_every_address(
        lab,
        &dir,
        &name,
        &cluster.id,
        &cluster.log,
    );
}

/// The victim's forward of cluster `name`'s dashboard, for 30 s (then Ctrl-C, as its user
/// would): the other member's connection is closed unanswered, the victim's own answered.
fn the_victims_dashboard_forward_serves_the_victim_alone(dir: &Path, name: &str) {
    let local = 30000 + (std::process::id() % 500) as u16;
    let mut forward = Command::new("runuser")
        .args(["-u", VICTIM, "--", "env", "-i"])
        .arg(format!("HOME=/home/{VICTIM}"))
        .args(users_slurm())
        .args(["timeout", "-s", "INT", "30"])
        .arg(user_bin())
        .args(["dashboard", name, "--port", &local.to_string()])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = first_line(&mut forward);
    assert_eq!(url.trim(), format!("http://localhost:{local}"));
    // Readable by both members, as the project's files are.
    std::fs::write(dir.join("probe.py"), connect_probe(local)).unwrap();
    let connect = "python3 probe.py";
    let theirs = sh_as(ATTACKER, dir, connect);
    let mine = sh_as(VICTIM, dir, connect);
    let forwarded = forward.wait_with_output().unwrap();
    assert_eq!(text(&theirs).0.trim(), "closed", "{}", text(&theirs).1);
    assert_eq!(text(&mine).0.trim(), "answered", "{}", text(&mine).1);
    let said = String::from_utf8_lossy(&forwarded.stderr);
    assert!(
        said.contains("it is not yours (1 refused so far)"),
        "{said}"
    );
}

fn cluster_info(log: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(log.with_extension("d").join("cluster.json")).unwrap(),
    )
    .unwrap()
}

/// The victim `exec`s a job into cluster `name` that runs for a while and looks, while it
/// runs, at every command line on this machine (the head's Ray, the job's driver and its
/// supervisor, the bootstrap, the login node's relay step): none holds the token.
fn no_command_line_holds_the_token_while_a_job_runs(dir: &Path, name: &str, log: &Path) {
    let info = cluster_info(log);
    let token = std::fs::read_to_string(info["token_file"].as_str().unwrap()).unwrap();
    let started = dir.join("job-started");
    let mut exec = Command::new("runuser")
        .args(["-u", VICTIM, "--", "env", "-i"])
        .arg(format!("HOME=/home/{VICTIM}"))
        .args(users_slurm())
        .arg(user_bin())
        .args(["exec", name, "--command"])
        .arg(format!("touch {}; sleep 15", started.display()))
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !started.exists() {
        if t0.elapsed() > Duration::from_secs(60) || exec.try_wait().unwrap().is_some() {
            let _ = exec.kill();
            let out = exec.wait_with_output().unwrap();
            panic!("the exec'd job never started: {}", text(&out).1);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    no_command_line_holds(token.trim(), "while an exec'd job runs");
    let out = exec.wait().unwrap();
    assert!(out.success(), "exec as {VICTIM}");
    a_token_on_a_victims_command_line_is_read_by_the_attacker(dir, token.trim());
}

/// The control of [`no_command_line_holds`]: a process of the victim's given the token as an
/// argument is found by the same look, and the attacker reads the token off its command line.
fn a_token_on_a_victims_command_line_is_read_by_the_attacker(dir: &Path, token: &str) {
    let mut holder = Command::new("runuser")
        .args(["-u", VICTIM, "--", "sh", "-c", "sleep 20; :"])
        .arg(format!("holder-{token}"))
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let victims = uid(VICTIM);
    // The victim's own process (`runuser`, root's, holds the same argument).
    let pids = loop {
        let pids: Vec<u32> = processes_with(&[token])
            .into_iter()
            .filter(|pid| {
                std::fs::metadata(format!("/proc/{pid}"))
                    .is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == victims)
            })
            .collect();
        if !pids.is_empty() || t0.elapsed() > Duration::from_secs(10) {
            break pids;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let read = pids.first().map(|pid| {
        text(&sh_as(
            ATTACKER,
            dir,
            &format!("tr '\\0' ' ' < /proc/{pid}/cmdline"),
        ))
        .0
    });
    for pid in &pids {
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(
        read.as_deref().is_some_and(|r| r.contains(token)),
        "control: the look finds the victim's process holding the token ({pids:?}) and {ATTACKER} reads it: {read:?}"
    );
}

/// A Python program, run as the attacker on a node, that tries to bind `ip`:`port` every
/// millisecond until `stop` exists; if it ever binds, it answers every request as Ray's Jobs API
/// would and prints `bound`, then how many requests came and whether any carried a token; if
/// it never does, `never-bound` and how often it tried.
fn grabber(ip: &str, port: u16, stop: &Path) -> String {
    format!(
        r#"import os, socket, sys, time
tries = 0
s = None
while not os.path.exists("{stop}"):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("{ip}", {port}))
        s.listen(16)
        break
    except OSError:
        s.close()
        s = None
        tries += 1
        time.sleep(0.001)
if s is None:
    print("never-bound", tries, flush=True)
    sys.exit(0)
print("bound", flush=True)
{}"#,
        answer(240, stop, false),
        stop = stop.display()
    )
}

/// What `child` prints on stdout, gathered as it prints it by the thread returned.
fn what_it_says(
    child: &mut std::process::Child,
) -> (
    std::sync::Arc<std::sync::Mutex<String>>,
    std::thread::JoinHandle<()>,
) {
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let said = std::sync::Arc::clone(&said);
        let mut out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 256];
            while let Ok(n @ 1..) = std::io::Read::read(&mut out, &mut chunk) {
                said.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        })
    };
    (said, reader)
}

/// Ray's dashboard of the victim's cluster `name` (whose log is `log`) dies while the other
/// member, with a shell on the head node, tries every millisecond to bind its port on the head
/// node's IP (where Ray's programs send the token, and the login node would connect): the port
/// never becomes free (the head keeps the dashboard's listening socket), so no request reaches
/// them; the head's log says the dashboard ended, the victim's `exec` and `queue` fail saying
/// the same, and `down`, run while the other member still tries, releases the cluster. The
/// control: once the cluster (job `job`) has ended, the same program binds the same port.
fn the_dead_dashboards_port_stays_the_victims_on_every_address(
    lab: &Lab,
    dir: &Path,
    name: &str,
    job: &str,
    log: &Path,
) {
    let info = cluster_info(log);
    let head = info["head_node"].as_str().unwrap().to_owned();
    let head_ip = info["head_ip"].as_str().unwrap().to_owned();
    assert_eq!(
        head_ip,
        lab.ip_of(&head),
        "the head's address is its node's"
    );
    let port = info["dashboard_port"].as_u64().unwrap();
    let stop = Stop(dir.join("stop-grab"));
    let mut grab = attacker_runs_on(&head, dir, &grabber(&head_ip, port as u16, &stop.0));
    // What it says, as it says it: a failure below shows whether it got the port.
    let (said, reader) = what_it_says(&mut grab);

    // The dashboard dies (as it may, of memory), the attacker already trying for its port.
    let dashboard = processes_with(&["dashboard/dashboard.py", &format!("--port={port} ")]);
    assert_eq!(
        dashboard.len(),
        1,
        "one dashboard on port {port}: {dashboard:?}"
    );
    let _ = Command::new("kill")
        .args(["-KILL", &dashboard[0].to_string()])
        .status();
    // (The head names the dashboard's pid in its node's PID namespace, not this one.)
    // Then what the dashboard last wrote, from its own log on the head.
    let ended = format!("has ended; rayslurm keeps its port {port}");
    // (Killed, it wrote no error; warnings it wrote before may be shown.)
    let last_words = ["a signal ended it", "dashboard.log:\n  "];
    let t0 = Instant::now();
    while !std::fs::read_to_string(log)
        .unwrap()
        .split_once(&ended)
        .is_some_and(|(_, after)| last_words.iter().any(|w| after.contains(w)))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the head never said the dashboard ended, and its last words (the other member said: {:?}): {}",
            said.lock().unwrap(),
            std::fs::read_to_string(log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        !listeners_on(&head, port).is_empty(),
        "port {port} is still held, by the head"
    );
    // The victim's own commands learn why Ray's Jobs API is gone.
    let gone = "Ray's dashboard on the cluster's head has ended";
    for command in [
        format!("\"$RAYSLURM\" exec {name} -- echo never-run"),
        format!("\"$RAYSLURM\" queue {name}"),
    ] {
        let out = sh_as(VICTIM, dir, &command);
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{command}: {stdout}{stderr}");
        assert!(stderr.contains(gone), "{command}: {stderr}");
    }
    // The other member, still trying, never got the port while the victim's head lived.
    let before = said.lock().unwrap().clone();
    assert_eq!(
        before, "",
        "the other member got port {port} on {head_ip}: {before}"
    );
    // `down` says so and still releases the cluster, the other member still trying.
    let down = sh_as(VICTIM, dir, &format!("\"$RAYSLURM\" down {name}"));
    let said_down = text(&down).1;
    assert!(down.status.success(), "{said_down}");
    assert!(
        said_down.contains("cancelling its allocation"),
        "{said_down}"
    );
    // The control: once the victim's cluster is gone, the same program gets the same port, so
    // it was trying the port that mattered, where it could bind.
    wait_job_end(job, Duration::from_secs(120));
    let t0 = Instant::now();
    while !said.lock().unwrap().starts_with("bound") && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(stop);
    let grabbed = grab.wait_with_output().unwrap();
    reader.join().unwrap();
    let said = said.lock().unwrap().clone();
    assert!(
        said.starts_with("bound"),
        "control: the other member never got port {port} on {head_ip}, even after the cluster ended: {said}{}",
        text(&grabbed).1
    );
}

/// A Python program, run as the attacker on a node, that watches the command lines of the
/// victim's processes (world-readable) for a `ray start` of the victim's job (its temp root
/// starts `/tmp/rs{uid}-{job}.`, given as `temp_root`) naming its dashboard's port, then binds
/// that port on `ip` (the node's own address, or 127.0.0.1) and answers as
/// Ray's dashboard does (401 without a token, 200 with one) until `stop` exists; it prints
/// `bound PORT`, then how many requests came and whether any carried a token.
fn late_squatter(ip: &str, temp_root: &str, victim_uid: u32, stop: &Path) -> String {
    format!(
        r#"import os, re, socket, sys, time
def dashboard_port():
    for pid in os.listdir("/proc"):
        try:
            if not pid.isdigit() or os.stat("/proc/" + pid).st_uid != {victim_uid}:
                continue
            argv = open("/proc/%s/cmdline" % pid, "rb").read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(a.startswith("--temp-dir={temp_root}") for a in argv):
            for a in argv:
                m = re.fullmatch(r"--dashboard-port=(\d+)", a)
                if m:
                    return int(m.group(1))
    return None
end = time.time() + 240
port = None
while port is None:
    if time.time() > end or os.path.exists("{stop}"):
        print("no-ray", flush=True)
        sys.exit(1)
    port = dashboard_port()
    time.sleep(0.005)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{ip}", port))
s.listen(16)
print("bound", port, flush=True)
{}"#,
        answer(240, stop, true),
        stop = stop.display()
    )
}

/// Another member with a shell on the head node reads a launch run's dashboard port off its
/// `ray start` command line and binds it before Ray's dashboard does, on the node's own IP (the
/// login node's way in) or on 127.0.0.1 (the head's): the start-up check, which would send the
/// token there, finds the port held by someone else on either address, never sends it, and
/// stops the run (fail closed) naming the port, the address and the holder. Ray's own dashboard
/// is off here, so the squatter always gets the port and the check itself is what is tried,
/// with no race.
#[test]
fn a_squatter_on_a_launch_runs_dashboard_port_is_never_sent_the_token() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let node = lab.nodes[0].clone();
    for ip in [lab.ip_of(&node), "127.0.0.1".to_owned()] {
        let dir = project_dir("latesquat");
        let stop = Stop(dir.join("stop"));
        // Held until the attacker watches for this job's `ray start` (another run of the victim
        // may be starting on the same node).
        let (job, log) = victim_launches_as(
            lab,
            &dir,
            "latesquat",
            &format!(
                "--sbatch-arg=--hold -n 1 -w {node} --ray-head-args=--include-dashboard=false --command 'sleep 60; echo command-done'"
            ),
        );
        let _cancel = CancelOnPanic(job.clone());
        let temp_root = format!("/tmp/rs{}-{job}.", uid(VICTIM));
        let program = late_squatter(&ip, &temp_root, uid(VICTIM), &stop.0);
        let squat = attacker_runs_on(&node, &dir, &program);
        let released = Command::new("scontrol")
            .args(["release", &job])
            .status()
            .unwrap();
        assert!(released.success(), "scontrol release {job}");
        let info = wait_job_end(&job, Duration::from_secs(240));
        let log_text = std::fs::read_to_string(&log).unwrap();
        drop(stop);
        let squatted = squat.wait_with_output().unwrap();
        let (said, err) = text(&squatted);
        let port = said
            .strip_prefix("bound ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("{ip}: {said}{err}\n{log_text}"));
        assert!(
            said.contains("no-token"),
            "{ip}: the squatter got the token: {said}"
        );
        assert_ne!(info["JobState"], "COMPLETED", "{ip}: {log_text}");
        assert!(
            log_text.contains(&format!(
                "port {port} on {ip} is held by user id {}, not by you",
                uid(ATTACKER)
            )),
            "{log_text}"
        );
        assert!(!log_text.contains("command-done"), "{ip}: {log_text}");
        let state: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(log.with_extension("state.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(state["ending"], "auth-not-enforced", "{ip}: {state}");
    }
}
