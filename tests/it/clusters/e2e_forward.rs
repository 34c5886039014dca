//! End-to-end: `rayslurm forward` on runs without Ray, whose head writes no cluster info (a
//! `--no-ray` run, and a `--per-node` run whose rank 0 serves): a port its command serves on
//! the head node is fetched from the login node's loopback, through the allocation, until
//! Ctrl-C, which frees the local port again.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use crate::harness::{Lab, first_line, lab, launch_in, rayslurm};

/// What an HTTP GET of `path` on 127.0.0.1:`port` answers, whole (status line, headers, body).
fn http_get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// Launches a run (`args`) whose `serve` command (given the port and the directory) serves a
/// page on the head node, forwards the port with `rayslurm forward NAME PORT:LOCAL`, fetches
/// the page through it, and stops the forward with Ctrl-C: the page is the one written, the
/// forward said what it forwarded, exited 0, and left the local port free.
fn a_page_is_fetched_through_the_forward(
    lab: &Lab,
    which: &str,
    args: &[&str],
    serve: impl Fn(u16, &str) -> String,
) {
    let dir = lab.workdir(which);
    let content = format!(
        "served on the head, for test {which} {}",
        std::process::id()
    );
    std::fs::write(dir.join("page.txt"), &content).unwrap();
    let offset = if which == "per-node" { 500 } else { 0 };
    let remote = 21000 + offset + (std::process::id() % 500) as u16;
    let local = remote + 1000;
    let name = format!("{which}{}", std::process::id());
    let mut argv = args.to_vec();
    let command = serve(remote, &dir.display().to_string());
    argv.extend(["--time", "2", "--command", &command]);
    let job = launch_in(lab, &dir, &name, &argv);
    job.wait_for_log("Serving HTTP on", Duration::from_secs(60));
    let mut forward = rayslurm(["forward", &name, &format!("{remote}:{local}")])
        .cwd(&dir)
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = first_line(&mut forward);
    let answer = if url.trim() == format!("http://localhost:{local}") {
        http_get(local, "/page.txt")
    } else {
        String::new()
    };
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(forward.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    let forwarded = forward.wait_with_output().unwrap();
    job.scancel();
    let said = String::from_utf8_lossy(&forwarded.stderr);
    assert_eq!(url.trim(), format!("http://localhost:{local}"), "{said}");
    assert!(
        answer.starts_with("HTTP/1.0 200") && answer.ends_with(&content),
        "the head's page, through the forward: {answer:?}\n{said}"
    );
    assert!(forwarded.status.success(), "{:?}: {said}", forwarded.status);
    assert!(
        said.contains(&format!("forwarding ports of {name}'s head node node"))
            && said.contains(&format!("port {remote} to http://localhost:{local}"))
            && said.contains(&format!(
                "from a laptop: ssh -N -L {local}:localhost:{local} "
            )),
        "{said}"
    );
    assert!(
        std::net::TcpListener::bind(("127.0.0.1", local)).is_ok(),
        "the local port is free again after Ctrl-C"
    );
}

#[test]
fn a_port_of_a_run_without_ray_is_forwarded_until_ctrl_c() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    a_page_is_fetched_through_the_forward(lab, "no-ray", &["--no-ray", "-n", "1"], |port, dir| {
        format!("exec python3 -u -m http.server {port} --bind 127.0.0.1 --directory {dir}")
    });
}

/// Rank 0 of a 2-node run serves, on the run's head node, which is where `forward` goes.
#[test]
fn a_port_of_a_per_node_runs_rank_0_is_forwarded() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    a_page_is_fetched_through_the_forward(
        lab,
        "per-node",
        &["--per-node", "-n", "2"],
        |port, dir| {
            format!(
                "if [ \"$RAYSLURM_NODE_RANK\" = 0 ]; then exec python3 -u -m http.server {port} --bind 127.0.0.1 --directory {dir}; else sleep 60; fi"
            )
        },
    );
}
