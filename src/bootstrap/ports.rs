//! Ray's ports, chosen per job so that two jobs sharing a node never collide.
//!
//! Ports come in blocks of [`STRIDE`] below Linux's ephemeral range: the block is picked from
//! the job id and checked free on this node (the next block is tried if not). Within a block,
//! the first ports are Ray's fixed services and the rest its worker port range. Each node
//! picks its own block; only the head's GCS port travels to the others.

use std::net::{Ipv4Addr, Ipv6Addr, TcpListener};

/// First port of the first block.
const FIRST: u16 = 12000;
/// Ports per block.
const STRIDE: u16 = 1000;
/// Blocks between [`FIRST`] and the ephemeral range (32768).
const BLOCKS: u16 = 20;
/// Fixed services at the start of a block; worker ports follow.
const FIXED: u16 = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RayPorts {
    pub(crate) base: u16,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum PortError {
    #[error(
        "ports {first}-{last} (--port-base {first}) are not all free on node {node}: port {busy} is in use"
    )]
    BaseBusy {
        node: String,
        first: u16,
        last: u16,
        busy: u16,
    },
    #[error("no free block of Ray ports on node {node} between {FIRST} and 32767")]
    NoneFree { node: String },
}

impl RayPorts {
    pub(crate) fn gcs(&self) -> u16 {
        self.base
    }
    pub(crate) fn dashboard(&self) -> u16 {
        self.base + 1
    }
    pub(crate) fn client_server(&self) -> u16 {
        self.base + 2
    }
    /// The port frameworks rendezvous on (`MASTER_PORT`): one of the block's fixed ports that
    /// Ray does not use, so it is checked free with the others.
    pub(crate) fn master(&self) -> u16 {
        self.base + 9
    }

    /// The ports of the block where a Ray node serves HTTP besides the dashboard, by name: each
    /// is asked without the token at start-up, and one that answers is reported.
    pub(crate) fn other_http(&self) -> [(&'static str, u16); 3] {
        let b = self.base;
        [
            ("metrics", b + 5),
            ("dashboard agent", b + 6),
            ("runtime env agent", b + 8),
        ]
    }

    /// `ray start` flags for every port; `head` adds the head-only services.
    pub(crate) fn ray_flags(&self, head: bool) -> Vec<String> {
        let b = self.base;
        let mut flags = Vec::new();
        if head {
            flags.extend([
                format!("--port={}", self.gcs()),
                format!("--dashboard-port={}", self.dashboard()),
                format!("--ray-client-server-port={}", self.client_server()),
            ]);
        }
        flags.extend([
            format!("--node-manager-port={}", b + 3),
            format!("--object-manager-port={}", b + 4),
            format!("--metrics-export-port={}", b + 5),
            format!("--dashboard-agent-listen-port={}", b + 6),
            format!("--dashboard-agent-grpc-port={}", b + 7),
            format!("--runtime-env-agent-port={}", b + 8),
            format!("--min-worker-port={}", b + FIXED),
            format!("--max-worker-port={}", b + STRIDE - 1),
        ]);
        flags
    }

    fn fixed_ports(&self) -> impl Iterator<Item = u16> {
        self.base..=self.base + FIXED
    }
}

/// Chooses the block: `base` if the user gave one (it must be free), else from the job number.
pub(crate) fn choose(
    node: &str,
    job_number: u64,
    base: Option<u16>,
    is_free: impl Fn(u16) -> bool,
) -> Result<RayPorts, PortError> {
    if let Some(base) = base {
        let ports = RayPorts { base };
        return match ports.fixed_ports().find(|p| !is_free(*p)) {
            None => Ok(ports),
            Some(busy) => Err(PortError::BaseBusy {
                node: node.to_owned(),
                first: base,
                last: base.saturating_add(STRIDE - 1),
                busy,
            }),
        };
    }
    let start = (job_number % u64::from(BLOCKS)) as u16;
    (0..BLOCKS)
        .map(|i| RayPorts {
            base: FIRST + ((start + i) % BLOCKS) * STRIDE,
        })
        .find(|ports| ports.fixed_ports().all(&is_free))
        .ok_or_else(|| PortError::NoneFree {
            node: node.to_owned(),
        })
}

/// Chooses a block as [`choose`] does and holds it while the returned listener (on the block's
/// first port) lives. A run that opens none of the block's ports itself (a per-node run, whose
/// framework binds `MASTER_PORT` only later, if at all) would otherwise leave the block looking
/// free to the next job on the node whose id picks the same block.
pub(crate) fn choose_held(
    node: &str,
    job_number: u64,
    base: Option<u16>,
) -> Result<(RayPorts, TcpListener), PortError> {
    let mut lost = Vec::new();
    loop {
        let ports = choose(node, job_number, base, |p| !lost.contains(&p) && is_free(p))?;
        match TcpListener::bind((Ipv4Addr::UNSPECIFIED, ports.base)) {
            Ok(held) => return Ok((ports, held)),
            // Another job took it between the check and now.
            Err(_) => lost.push(ports.base),
        }
    }
}

/// Whether nothing listens on `port` on this node (IPv4 and, where present, IPv6).
pub(crate) fn is_free(port: u16) -> bool {
    let v4 = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port)).is_ok();
    let v6 = match TcpListener::bind((Ipv6Addr::UNSPECIFIED, port)) {
        Ok(_) => true,
        // No IPv6 on this node: nothing can listen there either.
        Err(e) => e.kind() == std::io::ErrorKind::AddrNotAvailable,
    };
    v4 && v6
}

