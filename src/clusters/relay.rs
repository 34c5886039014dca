//! Reaching a port on a cluster's head from the login node. Directly where the login node can
//! connect to it; otherwise (or when `RAYSLURM_RELAY=always`) through the allocation: a local
//! listener on 127.0.0.1 whose every connection becomes an `srun --overlap --jobid` step that
//! runs the cluster's own rayslurm on the head as a byte relay (`rayslurm relay`).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result};

use std::sync::OnceLock;

use crate::env_vars;
use crate::handoff::cluster_info::ClusterInfo;
use crate::sys::process::Cmd;
use crate::sys::pump::pump;

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
/// relayed through the allocation.
pub(crate) fn address(info: &ClusterInfo, port: u16) -> Result<String> {
    let direct = match info.head_ip {
        std::net::IpAddr::V4(ip) => format!("{ip}:{port}"),
        std::net::IpAddr::V6(ip) => format!("[{ip}]:{port}"),
    };
    let route = wanted().unwrap_or_else(|| {
        let addr: SocketAddr = (info.head_ip, port).into();
        if TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok() {
            Route::Direct
        } else {
            Route::Relay
        }
    });
    match route {
        Route::Direct => Ok(direct),
        Route::Relay => Ok(format!("127.0.0.1:{}", listen(info, port)?)),
    }
}

/// Starts a local listener whose connections are relayed to `port` on the head; returns its
/// port. It serves until the process ends.
pub(crate) fn listen(info: &ClusterInfo, port: u16) -> Result<u16> {
    listen_on(info, port, 0)
}

/// [`listen`] on a chosen local port (0: any).
pub(crate) fn listen_on(info: &ClusterInfo, port: u16, local: u16) -> Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", local))
        .with_context(|| format!("cannot listen on 127.0.0.1:{local}"))?;
    let local = listener.local_addr()?.port();
    let info = info.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().map_while(Result::ok) {
            let info = info.clone();
            std::thread::spawn(move || {
                let _ = relay_one(conn, &info, port);
            });
        }
    });
    Ok(local)
}

/// One connection, through one `srun` step.
fn relay_one(conn: TcpStream, info: &ClusterInfo, port: u16) -> Result<()> {
    let srun = Cmd::new("srun")
        .args([
            "--overlap",
            &format!("--jobid={}", info.job_id),
            &format!("--nodelist={}", info.head_node),
            "--nodes=1",
            "--ntasks=1",
            "--unbuffered",
            "--quiet",
            "--job-name=rayslurm-relay",
        ])
        .arg(&info.rayslurm_bin)
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
    let upstream = std::thread::spawn(move || pump(conn_in, to_head));
    pump(from_head, &conn);
    let _ = conn.shutdown(std::net::Shutdown::Both);
    let _ = child.kill();
    let _ = child.wait();
    drop(upstream);
    Ok(())
}
