//! `rayslurm --host lab-login ...` from the lab's laptop (no Slurm, no Ray, files the login
//! node cannot read), end to end on the real cluster through the lab's OpenSSH server.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::harness::{LOGIN_HOST, Laptop, lab, text, unique_name};

/// What the tests ask Ray for: small object stores, as the other e2e tests.
const STORE: &str = "--object-store-memory=100000000";

/// `rayslurm --host lab-login ARGS` on the laptop in `dir` (inside work/), to its end.
fn on_host(laptop: &Laptop, dir: &str, args: &[&str]) -> std::process::Output {
    laptop
        .command_in(&laptop.work().join(dir), "rayslurm")
        .args(["--host", LOGIN_HOST])
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: &std::process::Output, what: &str) -> (String, String) {
    let (stdout, stderr) = text(out);
    assert!(
        out.status.success(),
        "{what}: exit {:?}\n{stdout}\n{stderr}",
        out.status.code()
    );
    (stdout, stderr)
}

/// A 2-node Ray program in the laptop's own workdir, launched and followed from the laptop:
/// its code is there, each node runs a task, and the whole `launch --follow` (the copy of
/// rayslurm included) is one SSH authentication. The private directory of the command on the
/// login node is gone after it.
#[test]
fn e2e_a_two_node_ray_run_from_the_laptops_workdir_is_followed_with_one_authentication() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "ray2") else {
        return;
    };
    laptop.write(
        "proj/count.py",
        "import ray, socket\nray.init()\n\
         @ray.remote(num_cpus=1)\ndef where():\n    import socket, time\n    time.sleep(1)\n    return socket.gethostname()\n\
         hosts = sorted(set(ray.get([where.remote() for _ in range(4)])))\n\
         print('nodes', len(ray.nodes()), 'tasks on', ' '.join(hosts))\n",
    );
    let name = unique_name("laptopray");
    let load_env = lab.load_env();
    let before = laptop.auth_count();
    let out = on_host(
        &laptop,
        "proj",
        &[
            "launch",
            "--exp-name",
            &name,
            "-N",
            "2",
            "--workdir",
            ".",
            "--load-env",
            &load_env,
            STORE,
            "--time",
            "10",
            "--follow",
            "--",
            "python",
            "count.py",
        ],
    );
    let (stdout, stderr) = ok(&out, "launch --follow from the laptop");
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("nodes 2 tasks on "), "{all}");
    let line = all
        .lines()
        .find(|l| l.contains("nodes 2 tasks on "))
        .unwrap();
    assert_eq!(
        line.split_whitespace().count(),
        6,
        "two hosts ran tasks: {all}"
    );
    assert!(all.contains(" COMPLETED, exit code 0"), "{all}");
    assert_eq!(laptop.auth_count() - before, 1, "one authentication: {all}");
    // `disconnect` ends the connection: the next command authenticates again.
    let (_, said) = ok(&on_host(&laptop, ".", &["disconnect"]), "disconnect");
    assert!(
        said.contains("closed the SSH connection to lab-login"),
        "{said}"
    );
    let (_, said) = ok(&on_host(&laptop, ".", &["disconnect"]), "disconnect again");
    assert!(
        said.contains("no SSH connection to lab-login was open"),
        "{said}"
    );
    ok(&on_host(&laptop, ".", &["status", &name]), "status");
    assert_eq!(
        laptop.auth_count() - before,
        2,
        "a new connection after disconnect"
    );
    // The login node's side: nothing of the command's private directory is left.
    let left = laptop
        .command("ssh")
        .args([LOGIN_HOST, "ls -A ~/.local/state/rayslurm/laptop/"])
        .output()
        .unwrap();
    let (listed, _) = text(&left);
    let id_dirs: Vec<&str> = listed.lines().filter(|l| l.starts_with("send-")).collect();
    assert!(
        id_dirs.iter().all(|d| !all.contains(*d)),
        "left behind: {listed}"
    );
}

