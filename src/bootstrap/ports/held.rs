//! A port held by this process: the sockets that keep a chosen port from everyone else until
//! its user binds it, and the one that keeps a rendezvous port from every other run's choice
//! while its framework may bind it.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{
    AddressFamily, Backlog, SockFlag, SockType, SockaddrIn, SockaddrIn6, SockaddrStorage, bind,
    getsockname, listen, setsockopt, socket, sockopt,
};

/// A port held by this process until this is dropped: listening on every address (IPv6 and
/// IPv4) without `SO_REUSEADDR`, so that nothing else can bind it, or, once its user has
/// started, [`Held::leave_to_its_user`].
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) port: u16,
    _socket: OwnedFd,
}

impl Held {
    /// Keeps the port from every other choice of rayslurm's while its user (the command, the
    /// ranks) may bind it: a socket bound on every address with `SO_REUSEADDR` that does not
    /// listen. A program that sets `SO_REUSEADDR` too (torch's TCPStore, libuv, gRPC, most
    /// servers) binds and listens beside it; a bind without it, as each choice here is, fails.
    pub(crate) fn leave_to_its_user(self) -> Option<Held> {
        let port = self.port;
        drop(self);
        let socket = socket_on(port, true).ok()?;
        Some(Held {
            port,
            _socket: socket,
        })
    }
}

/// Listens on `port` (0: any the kernel gives) on every address, IPv6 and IPv4, without
/// `SO_REUSEADDR`: this fails while any socket is bound to the port on any address, listening
/// or not, of any user.
pub(crate) fn hold(port: u16) -> std::io::Result<Held> {
    let socket = socket_on(port, false)?;
    listen(&socket, Backlog::new(1).map_err(std::io::Error::from)?)?;
    let port = match getsockname::<SockaddrStorage>(socket.as_raw_fd())? {
        a if a.as_sockaddr_in6().is_some() => a.as_sockaddr_in6().map_or(0, |a| a.port()),
        a => a.as_sockaddr_in().map_or(0, |a| a.port()),
    };
    Ok(Held {
        port,
        _socket: socket,
    })
}

/// A TCP socket bound to `port` on every address: a dual-stack IPv6 one (which also takes
/// the port on IPv4's), or IPv4 alone where the node has no IPv6.
fn socket_on(port: u16, reuse: bool) -> std::io::Result<OwnedFd> {
    let stream = |family| socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None);
    let v6 = stream(AddressFamily::Inet6).and_then(|fd| {
        setsockopt(&fd, sockopt::Ipv6V6Only, &false)?;
        setsockopt(&fd, sockopt::ReuseAddr, &reuse)?;
        let any = SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, port, 0, 0);
        bind(fd.as_raw_fd(), &SockaddrIn6::from(any)).map(|()| fd)
    });
    match v6 {
        Ok(fd) => Ok(fd),
        Err(Errno::EAFNOSUPPORT | Errno::EADDRNOTAVAIL) => {
            let fd = stream(AddressFamily::Inet)?;
            setsockopt(&fd, sockopt::ReuseAddr, &reuse)?;
            let any = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port);
            bind(fd.as_raw_fd(), &SockaddrIn::from(any))?;
            Ok(fd)
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_port_left_to_its_user_can_be_bound_by_it_and_by_no_choice() {
        let held = hold(0).unwrap();
        let port = held.port;
        let kept = held.leave_to_its_user().unwrap();
        // The framework (std sets SO_REUSEADDR, as torch's TCPStore and gRPC do) binds it.
        let user = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port)).unwrap();
        assert!(hold(port).is_err(), "chosen again while its run lives");
        drop(user);
        assert!(hold(port).is_err(), "chosen again while its run lives");
        drop(kept);
        assert!(hold(port).is_ok());
    }

    #[test]
    fn another_users_listener_on_any_address_makes_a_port_busy() {
        for addr in ["127.0.0.1:0", "[::1]:0", "0.0.0.0:0"] {
            let Ok(l) = TcpListener::bind(addr) else {
                continue;
            };
            let port = l.local_addr().unwrap().port();
            assert!(hold(port).is_err(), "{addr}");
        }
    }
}