/// Whether something on this node accepts connections on `port` at 127.0.0.1.
pub(crate) fn listening_locally(port: u16) -> bool {
    let addr = (Ipv4Addr::LOCALHOST, port).into();
    std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_block_is_not_chosen_again_by_a_job_whose_id_picks_it() {
        // Job ids 7 and 27 pick the same block first; the first run holds it.
        let (first, _held) = choose_held("n1", 7, None).unwrap();
        let (second, _held2) = choose_held("n1", 27, None).unwrap();
        assert_ne!(first.base, second.base);
        assert_ne!(first.master(), second.master());
        // A base the user asked for that is held: refused, not moved.
        let err = choose_held("n1", 99, Some(first.base)).unwrap_err();
        assert!(matches!(err, PortError::BaseBusy { .. }), "{err}");
    }

    #[test]
    fn listening_locally_sees_a_listener() {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(listening_locally(port));
        drop(l);
        assert!(!listening_locally(port));
    }

    #[test]
    fn block_follows_the_job_id() {
        assert_eq!(choose("n", 0, None, |_| true).unwrap().base, 12000);
        assert_eq!(choose("n", 7, None, |_| true).unwrap().base, 19000);
        assert_eq!(choose("n", 27, None, |_| true).unwrap().base, 19000);
        assert_eq!(choose("n", 19, None, |_| true).unwrap().base, 31000);
    }

    #[test]
    fn busy_block_moves_to_the_next() {
        let p = choose("n", 7, None, |p| !(19000..19011).contains(&p)).unwrap();
        assert_eq!(p.base, 20000);
        let p = choose("n", 19, None, |p| p != 31005).unwrap();
        assert_eq!(p.base, 12000, "wraps around");
    }

    #[test]
    fn everything_busy_is_an_error() {
        assert!(choose("n", 1, None, |_| false).is_err());
    }

    #[test]
    fn a_given_base_must_be_free() {
        assert_eq!(choose("n", 1, Some(40000), |_| true).unwrap().base, 40000);
        let err = choose("node2", 1, Some(40000), |p| p != 40003)
            .unwrap_err()
            .to_string();
        assert!(err.contains("40003") && err.contains("node2"), "{err}");
    }

    #[test]
    fn ports_stay_inside_the_block_and_below_ephemeral() {
        let p = RayPorts { base: 31000 };
        let flags = p.ray_flags(true).join(" ");
        assert!(flags.contains("--port=31000"));
        assert!(flags.contains("--max-worker-port=31999"));
        assert!(!p.ray_flags(false).join(" ").contains("--port="));
    }

    #[test]
    fn a_listening_port_is_not_free() {
        let l = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
        assert!(!is_free(l.local_addr().unwrap().port()));
    }
}