/// A task file on the laptop, with `workdir:` and a local file mount, read on the laptop and
/// run on 2 nodes: each sees the code and the mounted file.
#[test]
fn e2e_a_task_file_on_the_laptop_with_its_workdir_and_a_file_mount() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "task") else {
        return;
    };
    let name = unique_name("laptoptask");
    laptop.write("proj/src/run.py", "print('code from the laptop')\n");
    laptop.write("proj/data/answer.txt", "42 from the laptop\n");
    laptop.write(
        "proj/task.yaml",
        &format!(
            "name: {name}\nnum_nodes: 2\nworkdir: ./src\nenvs:\n  GREETING: hello $USER\n\
             file_mounts:\n  inputs/answer.txt: ./data/answer.txt\n\
             run: |\n  python3 run.py\n  cat inputs/answer.txt\n  echo \"$GREETING\"\n"
        ),
    );
    let out = on_host(&laptop, "proj", &["launch", "task.yaml", "--follow"]);
    let (stdout, stderr) = ok(&out, "a task file from the laptop");
    let all = format!("{stdout}{stderr}");
    for rank in ["[0 node", "[1 node"] {
        for said in ["code from the laptop", "42 from the laptop"] {
            assert!(
                all.lines()
                    .any(|l| l.starts_with(rank) && l.ends_with(said)),
                "{rank} {said}: {all}"
            );
        }
    }
    assert!(all.contains(" COMPLETED, exit code 0"), "{all}");
}

/// `up`, `exec` (code from the laptop), `queue`, `logs`, `dashboard` and `forward` (a web
/// server of the cluster's) reached by HTTP requests on the laptop, and `down`, all from the
/// laptop.
#[test]
fn e2e_a_cluster_from_the_laptop_up_exec_queue_logs_dashboard_down() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "cluster") else {
        return;
    };
    let name = unique_name("laptopup");
    let load_env = lab.load_env();
    laptop.write(
        "proj/job.py",
        "import ray\nray.init()\nprint('cpus', ray.cluster_resources()['CPU'])\n",
    );
    let before = laptop.auth_count();
    ok(
        &on_host(
            &laptop,
            "proj",
            &[
                "up",
                &name,
                "-N",
                "1",
                "--load-env",
                &load_env,
                STORE,
                "--time",
                "10",
            ],
        ),
        "up",
    );
    let cleanup = Down(&laptop, name.clone());
    let (stdout, stderr) = ok(
        &on_host(
            &laptop,
            "proj",
            &["exec", &name, "--workdir", ".", "--", "python", "job.py"],
        ),
        "exec",
    );
    assert!(
        format!("{stdout}{stderr}").contains("cpus 2"),
        "{stdout}{stderr}"
    );
    let (queue, _) = ok(
        &on_host(&laptop, "proj", &["queue", &name, "--json"]),
        "queue",
    );
    let queue: serde_json::Value = serde_json::from_str(&queue).unwrap();
    assert_eq!(queue["jobs"][0]["status"], "SUCCEEDED", "{queue}");
    let (log, _) = ok(&on_host(&laptop, "proj", &["logs", &name, "1"]), "logs");
    assert!(log.contains("cpus 2"), "{log}");

    let answer = forwarded_answer(&laptop, &["dashboard", &name]);
    let code: u16 = answer
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .parse()
        .unwrap_or(0);
    assert!(
        (100..500).contains(&code),
        "the dashboard answered {answer}"
    );
    a_web_server_is_forwarded(&laptop, &name);
    drop(cleanup);
    assert_eq!(
        laptop.auth_count() - before,
        1,
        "one authentication for all of it"
    );
}

