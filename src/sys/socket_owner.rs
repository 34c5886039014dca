//! Who owns a TCP socket on this host, from the kernel's tables `/proc/net/tcp` and
//! `/proc/net/tcp6` (of the caller's network namespace; uids as the caller's user namespace
//! sees them). Two questions, both asked before trusting a port that any local user could have
//! bound or connected to: whether another user listens on a port, on any address of the host
//! (before sending Ray's token there), and who is at the other end of a connection one of our listeners accepted (the
//! relay and the dashboard forward serve only their own user).
//!
//! The tables give each address as hex digits: an IPv4 address as one 32-bit word and an IPv6
//! address as four, each word in the host's byte order (little-endian on x86 and arm64), and
//! the port big-endian. The parsers below are pure and tested on captured text.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// `st` of a listening socket.
pub(crate) const LISTEN: u8 = 0x0A;
/// `st` of a socket in TIME_WAIT: it belongs to no one any more (its uid reads 0).
const TIME_WAIT: u8 = 0x06;

/// One row of `/proc/net/tcp{,6}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) local: SocketAddr,
    pub(crate) remote: SocketAddr,
    pub(crate) state: u8,
    pub(crate) uid: u32,
    /// The socket's inode (`socket:[INODE]` among its holders' `/proc/PID/fd`).
    pub(crate) inode: u64,
}

/// `0100007F` → 127.0.0.1; 32 hex digits → an IPv6 address (four host-order words).
fn parse_ip(hex: &str) -> Option<IpAddr> {
    let word =
        |s: &str| -> Option<[u8; 4]> { Some(u32::from_str_radix(s, 16).ok()?.to_ne_bytes()) };
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(hex)?))),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(hex.get(i * 8..i * 8 + 8)?)?);
            }
            Some(IpAddr::V6(Ipv6Addr::from(bytes)))
        }
        _ => None,
    }
}

/// `0100007F:0CEA` → 127.0.0.1:3306.
fn parse_addr(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    Some(SocketAddr::new(
        parse_ip(ip)?,
        u16::from_str_radix(port, 16).ok()?,
    ))
}

/// One line of the table; `None` for the header and anything malformed.
pub(crate) fn parse_row(line: &str) -> Option<Row> {
    let mut fields = line.split_whitespace();
    let slot = fields.next()?;
    if !slot.ends_with(':') {
        return None;
    }
    let local = parse_addr(fields.next()?)?;
    let remote = parse_addr(fields.next()?)?;
    let state = u8::from_str_radix(fields.next()?, 16).ok()?;
    // tx_queue:rx_queue, tr:tm->when, retrnsmt, then the uid; the timeout, then the inode.
    let uid = fields.nth(3)?.parse().ok()?;
    let inode = fields.nth(1)?.parse().ok()?;
    Some(Row {
        local,
        remote,
        state,
        uid,
        inode,
    })
}

/// Every row of a table's text.
pub(crate) fn parse_table(text: &str) -> Vec<Row> {
    text.lines().filter_map(parse_row).collect()
}

/// An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, how an IPv6 socket shows an IPv4 peer)
/// as the IPv4 address it is.
fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), addr.port()),
            None => addr,
        },
        IpAddr::V4(_) => addr,
    }
}

/// The uid of the client of a connection our listener on `ours` accepted from `peer` (both
/// ends on this host): the client's row has the peer's address as its local one and ours as
/// its remote one. `None` when there is no such row (the client is gone, or on another host).
pub(crate) fn peer_of(rows: &[Row], ours: SocketAddr, peer: SocketAddr) -> Option<u32> {
    let (ours, peer) = (canonical(ours), canonical(peer));
    rows.iter()
        .find(|r| {
            r.state != LISTEN
                && r.state != TIME_WAIT
                && canonical(r.local) == peer
                && canonical(r.remote) == ours
        })
        .map(|r| r.uid)
}

/// Both tables of this network namespace, as they are now.
pub(crate) fn read_tables() -> std::io::Result<Vec<Row>> {
    read_tables_at(
        std::path::Path::new("/proc/net/tcp"),
        std::path::Path::new("/proc/net/tcp6"),
    )
}

