//! The start-up check of Ray's token authentication, run beside the command rather than before
//! it: Ray's dashboard, the one thing to ask, may answer 10 s or more after the cluster is
//! ready on a loaded node, and the command need not wait for it. The check fails closed: if
//! Ray serves a request without the token, the run is stopped and ends `auth-not-enforced`.
//! A dashboard that never answers is reported, never a failure of the run. A persistent
//! cluster, which needs the Jobs API behind the dashboard anyway, still waits for it
//! ([`AuthCheck::wait`]).

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use super::kept_ports;
use crate::bootstrap::node::say;
use crate::bootstrap::ray_auth::{self, Checked};

/// How long the dashboard may take to answer before the check says it could not ask.
pub(super) const PATIENCE: Duration = Duration::from_secs(120);

/// What the check found: the dashboard's answer, and the other HTTP ports of the run's block
/// that answered without the token (name, port, HTTP status).
type Found = (Result<Checked, String>, Vec<(String, u16, u16)>);

/// The check, under way on a thread of its own.
pub(super) struct AuthCheck {
    result: Receiver<Found>,
    token: PathBuf,
    started: Instant,
    /// `--ray-metrics`: the metrics port answering is what the user asked for.
    metrics_asked: bool,
}

/// Where the check asks: the dashboard's port on this node, and the other HTTP ports of the
/// run's block on the node's address.
pub(super) struct Ports {
    /// The node, for the log.
    pub(super) node: String,
    pub(super) dashboard: u16,
    pub(super) host: String,
    pub(super) others: Vec<(&'static str, u16)>,
    pub(super) metrics_asked: bool,
    /// The head's Ray temp root, where the dashboard's logs say why it ended, if it does.
    pub(super) ray_temp: Option<PathBuf>,
}

/// What the run must do about a finished check.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Still asking.
    Pending,
    /// Done, and said in the log.
    Done,
    /// Ray serves requests without the token: stop the run.
    Stop(String),
}

impl AuthCheck {
    pub(super) fn spawn(token: PathBuf, ports: Ports, patience: Duration) -> Self {
        let (tx, result) = mpsc::channel();
        let path = token.clone();
        let metrics_asked = ports.metrics_asked;
        std::thread::spawn(move || {
            let checked = ray_auth::check(&path, ports.dashboard, patience);
            // A dashboard that answered and enforces the token is kept from changing hands:
            // Ray's programs send it the token on the node's IP for as long as they live.
            if matches!(checked, Ok(Checked::Refused | Checked::OwnTokenRefused(_))) {
                kept_ports::keep_dashboard(&ports.node, ports.dashboard, ports.ray_temp);
            }
            // Asked once the dashboard has answered (or not): by then every service is up.
            let open = ray_auth::open_without_token(&ports.host, &ports.others);
            let _ = tx.send((checked, open));
        });
        Self {
            result,
            token,
            started: Instant::now(),
            metrics_asked,
        }
    }

    /// Looks whether the check has ended; says its result in the log once.
    pub(super) fn poll(&mut self, node: &str) -> Verdict {
        match self.result.try_recv() {
            Ok(result) => self.report(node, result),
            Err(TryRecvError::Empty) => Verdict::Pending,
            Err(TryRecvError::Disconnected) => Verdict::Done,
        }
    }

    /// Waits for the check to end (a persistent cluster's head, before it serves).
    pub(super) fn wait(self, node: &str) -> Verdict {
        match self.result.recv() {
            Ok(result) => self.report(node, result),
            Err(_) => Verdict::Done,
        }
    }

    fn report(&self, node: &str, (result, open): Found) -> Verdict {
        let after = self.started.elapsed().as_secs_f64();
        for (name, port, status) in open {
            if name == "metrics" && self.metrics_asked {
                say(
                    node,
                    format!(
                        "warning: Ray's metrics port {port} answers without the token, as --ray-metrics asked: anyone who can reach node {node} may read the metrics"
                    ),
                );
            } else {
                say(
                    node,
                    format!(
                        "warning: Ray's {name} port {port} answers without the token (HTTP {status}): anyone who can reach node {node} may use it"
                    ),
                );
            }
        }
        match result {
            Ok(Checked::Refused) => {
                say(
                    node,
                    format!(
                        "Ray requires the run's token (checked after {after:.1} s: a request without it is refused); it is in {}",
                        self.token.display()
                    ),
                );
                Verdict::Done
            }
            Ok(Checked::OwnTokenRefused(why)) => {
                say(node, format!("warning: {why}"));
                Verdict::Done
            }
            Ok(Checked::NoAnswer) => {
                say(
                    node,
                    format!(
                        "Ray was started to require the run's token (not checked: its dashboard did not answer within {} s)",
                        PATIENCE.as_secs()
                    ),
                );
                Verdict::Done
            }
            Err(why) => Verdict::Stop(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A one-shot HTTP server on 127.0.0.1 that answers every request with `status`.
    fn server(status: u16) -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(2) {
                let mut s = stream.unwrap();
                let mut buf = [0u8; 2048];
                let _ = s.read(&mut buf);
                let body = "{}";
                let _ = write!(
                    s,
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        port
    }

    fn token() -> tempfile::NamedTempFile {
        let t = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(t.path(), "ab".repeat(32)).unwrap();
        t
    }

    fn ports(dashboard: u16) -> Ports {
        Ports {
            node: "n1".into(),
            dashboard,
            host: "127.0.0.1".into(),
            others: Vec::new(),
            metrics_asked: false,
            ray_temp: None,
        }
    }

    fn verdict(port: u16, patience: Duration) -> Verdict {
        let t = token();
        AuthCheck::spawn(t.path().to_owned(), ports(port), patience).wait("n1")
    }

    #[test]
    fn a_ray_that_answers_without_the_token_stops_the_run() {
        let Verdict::Stop(why) = verdict(server(200), Duration::from_secs(5)) else {
            panic!("not stopped");
        };
        assert!(why.contains("without the run's token (HTTP 200"), "{why}");
    }

    #[test]
    fn a_refusal_is_the_expected_end_and_silence_is_only_reported() {
        assert_eq!(verdict(server(401), Duration::from_secs(5)), Verdict::Done);
        // Nothing listens on a port just freed: reported after the patience, not a failure.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        assert_eq!(verdict(port, Duration::from_millis(600)), Verdict::Done);
    }

    #[test]
    fn other_ports_that_answer_without_the_token_are_found() {
        let open = server(200);
        let closed = server(401);
        let found = ray_auth::open_without_token(
            "127.0.0.1",
            &[("metrics", open), ("dashboard agent", closed)],
        );
        assert_eq!(found, vec![("metrics".to_owned(), open, 200)]);
    }

    #[test]
    fn polling_does_not_wait() {
        let t = token();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut check = AuthCheck::spawn(t.path().to_owned(), ports(port), Duration::from_secs(30));
        let t0 = Instant::now();
        assert_eq!(check.poll("n1"), Verdict::Pending);
        assert!(t0.elapsed() < Duration::from_secs(1));
    }
}