/// `rayslurm --host lab-login ARGS` (`dashboard`, `forward`) on the laptop: the URL it prints
/// answers an HTTP request made on the laptop (what it answered, its status code or body's
/// start); Ctrl-C ends it.
fn forwarded_answer(laptop: &Laptop, args: &[&str]) -> String {
    let mut forward = laptop
        .command_in(&laptop.work(), "rayslurm")
        .args(["--host", LOGIN_HOST])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(forward.stdout.take().unwrap()).lines();
    let url = lines.next().unwrap().unwrap();
    assert!(url.starts_with("http://localhost:"), "{url}");
    let fetch = laptop.sh(&format!(
        "python3 -c 'import sys, urllib.request, urllib.error\n\
         try:\n    a = urllib.request.urlopen(sys.argv[1], timeout=30)\n    print(a.status, a.read(200).decode(errors=\"replace\"))\n\
         except urllib.error.HTTPError as e:\n    print(e.code)\n\
         except OSError as e:\n    print(\"no answer:\", e)' {url}"
    ));
    let (answer, said) = text(&fetch);
    assert!(fetch.status.success(), "{answer}{said}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(forward.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let ended = forward.wait().unwrap();
    assert!(ended.code().is_some(), "it ended by itself: {ended:?}");
    answer
}

/// `forward NAME PORT` from the laptop: a web server run as a job of the cluster (in a copy of
/// the laptop's `proj/`) answers an HTTP request made on the laptop.
fn a_web_server_is_forwarded(laptop: &Laptop, name: &str) {
    // A port the head serves itself (`forward`): a web server run as a job of the cluster.
    let port = (18000 + std::process::id() % 1000).to_string();
    ok(
        &on_host(
            laptop,
            "proj",
            &[
                "exec",
                name,
                "-d",
                "--workdir",
                ".",
                "--",
                "python3",
                "-m",
                "http.server",
                &port,
            ],
        ),
        "exec a web server",
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let answer = loop {
        let answer = forwarded_answer(laptop, &["forward", name, &port]);
        if answer.starts_with("200 ") || Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    assert!(
        answer.starts_with("200 ") && answer.contains("job.py"),
        "{answer}"
    );
}

/// `down` of a cluster from the laptop, when a test ends.
struct Down<'a>(&'a Laptop, String);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let out = on_host(self.0, ".", &["down", &self.1]);
        if !std::thread::panicking() {
            ok(&out, "down");
        }
    }
}

/// Ctrl-C on the laptop while it follows a run with --cancel-on-interrupt: the run is
/// cancelled on the login node, as there, and the laptop's rayslurm says so and exits 130.
#[test]
fn e2e_ctrl_c_on_the_laptop_cancels_the_followed_run() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "ctrlc") else {
        return;
    };
    let name = unique_name("laptopint");
    let mut follow = laptop
        .command_in(&laptop.work(), "rayslurm")
        .args([
            "--host",
            LOGIN_HOST,
            "launch",
            "--exp-name",
            &name,
            "--no-ray",
        ])
        .args([
            "--time",
            "10",
            "--follow",
            "--cancel-on-interrupt",
            "--command",
        ])
        .arg("echo started; sleep 300")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = follow.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            seen.push_str(&line);
            seen.push('\n');
        }
        seen
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (status, _) = text(&on_host(&laptop, ".", &["status", &name, "--json"]));
        if status.contains("\"RUNNING\"") {
            break;
        }
        assert!(Instant::now() < deadline, "never running: {status}");
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(1));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(follow.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let ended = follow.wait_with_output().unwrap();
    let stdout = reader.join().unwrap();
    let stderr = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(130), "{stdout}{stderr}");
    assert!(stderr.contains("cancelling job"), "{stdout}{stderr}");
    // Slurm's COMPLETING, then CANCELLED.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, _) = ok(
            &on_host(&laptop, ".", &["status", &name, "--json"]),
            "status",
        );
        if status.contains("\"CANCELLED") {
            break;
        }
        assert!(Instant::now() < deadline, "not cancelled: {status}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A user the login node does not know this laptop's key for: a clear error naming the host
/// and what ssh said, exit 2, nothing run.
#[test]
fn e2e_a_refused_key_is_a_clear_error_and_nothing_runs() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "refused") else {
        return;
    };
    let host = format!("rsbob@{LOGIN_HOST}");
    let out = laptop
        .command("rayslurm")
        .args([
            "--host",
            &host,
            "launch",
            "--exp-name",
            "never",
            "--no-ray",
            "--command",
            "true",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("cannot connect to {host} over SSH"))
            && stderr.contains("Permission denied")
            && stderr.contains("refused your key"),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
}

