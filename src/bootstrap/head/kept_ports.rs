//! The head's Ray ports kept from changing hands (see `sys::port_keeper`): the GCS's and the
//! Ray Client server's once Ray is up, the dashboard's once it has answered. Ray's programs
//! send the run's token to these ports on the node's IP, and keep doing so as they retry when
//! the program behind one has died: kept, such a port stays the user's on every address for as
//! long as the head lives, so another user with a shell on the node cannot take it. When Ray's
//! dashboard ends, the head itself answers on its port, so that `exec`, `queue` and the head's
//! own poll learn at once why Ray's Jobs API is gone instead of waiting for a reply.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use crate::bootstrap::node::say;
use crate::bootstrap::ports::HeadPorts;
use crate::sys::port_keeper::{self, KeepError, Kept};

/// What the head's dashboard port answers once Ray's dashboard has ended.
const DASHBOARD_GONE: &str = "Ray's dashboard on the cluster's head has ended, so its Jobs API is gone; rayslurm keeps its port so that no other user can listen there; release the cluster with `rayslurm down` (or scancel), and start it again";

/// Keeps the GCS's and the Ray Client server's ports of a head that is up; what cannot be kept
/// is said in the log (the run goes on: the owner checks before each request still hold).
pub(super) fn keep_services(node: &str, ports: &HeadPorts) -> Vec<Kept> {
    [ports.gcs, ports.client_server]
        .into_iter()
        .filter_map(|port| kept_or_said(node, port))
        .collect()
}

/// Keeps the dashboard's port, on a thread that answers there once Ray's dashboard has ended.
pub(super) fn keep_dashboard(node: &str, port: u16) {
    let Some(kept) = kept_or_said(node, port) else {
        return;
    };
    let node = node.to_owned();
    std::thread::spawn(move || {
        kept.wait_for_owner();
        say(
            &node,
            format!(
                "warning: Ray's dashboard (pid {}) has ended; rayslurm keeps its port {port}, so that no other user can listen where Ray's programs send the token",
                kept.pid
            ),
        );
        // The first socket is answered on this thread, any other (IPv4 beside IPv6) beside it.
        let mut sockets = kept.sockets.into_iter().map(TcpListener::from);
        let first = sockets.next();
        for other in sockets {
            std::thread::spawn(move || answer_gone(other));
        }
        if let Some(first) = first {
            answer_gone(first);
        }
    });
}

/// A port kept, or `None` with the reason in the log (a port Ray did not open, as the
/// dashboard's with `--include-dashboard=false`, is no news).
fn kept_or_said(node: &str, port: u16) -> Option<Kept> {
    match port_keeper::keep(port) {
        Ok(kept) => Some(kept),
        Err(KeepError::NotListening(_)) => None,
        Err(e) => {
            say(
                node,
                format!(
                    "warning: cannot keep port {port} for this run ({e}): if Ray's program there ends, another user could take the port; the head checks its owner before every request it sends"
                ),
            );
            None
        }
    }
}

/// Answers every connection with HTTP 503 and [`DASHBOARD_GONE`], for as long as the head
/// lives: the socket is never closed here, whatever `accept` says.
fn answer_gone(listener: TcpListener) {
    // The dashboard's socket was non-blocking (asyncio), and the flag belongs to the socket,
    // not to a descriptor: an `accept` with nothing pending would fail at once.
    if let Err(e) = listener.set_nonblocking(false) {
        eprintln!("warning: cannot wait for connections on the dashboard's kept port: {e}");
    }
    loop {
        let mut conn = match listener.accept() {
            Ok((conn, _)) => conn,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        // The request is read, never kept or looked at: whatever it carries goes nowhere.
        let mut request = [0u8; 8192];
        let _ = conn.read(&mut request);
        let response = format!(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{DASHBOARD_GONE}",
            DASHBOARD_GONE.len()
        );
        let _ = conn.write_all(response.as_bytes());
    }
}
