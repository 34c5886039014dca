//! `rayslurm relay --to HOST:PORT` (hidden): runs on a cluster's head node inside an
//! `srun --overlap` step and copies bytes between its stdin/stdout and a TCP connection to
//! `HOST:PORT` there. The login node reaches the cluster's Jobs API or dashboard through it
//! where it cannot reach compute nodes' ports. Plain bytes, so the login node's rayslurm and
//! the cluster's copy may be of different versions.

use std::net::TcpStream;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::RelayArgs;
use crate::sys::private_tree::owner_name;
use crate::sys::pump::pump;
use crate::sys::socket_owner::{self, PortCheck};

pub(crate) fn run(args: &RelayArgs) -> Result<ExitCode> {
    // On the head, where the port is: never connect the user's forward (or their token) to a
    // port another user holds, on any address of the node.
    let to: std::net::SocketAddr = args
        .to
        .parse()
        .with_context(|| format!("`--to {}` is no IP:PORT address", args.to))?;
    socket_owner::ensure_port_is_ours(to.port()).map_err(|e| {
        let node = nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default();
        let holder = match &e {
            PortCheck::Foreign(f) => format!(": {} listens on it", owner_name(f.uid)),
            PortCheck::Unreadable(..) => String::new(),
        };
        anyhow::Error::new(e).context(format!(
            "the relay on {node} does not connect to {to}{holder}"
        ))
    })?;
    let stream = TcpStream::connect(&args.to)
        .with_context(|| format!("the relay cannot connect to {}", args.to))?;
    let to_socket = stream.try_clone()?;
    std::thread::spawn(move || {
        pump(std::io::stdin().lock(), &to_socket);
        let _ = to_socket.shutdown(std::net::Shutdown::Write);
    });
    pump(&stream, std::io::stdout().lock());
    Ok(ExitCode::SUCCESS)
}