/// The Python API on the laptop (its own Python with cloudpickle, no Ray, no Slurm), with
/// `host=`: a `launch` and its job's state and log, then an `Executor`'s function whose value
/// comes back, and one whose exception does, each run on the login node's cluster.
#[test]
fn e2e_the_python_api_from_the_laptop_with_host() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // The laptop's Python: Debian's (the nodes' is too), with the cloudpickle of the tools'
    // venv (tests/python/tools.sh) on its path, as `pip install cloudpickle` would give it.
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let tools = std::fs::read_dir(repo.join("target/python-tools/lib"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(Result::ok)
        .map(|d| d.path().join("site-packages"))
        .filter(|p| p.join("cloudpickle").is_dir());
    let Some(tools) = tools else {
        crate::harness::skip(
            "laptop::e2e_host::e2e_the_python_api_from_the_laptop_with_host",
            "no cloudpickle (bash tests/python/tools.sh makes target/python-tools)",
            None,
        );
        return;
    };
    let Some(laptop) = Laptop::new(lab, "python") else {
        return;
    };
    let name = unique_name("laptoppy");
    let script = laptop.write(
        "notebook.py",
        &format!(
            r#"import os, sys
import rayslurm
assert "RAYSLURM_HOST" not in os.environ
job = rayslurm.launch({name:?}, "echo from $(hostname)", no_ray=True, time=10, host={LOGIN_HOST:?})
final = job.wait(timeout=300, poll=1)
print("LAUNCH", final["state"], job.host, job.logs().count("from node"))
ex = rayslurm.Executor(host={LOGIN_HOST:?}, no_ray=True, time=10, exclusive=False,
                       load_env={load_env:?})
times7 = ex.submit(lambda x: x * 7, 6)
def fails():
    raise KeyError("not on the laptop")
failed = ex.submit(fails)
print("VALUE", times7.result(timeout=300, poll=1))
try:
    failed.result(timeout=300, poll=1)
except KeyError as e:
    print("RAISED", e, "|", "in fails" in str(e.__cause__))
print("STATUS", len(rayslurm.status(host={LOGIN_HOST:?})) > 0)
"#,
            load_env = lab.load_env(),
        ),
    );
    let path = format!("{}:{}", repo.join("python").display(), tools.display());
    let out = laptop
        .command("/usr/bin/python3")
        .arg(&script)
        .env("PYTHONPATH", path)
        .output()
        .unwrap();
    let (stdout, stderr) = ok(&out, "the Python API on the laptop");
    assert!(
        stdout.contains(&format!("LAUNCH COMPLETED {LOGIN_HOST} 1\n")),
        "{stdout}{stderr}"
    );
    assert!(stdout.contains("VALUE 42\n"), "{stdout}{stderr}");
    assert!(
        stdout.contains("RAISED 'not on the laptop' | True\n"),
        "{stdout}{stderr}"
    );
    assert!(stdout.contains("STATUS True\n"), "{stdout}{stderr}");
}

/// `--git-workdir` of a repository only the laptop can read: cloned on the laptop, and the
/// run's copy is a git work tree at that commit.
#[test]
fn e2e_a_git_workdir_only_the_laptop_can_read_is_cloned_on_the_laptop() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "git") else {
        return;
    };
    laptop.write("repo/hello.py", "print('from the laptop repo')\n");
    let made = laptop.sh("cd repo && git init -q && git add . && \
         git -c user.name=t -c user.email=t@t commit -qm first && git rev-parse --short HEAD");
    let (commit, _) = ok(&made, "git init on the laptop");
    let url = format!("file://{}", laptop.work().join("repo").display());
    let name = unique_name("laptopgit");
    let out = on_host(
        &laptop,
        ".",
        &[
            "launch",
            "--exp-name",
            &name,
            "--no-ray",
            "--time",
            "10",
            "--git-workdir",
            &url,
            "--follow",
            "--command",
            "python3 hello.py; git rev-parse --short HEAD",
        ],
    );
    let (stdout, stderr) = ok(&out, "a git workdir from the laptop");
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("from the laptop repo\n"), "{all}");
    assert!(
        all.contains(&format!("\n{}", commit.trim())),
        "{commit} {all}"
    );
}

/// A login node whose host key the laptop does not know: ssh's refusal, named with the host
/// and what to do (check the key with `ssh HOST` once), exit 2, nothing sent.
#[test]
fn e2e_an_unknown_host_key_is_a_clear_error_and_nothing_is_sent() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "hostkey") else {
        return;
    };
    ok(&laptop.sh(": > ~/.ssh/known_hosts"), "forget the host key");
    let before = laptop.auth_count();
    let out = on_host(&laptop, ".", &["status"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("cannot connect to lab-login over SSH")
            && stderr.contains("Host key verification failed")
            && stderr.contains("does not know lab-login's host key"),
        "{stderr}"
    );
    assert_eq!(laptop.auth_count(), before, "never logged in");
}