/// The IPv4 and IPv6 tables at these paths: a missing IPv6 one (a kernel without IPv6) has no
/// rows; any other error is an error.
fn read_tables_at(tcp: &std::path::Path, tcp6: &std::path::Path) -> std::io::Result<Vec<Row>> {
    let mut rows = parse_table(&std::fs::read_to_string(tcp)?);
    match std::fs::read_to_string(tcp6) {
        Ok(text) => rows.extend(parse_table(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(rows)
}

/// This process's effective uid, whose sockets count as the user's.
pub(crate) fn me() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// A listening socket of another user on a port the run counts as its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Foreign {
    /// Where it listens (`0.0.0.0`, `::`, 127.0.0.1 or one of the node's addresses).
    pub(crate) at: SocketAddr,
    pub(crate) uid: u32,
    /// The user's own uid.
    pub(crate) me: u32,
}

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (port, ip) = (self.at.port(), self.at.ip());
        write!(
            f,
            "port {port} on {ip} is held by user id {}, not by you (user id {}): someone else listens on a port of your run, so the token is sent nowhere on that port; check who with `ss -ltnpe 'sport = :{port}'`, and stop the run or cluster if it is not yours",
            self.uid, self.me
        )
    }
}

/// A listener of a uid other than `me` on `port`, on any address of this host: a port of the
/// run held on the node's IP, on `::` or on 127.0.0.1 by someone else is theirs alike (a
/// request to one address may be answered on another, and the login node connects to the
/// node's IP where the head connects to 127.0.0.1).
pub(crate) fn foreign_on_port(rows: &[Row], port: u16, me: u32) -> Option<Foreign> {
    rows.iter()
        .find(|r| r.state == LISTEN && r.local.port() == port && r.uid != me)
        .map(|r| Foreign {
            at: canonical(r.local),
            uid: r.uid,
            me,
        })
}

/// Whether `port` may be sent the user's secrets: no socket of another user listens on it, on
/// any address of this host. The error names the port, the address, the other uid and what to
/// do.
pub(crate) fn ensure_port_is_ours(port: u16) -> Result<(), PortCheck> {
    let rows = read_tables().map_err(|e| PortCheck::Unreadable(port, e.to_string()))?;
    match foreign_on_port(&rows, port, me()) {
        Some(foreign) => Err(PortCheck::Foreign(foreign)),
        None => Ok(()),
    }
}

/// Why a port may not be sent the user's secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PortCheck {
    #[error("{0}")]
    Foreign(Foreign),
    #[error("cannot read /proc/net/tcp to see who listens on port {0}: {1}")]
    Unreadable(u16, String),
}

/// Whether `ip` is an address of this host (its owner can then be read here), from the
/// interfaces' list, not from a bind that `ip_nonlocal_bind` would let succeed.
pub(crate) fn is_local_address(ip: IpAddr) -> bool {
    let ip = canonical(SocketAddr::new(ip, 0)).ip();
    ip.is_loopback()
        || nix::ifaddrs::getifaddrs().is_ok_and(|mut addrs| {
            addrs.any(|ifa| {
                ifa.address.is_some_and(|a| {
                    a.as_sockaddr_in().map(|v4| IpAddr::V4(v4.ip())) == Some(ip)
                        || a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())) == Some(ip)
                })
            })
        })
}

/// The uid of the local client at `peer` of a connection accepted on `ours`; `None` when it
/// cannot be told (then it is not served).
pub(crate) fn peer_uid(ours: SocketAddr, peer: SocketAddr) -> Option<u32> {
    peer_of(&read_tables().ok()?, ours, peer)
}

/// For tests: an HTTP server of another user (uid 65534, through `setpriv`) on 127.0.0.1 that
/// answers 401 to everything, as a squatter on Ray's port would, and prints every
/// `Authorization` header it is sent; [`squatter::Squatter::own`], the same server of this
/// process's own user (the control: the token goes to it). Only root can start them: `None`
/// elsewhere.
#[cfg(test)]
pub(crate) mod squatter {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Child, Command, Stdio};

    use crate::sys::test_skip;

    const SERVER: &str = r#"
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print("AUTH", self.headers.get("Authorization"), flush=True)
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_POST = do_GET
    def log_message(self, *args):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print("PORT", s.server_address[1], flush=True)
