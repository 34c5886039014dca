//! Reaching a port on a cluster's head from the login node: through the allocation, a local
//! listener on 127.0.0.1 whose every connection becomes an `srun --overlap --jobid` step that
//! runs the cluster's own rayslurm on the head as a byte relay (`rayslurm relay`, which checks
//! there who listens on the port before it connects). Directly only where nothing secret can
//! reach a listener nobody checked (see [`address`]).
//!
//! Every user of the login node can connect to 127.0.0.1, and each connection is a step run
//! as the user: the listener serves only connections whose other end is a socket of the
//! user's own (its owner read from `/proc/net/tcp`), at most [`MAX_STEPS`] at once, and asks
//! where the head is for each connection, so that a forward follows the cluster's current
//! attempt after a requeue.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result};

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::env_vars;
use crate::error::UsageError;
use crate::handoff::cluster_info::ClusterInfo;
use crate::sys::process::Cmd;
use crate::sys::pump::pump;
use crate::sys::socket_owner;

/// How long a relay step lives on after its client closed the connection.
const CLIENT_GONE_GRACE: Duration = Duration::from_secs(2);

/// Relay steps (`srun` processes) one listener runs at once; further connections wait.
pub(crate) const MAX_STEPS: usize = 16;

/// How the login node reaches the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Connect to the head's address.
    Direct,
    /// Through an `srun` step in the allocation.
    Relay,
}

/// `--via-allocation`, as `main` read it (set once).
static VIA_ALLOCATION: OnceLock<bool> = OnceLock::new();

/// Records `--via-allocation` for the whole process.
pub(crate) fn choose(via_allocation: bool) {
    let _ = VIA_ALLOCATION.set(via_allocation);
}

/// `--via-allocation` forces the relay; else `RAYSLURM_RELAY`: `always` forces it, `never`
/// forbids it, anything else (or unset) tries the head directly first.
pub(crate) fn wanted() -> Option<Route> {
    if VIA_ALLOCATION.get() == Some(&true) {
        return Some(Route::Relay);
    }
    match std::env::var(env_vars::RELAY).ok()?.as_str() {
        "always" => Some(Route::Relay),
        "never" => Some(Route::Direct),
        _ => None,
    }
}

/// The `host:port` to use for `port` on the cluster's head: the head's own, or a local port
/// relayed through the allocation. A request that carries the token (or `exec`'s `--env`
/// values) goes straight to the head only where this host can see who listens there: the head
/// is this host, or the cluster has no token (`--no-ray-auth`: open to anyone on the network
/// anyway). Anywhere else it goes through the relay, whose step checks on the head, before it
/// connects, that no other user holds the port on any of the node's addresses: the login node
/// cannot see who owns a socket on another machine, and another user with a shell on the head
/// could be listening on its IP at that port.
pub(crate) fn address(info: &ClusterInfo, port: u16) -> Result<String> {
    let direct = match info.head_ip {
        std::net::IpAddr::V4(ip) => format!("{ip}:{port}"),
        std::net::IpAddr::V6(ip) => format!("[{ip}]:{port}"),
    };
    let checkable = info.token_file.is_none() || socket_owner::is_local_address(info.head_ip);
    match route(wanted(), checkable, || {
        let addr: SocketAddr = (info.head_ip, port).into();
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
    })? {
        Route::Direct => Ok(direct),
        Route::Relay => Ok(format!("127.0.0.1:{}", listen(info, port)?)),
    }
}

/// How to reach the head: as the user wants it, where that is safe; else directly only where
/// the far end can be `checkable` from here and `reachable`.
fn route(
    wanted: Option<Route>,
    checkable: bool,
    reachable: impl FnOnce() -> bool,
) -> Result<Route, UsageError> {
    match wanted {
        Some(Route::Direct) if !checkable => Err(UsageError::new(
            "RAYSLURM_RELAY=never, but the cluster's head is another host and the requests carry the cluster's token: rayslurm sends it only where it has checked who listens, which the login node cannot do on another host",
        )
        .hint("unset RAYSLURM_RELAY (requests then go through the allocation, checked on the head)")),
        Some(route) => Ok(route),
        None if checkable && reachable() => Ok(Route::Direct),
        None => Ok(Route::Relay),
    }
}

/// Starts a local listener whose connections are relayed to `port` on the head; returns its
/// port. It serves until the process ends.
pub(crate) fn listen(info: &ClusterInfo, port: u16) -> Result<u16> {
    listen_on(info, port, 0, None)
}

/// [`listen`] on a chosen local port (0: any); with `run_dir`, the cluster's info is read
/// again there for each connection (the head of its current attempt).
pub(crate) fn listen_on(
    info: &ClusterInfo,
    port: u16,
    local: u16,
    run_dir: Option<PathBuf>,
) -> Result<u16> {
    let first = info.clone();
    serve(local, move || {
        let info = run_dir
            .as_deref()
            .and_then(|d| ClusterInfo::read(d).ok().flatten())
            .filter(|i| i.job_id == first.job_id)
            .unwrap_or_else(|| first.clone());
        // The head's port of the current attempt, where the first attempt's was asked for.
        let port = if port == first.dashboard_port {
            info.dashboard_port
        } else {
            port
        };
        (Head::of(&info), port)
    })
}

