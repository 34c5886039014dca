//! Keeps a port from changing hands when the program listening on it dies. Ray's programs send
//! the run's token to each other's ports (a raylet to the GCS, Ray's job supervisor to the
//! dashboard's `/report_events` on the node's IP); if one of them dies, its port is free, and
//! another user with a shell on the node who binds it first receives the token from the others
//! as they retry. So, once Ray listens, the head takes a second handle on each such listening
//! socket (`pidfd_getfd`, the way a debugger borrows a file of a process of the same user): the
//! socket, and so its port on every address it was bound to, then lives as long as the head,
//! whatever becomes of Ray's program. Connections to it while the program lives go to the
//! program; after it ended, to whoever accepts on the kept handle (or wait unanswered).

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;

use super::socket_owner::{self, LISTEN};

/// The listening sockets of one port, held by this process too, and the process that listened.
#[derive(Debug)]
pub(crate) struct Kept {
    /// Each listening socket of the port (IPv4 and IPv6 ones are two).
    pub(crate) sockets: Vec<OwnedFd>,
    /// The program that listens (a pidfd: readable once it has ended), and its pid.
    pub(crate) owner: OwnedFd,
    pub(crate) pid: i32,
}

/// Why a port could not be kept.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeepError {
    #[error("no socket of yours listens on port {0}")]
    NotListening(u16),
    #[error("no process of yours holds the socket listening on port {0}")]
    NoHolder(u16),
    #[error("cannot take a handle on the socket of port {port} from process {pid}: {errno}")]
    Syscall {
        port: u16,
        pid: i32,
        errno: nix::errno::Errno,
    },
    #[error("cannot read /proc/net/tcp: {0}")]
    Tables(std::io::Error),
}

/// Takes a handle on every socket of the user's that listens on `port` on this node.
pub(crate) fn keep(port: u16) -> Result<Kept, KeepError> {
    let me = socket_owner::me();
    let inodes: Vec<u64> = socket_owner::read_tables()
        .map_err(KeepError::Tables)?
        .iter()
        .filter(|r| r.state == LISTEN && r.local.port() == port && r.uid == me)
        .map(|r| r.inode)
        .collect();
    if inodes.is_empty() {
        return Err(KeepError::NotListening(port));
    }
    let holders = holders_of(&inodes, me);
    let Some(first) = holders.first() else {
        return Err(KeepError::NoHolder(port));
    };
    let failed = |pid| move |errno| KeepError::Syscall { port, pid, errno };
    let owner = pidfd_open(first.pid).map_err(failed(first.pid))?;
    let mut sockets = Vec::new();
    for inode in inodes {
        // Each socket from a process that holds it.
        if let Some(h) = holders.iter().find(|h| h.inode == inode) {
            let socket = if h.pid == first.pid {
                pidfd_getfd(&owner, h.fd)
            } else {
                pidfd_open(h.pid).and_then(|pidfd| pidfd_getfd(&pidfd, h.fd))
            };
            sockets.push(socket.map_err(failed(h.pid))?);
        }
    }
    Ok(Kept {
        sockets,
        owner,
        pid: first.pid,
    })
}

/// A descriptor of a process that refers to a socket.
struct Holder {
    pid: i32,
    inode: u64,
    fd: i32,
}

/// The descriptors of processes of uid `me` that refer to the sockets `inodes`, from their
/// `/proc/PID/fd` (only the user's own processes can be read there).
fn holders_of(inodes: &[u64], me: u32) -> Vec<Holder> {
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in procs.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if entry.metadata().map(|m| m.uid()).ok() != Some(me) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let Some(inode) = socket_inode(&link.to_string_lossy()) else {
                continue;
            };
            if inodes.contains(&inode)
                && let Ok(n) = fd.file_name().to_string_lossy().parse::<i32>()
            {
                found.push(Holder { pid, inode, fd: n });
            }
        }
    }
    found
}

/// `socket:[12345]` → 12345.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

fn pidfd_open(pid: i32) -> Result<OwnedFd, nix::errno::Errno> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new file descriptor or -1.
    let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(nix::errno::Errno::last());
    }
    // SAFETY: the descriptor is new and ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn pidfd_getfd(pidfd: &OwnedFd, target: i32) -> Result<OwnedFd, nix::errno::Errno> {
    // SAFETY: pidfd_getfd takes a pidfd, a descriptor number of that process and flags, and
    // returns a new descriptor of ours (close-on-exec) or -1.
    let fd =
        unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), target, 0) };
    if fd < 0 {
        return Err(nix::errno::Errno::last());
    }
    // SAFETY: the descriptor is new and ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

impl Kept {
    /// Waits until the program that listened has ended.
    pub(crate) fn wait_for_owner(&self) {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let mut fds = [PollFd::new(self.owner.as_fd(), PollFlags::POLLIN)];
        while let Err(nix::errno::Errno::EINTR) = poll(&mut fds, PollTimeout::NONE) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::process::{Command, Stdio};

    #[test]
    fn socket_links_name_their_inode() {
        assert_eq!(socket_inode("socket:[4242]"), Some(4242));
        assert_eq!(socket_inode("pipe:[4242]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    /// A listener of another process (python, as Ray's dashboard is) that then dies: its port
    /// stays held by the kept handle, no one can bind it, and connections reach the keeper.
    #[test]
    fn a_kept_port_outlives_the_program_that_listened() {
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import socket, sys, time\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen(8)\nprint(s.getsockname()[1], flush=True)\ntime.sleep(60)",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        let mut out = child.stdout.take().unwrap();
        let mut byte = [0u8; 1];
        while out.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
            line.push(byte[0] as char);
        }
        let port: u16 = line.trim().parse().unwrap();
        let kept = keep(port).unwrap();
        assert_eq!(kept.pid, child.id() as i32);
        assert_eq!(kept.sockets.len(), 1);
        child.kill().unwrap();
        child.wait().unwrap();
        kept.wait_for_owner();
        assert!(
            TcpListener::bind(("127.0.0.1", port)).is_err(),
            "the port stays held"
        );
        let listener = TcpListener::from(kept.sockets.into_iter().next().unwrap());
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        client.write_all(b"hello").unwrap();
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = [0u8; 5];
        conn.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello", "the keeper receives what was sent");
    }

    #[test]
    fn a_port_nobody_listens_on_is_not_kept() {
        // A client's own port: bound, connected, and no listener's (nobody else may bind it).
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let port = client.local_addr().unwrap().port();
        let kept = keep(port);
        assert!(matches!(kept, Err(KeepError::NotListening(_))), "{kept:?}");
    }
}