s.serve_forever()
"#;

    pub(crate) struct Squatter {
        child: Child,
        out: BufReader<std::process::ChildStdout>,
        pub(crate) port: u16,
    }

    impl Squatter {
        pub(crate) fn start() -> Option<Self> {
            Self::start_as(65534, 65534)
        }

        /// The same server, run as this process's own user and group.
        pub(crate) fn own() -> Option<Self> {
            Self::start_as(
                nix::unistd::geteuid().as_raw(),
                nix::unistd::getegid().as_raw(),
            )
        }

        fn start_as(uid: u32, gid: u32) -> Option<Self> {
            if !nix::unistd::geteuid().is_root()
                || !std::path::Path::new("/usr/bin/python3").exists()
            {
                test_skip::needs_root(
                    "starting another user's listener needs root and /usr/bin/python3",
                );
                return None;
            }
            let mut child = Command::new("setpriv")
                .arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .args(["--clear-groups", "/usr/bin/python3", "-c", SERVER])
                .current_dir("/")
                .stdout(Stdio::piped())
                .spawn()
                .expect("setpriv (util-linux) starts another user's listener");
            let mut out = BufReader::new(child.stdout.take().expect("piped"));
            let mut line = String::new();
            out.read_line(&mut line)
                .expect("the listener says its port");
            let port = line
                .trim()
                .strip_prefix("PORT ")
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("the listener said {line:?}, not its port"));
            Some(Self { child, out, port })
        }

        /// Stops it; returns what it printed (one `AUTH ...` line a request).
        pub(crate) fn seen(mut self) -> String {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let mut text = String::new();
            let _ = self.out.read_to_string(&mut text);
            text
        }
    }

    /// A test that fails before [`Squatter::seen`] leaves no server behind.
    impl Drop for Squatter {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from a host (x86_64): root's sshd on 0.0.0.0:22, uid 1000's listener on
    /// 127.0.0.1:8265 and a connection to it from 127.0.0.1:51432 (uid 1001's client, the
    /// accepted end uid 1000's), and a TIME_WAIT row.
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1065 1 000000006bf7f31d 100 0 0 10 0
   1: 0100007F:2049 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 17995 1 00000000f986008d 100 0 0 10 0
   2: 0100007F:C8E8 0100007F:2049 01 00000000:00000000 00:00000000 00000000  1001        0 18001 1 0000000011111111 20 4 30 10 -1
   3: 0100007F:2049 0100007F:C8E8 01 00000000:00000000 00:00000000 00000000  1000        0 18002 1 0000000022222222 20 4 30 10 -1
   4: 0100007F:C8E9 0100007F:2049 06 00000000:00000000 03:00001000 00000000     0        0 0 3 0000000033333333
";

    /// IPv6: uid 1002 on [::1]:8265, uid 0 on [::]:9000, an IPv6 client (uid 1003) of an IPv4
    /// listener, seen as ::ffff:127.0.0.1.
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:2049 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 2001 1 0000000044444444 100 0 0 10 0
   1: 00000000000000000000000000000000:2328 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2002 1 0000000055555555 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:D000 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1003        0 2003 1 0000000066666666 20 4 30 10 -1
";

    fn at(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn addresses_are_words_in_host_order_and_ports_big_endian() {
        assert_eq!(parse_addr("0100007F:0CEA"), Some(at("127.0.0.1:3306")));
        assert_eq!(parse_addr("00000000:0016"), Some(at("0.0.0.0:22")));
        assert_eq!(
            parse_addr("00000000000000000000000001000000:2049"),
            Some(at("[::1]:8265"))
        );
        assert_eq!(
            parse_addr("0000000000000000FFFF00000100007F:D000"),
            Some(at("[::ffff:127.0.0.1]:53248"))
        );
        // fd00::5 as the kernel prints it: the words 0xfd000000 ... 0x05000000 → 000000FD ...
        assert_eq!(
            parse_addr("000000FD000000000000000005000000:0050"),
            Some(at("[fd00::5]:80"))
        );
        assert_eq!(parse_addr("0100007F"), None);
        assert_eq!(parse_addr("0100007:0016"), None);
        assert_eq!(parse_addr("zz00007F:0016"), None);
    }

    #[test]
    fn rows_give_addresses_state_and_owner() {
        let rows = parse_table(TCP);
        assert_eq!(rows.len(), 5, "the header is no row");
        assert_eq!(
            rows[2],
            Row {
                local: at("127.0.0.1:51432"),
                remote: at("127.0.0.1:8265"),
                state: 0x01,
                uid: 1001,
                inode: 18001,
            }
        );
        assert_eq!(parse_table(TCP6)[0].uid, 1002);
        assert_eq!(parse_row("   7: 0100007F:2049"), None);
    }

    #[test]
    fn a_foreign_listener_on_any_address_of_the_port_is_found() {
        let mut rows = parse_table(TCP);
        rows.extend(parse_table(TCP6));
        let foreign = |port, me| foreign_on_port(&rows, port, me).map(|f| (f.at, f.uid));
        // 127.0.0.1:8265 is uid 1000's own, [::1]:8265 uid 1002's.
        assert_eq!(foreign(8265, 1000), Some((at("[::1]:8265"), 1002)));
        assert_eq!(foreign(8265, 1002), Some((at("127.0.0.1:8265"), 1000)));
        // Wildcards of either family, and root's too.
        assert_eq!(foreign(22, 1000), Some((at("0.0.0.0:22"), 0)));
        assert_eq!(foreign(9000, 1000), Some((at("[::]:9000"), 0)));
        assert_eq!(foreign(9000, 0), None, "root's own");
        // A connection's rows are no listeners.
        assert_eq!(foreign(51432, 1000), None);
        assert_eq!(foreign(1, 1000), None);
    }

    #[test]
    fn a_foreign_listener_on_the_nodes_ip_beside_ours_is_never_missed() {
        let ours = Row {
            local: at("127.0.0.1:8265"),
            remote: at("0.0.0.0:0"),
            state: LISTEN,
            uid: 1000,
            inode: 1,
        };
        // Bound on the node's own address, where the login node connects.
        let squatter = Row {
            local: at("10.0.0.5:8265"),
            uid: 65534,
            ..ours
        };
        for rows in [[ours, squatter], [squatter, ours]] {
            let found = foreign_on_port(&rows, 8265, 1000).unwrap();
            assert_eq!(
                (found.at, found.uid, found.me),
                (at("10.0.0.5:8265"), 65534, 1000)
            );
            let said = found.to_string();
            assert!(
                said.starts_with(
                    "port 8265 on 10.0.0.5 is held by user id 65534, not by you (user id 1000)"
                ),
                "{said}"
            );
        }
        assert_eq!(foreign_on_port(&[ours], 8265, 1000), None);
    }

    #[test]
    fn the_peer_of_an_accepted_connection_is_the_clients_row() {
        let mut rows = parse_table(TCP);
        rows.extend(parse_table(TCP6));
        let ours = at("127.0.0.1:8265");
        assert_eq!(peer_of(&rows, ours, at("127.0.0.1:51432")), Some(1001));
        // A TIME_WAIT row owns nothing; an unknown peer is none.
        assert_eq!(peer_of(&rows, ours, at("127.0.0.1:51433")), None);
        assert_eq!(peer_of(&rows, ours, at("127.0.0.1:4")), None);
        // An IPv6 client of an IPv4 listener, mapped.
        assert_eq!(
            peer_of(&rows, at("127.0.0.1:8080"), at("127.0.0.1:53248")),
            Some(1003)
        );
    }

    #[test]
    fn this_processes_own_listener_and_connection_are_its_own() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = listener.local_addr().unwrap();
        assert_eq!(ensure_port_is_ours(ours.port()), Ok(()));
        let _client = std::net::TcpStream::connect(ours).unwrap();
        let (_conn, peer) = listener.accept().unwrap();
        assert_eq!(peer_uid(ours, peer), Some(me()));
        drop(listener);
        assert_eq!(ensure_port_is_ours(ours.port()), Ok(()));
        assert!(is_local_address(ours.ip()));
        assert!(is_local_address("::ffff:127.0.0.1".parse().unwrap()));
        // TEST-NET-3 (RFC 5737) is no address of any host.
        assert!(!is_local_address("203.0.113.7".parse().unwrap()));
    }

    /// A kernel without IPv6 has no `tcp6`: its absence is no error, any other failure to read
    /// a table is (the port is then never trusted).
    #[test]
    fn a_missing_ipv6_table_is_empty_and_an_unreadable_one_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let (tcp, tcp6) = (tmp.path().join("tcp"), tmp.path().join("tcp6"));
        std::fs::write(&tcp, TCP).unwrap();
        assert_eq!(read_tables_at(&tcp, &tcp6).unwrap(), parse_table(TCP));
        std::fs::write(&tcp6, TCP6).unwrap();
        assert_eq!(read_tables_at(&tcp, &tcp6).unwrap().len(), 5 + 3);
        std::fs::remove_file(&tcp6).unwrap();
        std::fs::create_dir(&tcp6).unwrap();
        assert!(
            read_tables_at(&tcp, &tcp6).is_err(),
            "a directory is no table"
        );
        assert!(read_tables_at(&tmp.path().join("none"), &tcp6).is_err());
        let missing6 = tmp.path().join("none6");
        assert!(read_tables_at(&tmp.path().join("none"), &missing6).is_err());
    }

    /// Every address of this host's interfaces is local, and any loopback one (127.0.0.2 is on
    /// no interface); a peer this host has no row for has no uid.
    #[test]
    fn the_hosts_own_addresses_are_local_and_an_unknown_peer_has_no_owner() {
        assert!(is_local_address("127.0.0.2".parse().unwrap()));
        let addrs: Vec<IpAddr> = nix::ifaddrs::getifaddrs()
            .unwrap()
            .filter_map(|ifa| {
                let a = ifa.address?;
                a.as_sockaddr_in()
                    .map(|v4| IpAddr::V4(v4.ip()))
                    .or_else(|| a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
            })
            .collect();
        let others: Vec<&IpAddr> = addrs.iter().filter(|ip| !ip.is_loopback()).collect();
        assert!(!others.is_empty(), "no network interface: {addrs:?}");
        for ip in &addrs {
            assert!(is_local_address(*ip), "{ip}");
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = listener.local_addr().unwrap();
        assert_eq!(peer_uid(ours, at("127.0.0.1:1")), None);
    }
}