/// What a relay step needs of a run: its job, the node its head is on, and the run's own
/// copy of rayslurm there. From a Ray head's [`ClusterInfo`], or from Slurm and the run's
/// record for a run without one (`--no-ray`, `--per-node`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) job_id: String,
    pub(crate) node: String,
    pub(crate) rayslurm_bin: PathBuf,
}

impl Head {
    pub(crate) fn of(info: &ClusterInfo) -> Self {
        Self {
            job_id: info.job_id.clone(),
            node: info.head_node.clone(),
            rayslurm_bin: info.rayslurm_bin.clone(),
        }
    }
}

/// A listener on 127.0.0.1:`local` (0: any port) that relays each connection of the user's
/// own to the head and port `to` names at that moment (asked once a connection, so that it
/// follows the run to the head of its current attempt); returns its port. It serves until
/// the process ends.
pub(crate) fn serve(local: u16, to: impl Fn() -> (Head, u16) + Send + 'static) -> Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", local))
        .with_context(|| format!("cannot listen on 127.0.0.1:{local}"))?;
    let ours = listener.local_addr()?;
    let slots = Arc::new(Slots::default());
    let refused = AtomicUsize::new(0);
    std::thread::spawn(move || {
        for conn in listener.incoming().map_while(Result::ok) {
            let Ok(peer) = conn.peer_addr() else {
                continue;
            };
            if socket_owner::peer_uid(ours, peer) != Some(socket_owner::me()) {
                let n = refused.fetch_add(1, Ordering::Relaxed) + 1;
                eprintln!(
                    "warning: refused a connection to 127.0.0.1:{} from {peer}: it is not yours ({n} refused so far)",
                    ours.port()
                );
                continue;
            }
            let (head, port) = to();
            let slots = Arc::clone(&slots);
            slots.take();
            std::thread::spawn(move || {
                let _ = relay_one(conn, &head, port);
                slots.give();
            });
        }
    });
    Ok(ours.port())
}

/// A count of the relay steps running, at most [`MAX_STEPS`].
#[derive(Default)]
struct Slots {
    running: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    /// Waits for a free slot and takes it.
    fn take(&self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        while *running >= MAX_STEPS {
            running = self.freed.wait(running).unwrap_or_else(|e| e.into_inner());
        }
        *running += 1;
    }

    fn give(&self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        *running = running.saturating_sub(1);
        self.freed.notify_one();
    }
}

/// One connection, through one `srun` step.
fn relay_one(conn: TcpStream, head: &Head, port: u16) -> Result<()> {
    let srun = Cmd::new("srun")
        .args([
            "--overlap",
            &format!("--jobid={}", head.job_id),
            &format!("--nodelist={}", head.node),
            "--nodes=1",
            "--ntasks=1",
            "--unbuffered",
            "--quiet",
            "--job-name=rayslurm-relay",
        ])
        .arg(&head.rayslurm_bin)
        .args(["relay", "--to", &format!("127.0.0.1:{port}")]);
    let mut child = srun
        .command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| srun.spawn_error(e))?;
    let to_head = child.stdin.take().expect("piped stdin");
    let from_head = child.stdout.take().expect("piped stdout");
    let conn_in = conn.try_clone()?;
    let step = nix::unistd::Pid::from_raw(child.id() as i32);
    let upstream = std::thread::spawn(move || {
        pump(conn_in, to_head);
        // The client has closed its side: the server's last answer gets a moment to arrive,
        // then the step ends (a server keeping the connection alive would hold it, and an
        // `srun`, for as long as the allocation lives).
        std::thread::sleep(CLIENT_GONE_GRACE);
        let _ = nix::sys::signal::kill(step, nix::sys::signal::Signal::SIGTERM);
    });
    pump(from_head, &conn);
    let _ = conn.shutdown(std::net::Shutdown::Both);
    let _ = child.kill();
    let _ = child.wait();
    drop(upstream);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_straight_to_the_head_only_where_its_listener_can_be_checked() {
        let reachable = || true;
        // Another host with a token: the relay, even when the head's port answers.
        assert_eq!(route(None, false, reachable).unwrap(), Route::Relay);
        assert!(route(Some(Route::Direct), false, reachable).is_err());
        assert_eq!(
            route(Some(Route::Relay), false, reachable).unwrap(),
            Route::Relay
        );
        // This host, or no token: straight there where it answers.
        assert_eq!(route(None, true, reachable).unwrap(), Route::Direct);
        assert_eq!(route(None, true, || false).unwrap(), Route::Relay);
        assert_eq!(
            route(Some(Route::Direct), true, || false).unwrap(),
            Route::Direct
        );
        assert_eq!(
            route(Some(Route::Relay), true, reachable).unwrap(),
            Route::Relay
        );
    }

    #[test]
    fn at_most_max_steps_run_at_once() {
        let slots = Arc::new(Slots::default());
        for _ in 0..MAX_STEPS {
            slots.take();
        }
        let waiting = {
            let slots = Arc::clone(&slots);
            std::thread::spawn(move || {
                slots.take();
                true
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        assert!(!waiting.is_finished(), "a 17th step waits");
        slots.give();
        assert!(waiting.join().unwrap(), "and runs once one ends");
    }
}
