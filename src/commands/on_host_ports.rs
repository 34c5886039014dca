//! `--host` with `dashboard` and `forward`: the command runs on the login node as it does
//! there (a port of the login node's loopback that serves only the user's own connections,
//! relayed to the head through the allocation), and each port it prints is forwarded again,
//! through the same SSH connection, to a port of this machine's loopback: the same number
//! where it is free here, else any. The connections arrive there from the user's own sshd
//! session, which the login node's owner check accepts. Ctrl-C ends both.

use std::net::TcpListener;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Result;

use crate::remote::session::{LineReader, Session};

/// Runs `session` (a `dashboard` or `forward`), forwarding each port it prints.
pub(crate) fn run(session: &Session, binary: &Path) -> Result<ExitCode> {
    let forwarded: Arc<Mutex<Vec<(u16, u16)>>> = Arc::default();
    let status = session.run_with_copy(binary, || Some(forwarder(session, &forwarded)), || {})?;
    for (local, remote) in forwarded.lock().map(|f| f.clone()).unwrap_or_default() {
        let _ = session.ssh.cancel_forward(local, remote);
    }
    Ok(super::on_host::exit_code(status))
}

/// What reads the command's stdout: a URL `http://localhost:PORT` is forwarded here and
/// printed with this machine's port; any other line is printed as it is.
fn forwarder(session: &Session, forwarded: &Arc<Mutex<Vec<(u16, u16)>>>) -> LineReader {
    let ssh = session.ssh.clone();
    let forwarded = Arc::clone(forwarded);
    Box::new(move |line: &str| {
        let Some(remote) = line
            .strip_prefix("http://localhost:")
            .and_then(|p| p.trim().parse::<u16>().ok())
        else {
            println!("{line}");
            return;
        };
        let local = free_here(remote);
        match ssh.forward(local, remote) {
            Ok(()) => {
                if let Ok(mut f) = forwarded.lock() {
                    f.push((local, remote));
                }
                println!("http://localhost:{local}");
                eprintln!(
                    "forwarding port {remote} of {} to http://localhost:{local} on this machine",
                    ssh.host
                );
            }
            Err(e) => eprintln!("error: {e}"),
        }
    })
}

/// `port` if it is free on this machine's loopback, else one the system gives.
fn free_here(port: u16) -> u16 {
    if TcpListener::bind(("127.0.0.1", port)).is_ok() {
        return port;
    }
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map_or(port, |a| a.port())
}
