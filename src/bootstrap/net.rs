//! Choosing the IP address a node offers to the others.
//!
//! Taken from the node's own interfaces (never from `hostname -i`, which may say 127.0.1.1 or
//! an address the node does not own). Loopback and link-local addresses are never chosen.
//! `--interface` picks a NIC (e.g. `ib0`), `--ip-family` the family; when neither settles it,
//! the address the node's Slurm name resolves to is preferred, since Slurm reaches the node there.

use std::fmt;
use std::net::{IpAddr, ToSocketAddrs};

use crate::handoff::cluster::IpFamily;

/// One address on one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) interface: String,
    pub(crate) addr: IpAddr,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum NetError {
    #[error("cannot list this node's network interfaces: {0}")]
    List(nix::Error),
    #[error("node {node} has no usable {wanted} address; its addresses are: {addrs}")]
    NoMatch {
        node: String,
        wanted: String,
        addrs: String,
    },
}

/// This node's addresses.
pub(crate) fn local_candidates() -> Result<Vec<Candidate>, NetError> {
    let addrs = nix::ifaddrs::getifaddrs().map_err(NetError::List)?;
    Ok(addrs
        .filter_map(|ifa| {
            let sock = ifa.address?;
            let addr = if let Some(v4) = sock.as_sockaddr_in() {
                IpAddr::V4(v4.ip())
            } else {
                IpAddr::V6(sock.as_sockaddr_in6()?.ip())
            };
            Some(Candidate {
                interface: ifa.interface_name,
                addr,
            })
        })
        .collect())
}

/// The addresses `name` resolves to (empty if it does not).
pub(crate) fn resolve(name: &str) -> Vec<IpAddr> {
    (name, 0)
        .to_socket_addrs()
        .map(|it| it.map(|s| s.ip()).collect())
        .unwrap_or_default()
}

fn usable(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => {
            !(v4.is_loopback() || v4.is_link_local() || v4.is_unspecified() || v4.is_multicast())
        }
        IpAddr::V6(v6) => {
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            !(v6.is_loopback() || link_local || v6.is_unspecified() || v6.is_multicast())
        }
    }
}

fn family_ok(addr: &IpAddr, family: IpFamily) -> bool {
    match family {
        IpFamily::Auto => true,
        IpFamily::V4 => addr.is_ipv4(),
        IpFamily::V6 => addr.is_ipv6(),
    }
}

/// Picks the address; the error lists every address the node has.
pub(crate) fn choose(
    node: &str,
    candidates: &[Candidate],
    interface: Option<&str>,
    family: IpFamily,
    preferred: &[IpAddr],
) -> Result<IpAddr, NetError> {
    let fits: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| usable(&c.addr))
        .filter(|c| interface.is_none_or(|i| c.interface == i))
        .filter(|c| family_ok(&c.addr, family))
        .collect();
    // Auto means IPv4 when there is one.
    let pool: Vec<&Candidate> = if family == IpFamily::Auto && fits.iter().any(|c| c.addr.is_ipv4())
    {
        fits.into_iter().filter(|c| c.addr.is_ipv4()).collect()
    } else {
        fits
    };
    pool.iter()
        .find(|c| preferred.contains(&c.addr))
        .or(pool.first())
        .map(|c| c.addr)
        .ok_or_else(|| NetError::NoMatch {
            node: node.to_owned(),
            wanted: describe(interface, family),
            addrs: list(candidates),
        })
}

fn describe(interface: Option<&str>, family: IpFamily) -> String {
    let fam = match family {
        IpFamily::Auto => "IP",
        IpFamily::V4 => "IPv4",
        IpFamily::V6 => "IPv6",
    };
    match interface {
        Some(i) => format!("{fam} (not loopback or link-local) on interface `{i}`"),
        None => format!("{fam} (not loopback or link-local)"),
    }
}

fn list(candidates: &[Candidate]) -> String {
    if candidates.is_empty() {
        return "none".to_owned();
    }
    candidates
        .iter()
        .map(|c| format!("{} {}", c.interface, c.addr))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `host:port`, with IPv6 addresses in brackets.
pub(crate) struct HostPort(pub(crate) IpAddr, pub(crate) u16);

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(a) => write!(f, "{a}:{}", self.1),
            IpAddr::V6(a) => write!(f, "[{a}]:{}", self.1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(interface: &str, addr: &str) -> Candidate {
        Candidate {
            interface: interface.into(),
            addr: addr.parse().unwrap(),
        }
    }

    fn node() -> Vec<Candidate> {
        vec![
            c("lo", "127.0.0.1"),
            c("lo", "::1"),
            c("eth0", "10.0.0.5"),
            c("eth0", "fe80::1"),
            c("eth0", "fd00::5"),
            c("ib0", "192.168.7.5"),
            c("ib0", "169.254.3.3"),
        ]
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn auto_takes_ipv4_never_loopback() {
        assert_eq!(
            choose("n", &node(), None, IpFamily::Auto, &[]).unwrap(),
            ip("10.0.0.5")
        );
    }

    #[test]
    fn interface_picks_the_nic() {
        assert_eq!(
            choose("n", &node(), Some("ib0"), IpFamily::Auto, &[]).unwrap(),
            ip("192.168.7.5")
        );
    }

    #[test]
    fn family_six_skips_link_local() {
        assert_eq!(
            choose("n", &node(), None, IpFamily::V6, &[]).unwrap(),
            ip("fd00::5")
        );
        assert_eq!(
            choose("n", &node(), Some("eth0"), IpFamily::V6, &[]).unwrap(),
            ip("fd00::5")
        );
    }

    #[test]
    fn the_slurm_name_address_is_preferred() {
        let pref = [ip("127.0.1.1"), ip("192.168.7.5")];
        assert_eq!(
            choose("n", &node(), None, IpFamily::Auto, &pref).unwrap(),
            ip("192.168.7.5")
        );
    }

    #[test]
    fn auto_falls_back_to_ipv6_on_an_ipv6_only_node() {
        let only6 = vec![c("lo", "127.0.0.1"), c("eth0", "fd00::9")];
        assert_eq!(
            choose("n", &only6, None, IpFamily::Auto, &[]).unwrap(),
            ip("fd00::9")
        );
    }

    #[test]
    fn a_wrong_choice_lists_the_addresses() {
        let err = choose("node7", &node(), Some("ib1"), IpFamily::Auto, &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("node7"), "{err}");
        assert!(err.contains("`ib1`"), "{err}");
        assert!(err.contains("ib0 192.168.7.5"), "{err}");
        let err = choose("n", &node(), Some("ib0"), IpFamily::V6, &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("IPv6"), "{err}");
    }

    #[test]
    fn ipv6_is_bracketed() {
        assert_eq!(HostPort(ip("fd00::5"), 6379).to_string(), "[fd00::5]:6379");
        assert_eq!(HostPort(ip("10.0.0.5"), 6379).to_string(), "10.0.0.5:6379");
    }
}
