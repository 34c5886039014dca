//! The head's Ray ports kept from changing hands (see `sys::port_keeper`): the GCS's and the
//! Ray Client server's once Ray is up, the dashboard's once it has answered. Ray's programs
//! send the run's token to these ports on the node's IP, and keep doing so as they retry when
//! the program behind one has died: kept, such a port stays the user's on every address for as
//! long as the head lives, so another user with a shell on the node cannot take it. When Ray's
//! dashboard ends, the head itself answers on its port, so that `exec`, `queue` and the head's
//! own poll learn at once why Ray's Jobs API is gone instead of waiting for a reply.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::bootstrap::kept_logs::session_logs;
use crate::bootstrap::node::say;
use crate::bootstrap::ports::HeadPorts;
use crate::sys::file_tail::last_lines;
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

/// Keeps the dashboard's port, on a thread that answers there once Ray's dashboard has ended
/// and says in the log what the dashboard last wrote (in Ray's logs below `ray_temp`).
pub(super) fn keep_dashboard(node: &str, port: u16, ray_temp: Option<PathBuf>) {
    let Some(kept) = kept_or_said(node, port) else {
        return;
    };
    let node = node.to_owned();
    std::thread::spawn(move || {
        kept.wait_for_owner();
        // Each socket (IPv4 beside IPv6) is answered on a thread of its own, at once.
        for socket in kept.sockets {
            std::thread::spawn(move || answer_gone(TcpListener::from(socket)));
        }
        // The head's own teardown ends the dashboard too (it may begin a moment after Slurm's
        // signal has reached Ray): no news then.
        std::thread::sleep(TEARDOWN_LAG);
        if !TEARING_DOWN.load(Ordering::SeqCst) {
            say_ended(&node, port, kept.pid, ray_temp.as_deref());
        }
    });
}

/// Set once the head's teardown begins: the dashboard's end is then expected.
static TEARING_DOWN: AtomicBool = AtomicBool::new(false);

/// How long after the dashboard's end the head's teardown may still begin, and the end be its.
const TEARDOWN_LAG: Duration = Duration::from_secs(1);

/// The head's teardown begins: the dashboard's end from now on is its doing, not news.
pub(super) fn teardown_begins() {
    TEARING_DOWN.store(true, Ordering::SeqCst);
}

/// Says in the log that Ray's dashboard has ended while the cluster ran, and what it last wrote.
fn say_ended(node: &str, port: u16, pid: i32, ray_temp: Option<&Path>) {
    say(
        node,
        format!(
            "warning: Ray's dashboard (pid {pid}) has ended; rayslurm keeps its port {port}, so that no other user can listen where Ray's programs send the token"
        ),
    );
    say(node, last_words(ray_temp));
}

/// What Ray's dashboard last wrote, for the log: the end of its `dashboard.err` (where Python
/// prints the traceback of what ended it) and its last warnings and errors in `dashboard.log`
/// (its own word of an end, such as "Exiting with SIGTERM"; the requests it served, logged as
/// `INFO`, are left out). When neither says anything, a signal ended it (the kernel's OOM killer,
/// or another process).
fn last_words(ray_temp: Option<&Path>) -> String {
    let Some(logs) = ray_temp.and_then(session_logs) else {
        return "Ray's dashboard left no logs in the head's Ray temp root".to_owned();
    };
    let err = last_lines(&logs.join("dashboard.err"), 12);
    let log: Vec<String> = last_lines(&logs.join("dashboard.log"), 400)
        .into_iter()
        .filter(|l| !l.contains("\tINFO ") && !l.contains("\tDEBUG "))
        .collect();
    let log = log[log.len().saturating_sub(6)..].to_vec();
    let said: Vec<String> = [("dashboard.err", err), ("dashboard.log", log)]
        .into_iter()
        .filter(|(_, lines)| !lines.is_empty())
        .map(|(file, lines)| {
            format!(
                "the end of Ray's {}:\n  {}",
                logs.join(file).display(),
                lines.join("\n  ")
            )
        })
        .collect();
    if said.is_empty() {
        return format!(
            "Ray's dashboard wrote no error to {}: a signal ended it (the kernel's OOM killer, or another process)",
            logs.display()
        );
    }
    said.join("\n")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dashboards_last_words_are_the_end_of_its_logs_or_say_a_signal_ended_it() {
        let temp = tempfile::tempdir().unwrap();
        assert!(last_words(None).contains("left no logs"));
        assert!(last_words(Some(temp.path())).contains("left no logs"));
        let logs = temp.path().join("session_2026-11-27_19-51-12_1_42/logs");
        std::fs::create_dir_all(&logs).unwrap();
        let said = last_words(Some(temp.path()));
        assert!(
            said.contains("wrote no error") && said.contains("a signal"),
            "{said}"
        );
        let traceback: String = (0..20).map(|i| format!("  frame {i}\n")).collect();
        std::fs::write(
            logs.join("dashboard.err"),
            format!("Traceback:\n{traceback}RuntimeError: GCS unreachable\n"),
        )
        .unwrap();
        std::fs::write(
            logs.join("dashboard.log"),
            "t\tINFO started\nt\tERROR gone\nt\tINFO web_log.py:229 -- GET /api/jobs/\n",
        )
        .unwrap();
        let said = last_words(Some(temp.path()));
        assert!(said.contains("dashboard.err:\n  "), "{said}");
        assert!(
            said.contains("frame 19\n  RuntimeError: GCS unreachable"),
            "{said}"
        );
        assert!(!said.contains("frame 8\n"), "only the end: {said}");
        assert!(said.contains("dashboard.log:\n  t\tERROR gone"), "{said}");
        assert!(
            !said.contains("INFO"),
            "requests served are left out: {said}"
        );
    }
}
