//! Ray's ports, chosen per run on each node, so that runs sharing a node never collide and no
//! other user can use the choice up.
//!
//! Each of Ray's fixed services (and the rendezvous port, `MASTER_PORT`) gets a port of its
//! own, found free at random in [`Range`] (from 10000 up to the kernel's ephemeral range, read
//! from `/proc/sys/net/ipv4/ip_local_port_range`): outgoing connections take their local ports
//! from the ephemeral range only, so a port there stays free until something binds it on
//! purpose. Where every port of the range is taken, the kernel's own choice (a bind to port 0)
//! is taken instead. A port is held, by a listening socket of this process on every address
//! (IPv4 and IPv6), from its choice until just before the service that uses it starts
//! ([`Held`]): two runs choosing at once never pick the same one, however many runs share the
//! node. `MASTER_PORT` stays held after that, by a socket that lets its user bind it
//! ([`Held::leave_to_its_user`]), until the run ends. Ray's workers bind the ports the kernel gives them (`--min-worker-port=0
//! --max-worker-port=0`), so they need no range either. Each node chooses its own; only the
//! head's GCS port travels to the others (in the workers' `--head-address`).
//!
//! `--port-base P` keeps the old fixed layout for sites whose firewall opens one range: Ray's
//! services on P..P+8, the rendezvous port P+9, workers P+10..P+999. Those ports must be free;
//! a busy one is an error that names it.

mod held;
mod range;

use std::net::Ipv4Addr;

pub(crate) use held::{Held, hold};
use range::{Range, random_u32};

/// Ports of a `--port-base` layout: its fixed services, then its workers up to base + 999.
const BASE_FIXED: u16 = 10;
const BASE_SPAN: u16 = 1000;

/// The ports of the head-only services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeadPorts {
    pub(crate) gcs: u16,
    pub(crate) dashboard: u16,
    pub(crate) client_server: u16,
}

/// The ports one Ray node is started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RayPorts {
    /// The head's own services; none on a worker node.
    pub(crate) head: Option<HeadPorts>,
    pub(crate) node_manager: u16,
    pub(crate) object_manager: u16,
    pub(crate) metrics_export: u16,
    pub(crate) agent_listen: u16,
    pub(crate) agent_grpc: u16,
    pub(crate) runtime_env_agent: u16,
    /// The workers' range (a `--port-base` layout), or none: each worker binds the port the
    /// kernel gives it.
    pub(crate) workers: Option<(u16, u16)>,
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
    #[error("no free TCP port on node {node}: the kernel gave none ({why})")]
    NoneFree { node: String, why: String },
}

impl RayPorts {
    /// The ports where a Ray node serves HTTP besides the dashboard, by name: each is asked
    /// without the token at start-up, and one that answers is reported.
    pub(crate) fn other_http(&self) -> [(&'static str, u16); 3] {
        [
            ("metrics", self.metrics_export),
            ("dashboard agent", self.agent_listen),
            ("runtime env agent", self.runtime_env_agent),
        ]
    }

    /// `ray start` flags for every port (the head's services where this is the head).
    pub(crate) fn ray_flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(h) = self.head {
            flags.extend([
                format!("--port={}", h.gcs),
                format!("--dashboard-port={}", h.dashboard),
                format!("--ray-client-server-port={}", h.client_server),
            ]);
        }
        let (min, max) = self.workers.unwrap_or((0, 0));
        flags.extend([
            format!("--node-manager-port={}", self.node_manager),
            format!("--object-manager-port={}", self.object_manager),
            format!("--metrics-export-port={}", self.metrics_export),
            format!("--dashboard-agent-listen-port={}", self.agent_listen),
            format!("--dashboard-agent-grpc-port={}", self.agent_grpc),
            format!("--runtime-env-agent-port={}", self.runtime_env_agent),
            format!("--min-worker-port={min}"),
            format!("--max-worker-port={max}"),
        ]);
        flags
    }
}

/// Ray's ports for one node, held until [`HeldRayPorts::release`].
#[derive(Debug)]
pub(crate) struct HeldRayPorts {
    pub(crate) ports: RayPorts,
    held: Vec<Held>,
}

impl HeldRayPorts {
    /// Lets the ports go, for `ray start` to bind them: call it just before.
    pub(crate) fn release(self) -> RayPorts {
        self.ports
    }
}

/// One free port of `range` (or the kernel's choice where the range has none), held.
fn choose_one(
    node: &str,
    range: Range,
    random: &mut dyn FnMut() -> u32,
) -> Result<Held, PortError> {
    if let Some(held) = range.tries(random).find_map(|p| hold(p).ok()) {
        return Ok(held);
    }
    hold(0).map_err(|e| PortError::NoneFree {
        node: node.to_owned(),
        why: e.to_string(),
    })
}

/// Holds each of `ports` (a `--port-base` layout), or names the first that is busy.
fn hold_base(node: &str, base: u16, ports: &[u16]) -> Result<Vec<Held>, PortError> {
    ports
        .iter()
        .map(|p| {
            hold(*p).map_err(|_| PortError::BaseBusy {
                node: node.to_owned(),
                first: base,
                last: base.saturating_add(BASE_SPAN - 1),
                busy: *p,
            })
        })
        .collect()
}

/// Chooses and holds Ray's ports for this node (`head`: with the head's services), or takes
/// the `--port-base` layout when `base` is given.
pub(crate) fn choose_ray(
    node: &str,
    head: bool,
    base: Option<u16>,
) -> Result<HeldRayPorts, PortError> {
    let count = if head { 9 } else { 6 };
    let held = match base {
        Some(b) => {
            // GCS, dashboard and client server first, as before: b, b+1, b+2.
            let offsets = if head { 0..9 } else { 3..9 };
            let ports: Vec<u16> = offsets.map(|o| b + o).collect();
            hold_base(node, b, &ports)?
        }
        None => {
            let range = Range::of_node();
            let mut random = random_u32;
            (0..count)
                .map(|_| choose_one(node, range, &mut random))
                .collect::<Result<_, _>>()?
        }
    };
    let p: Vec<u16> = held.iter().map(|h| h.port).collect();
    let (head_ports, node_ports) = if head {
        let h = HeadPorts {
            gcs: p[0],
            dashboard: p[1],
            client_server: p[2],
        };
        (Some(h), &p[3..])
    } else {
        (None, &p[..])
    };
    let ports = RayPorts {
        head: head_ports,
        node_manager: node_ports[0],
        object_manager: node_ports[1],
        metrics_export: node_ports[2],
        agent_listen: node_ports[3],
        agent_grpc: node_ports[4],
        runtime_env_agent: node_ports[5],
        workers: base.map(|b| (b + BASE_FIXED, b.saturating_add(BASE_SPAN - 1))),
    };
    Ok(HeldRayPorts { ports, held })
}

/// Chooses and holds the rendezvous port (`MASTER_PORT`): base + 9 with `--port-base`.
pub(crate) fn choose_master(node: &str, base: Option<u16>) -> Result<Held, PortError> {
    match base {
        Some(b) => Ok(hold_base(node, b, &[b + 9])?.remove(0)),
        None => choose_one(node, Range::of_node(), &mut random_u32),
    }
}

/// Whether something on this node accepts connections on `port` at 127.0.0.1.
pub(crate) fn listening_locally(port: u16) -> bool {
    let addr = (Ipv4Addr::LOCALHOST, port).into();
    std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200)).is_ok()
}

/// `rayslurm ports N` (hidden): chooses the ports of `runs` runs at once on this node, as many
/// heads with their rendezvous port, holds them all, and prints one line a run. A test of the
/// choice on a node shared with other users.
pub(crate) fn print_choices(runs: u32) -> u8 {
    let node = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    // One process holding what many runs' processes would: a descriptor a port.
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
    let mut all = Vec::new();
    for run in 0..runs {
        let chosen =
            choose_ray(&node, true, None).and_then(|ray| Ok((ray, choose_master(&node, None)?)));
        match chosen {
            Ok(c) => all.push(c),
            Err(e) => {
                eprintln!("error: run {run} of {runs}: {e}");
                return 1;
            }
        }
    }
    for (ray, master) in &all {
        let ports: Vec<String> = ray
            .held
            .iter()
            .chain([master])
            .map(|h| h.port.to_string())
            .collect();
        println!("{}", ports.join(" "));
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_held_port_is_not_chosen_again_and_a_busy_base_is_refused() {
        let first = choose_ray("n1", true, None).unwrap();
        let second = choose_ray("n1", true, None).unwrap();
        let master = choose_master("n1", None).unwrap();
        let mut all: Vec<u16> = first
            .held
            .iter()
            .chain(&second.held)
            .map(|h| h.port)
            .collect();
        all.push(master.port);
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "every port chosen once: {all:?}");
        // A port held is busy for a base the user asked for: refused, naming it, not moved.
        let gcs = first.ports.head.unwrap().gcs;
        let err = choose_ray("node2", true, Some(gcs))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("port {gcs} is in use")) && err.contains("node2"),
            "{err}"
        );
        // Released, it is free again for `ray start`.
        let ports = first.release();
        assert!(hold(ports.head.unwrap().gcs).is_ok());
    }

    #[test]
    fn a_full_range_falls_back_to_the_kernels_choice() {
        let busy = hold(0).unwrap();
        let range = Range {
            first: busy.port,
            end: busy.port + 1,
        };
        let got = choose_one("n", range, &mut random_u32).unwrap();
        assert_ne!(got.port, busy.port);
    }

    #[test]
    fn flags_name_every_port_and_the_kernels_worker_ports() {
        let held = choose_ray("n", true, None).unwrap();
        let p = held.release();
        let flags = p.ray_flags().join(" ");
        assert!(
            flags.contains(&format!("--port={}", p.head.unwrap().gcs)),
            "{flags}"
        );
        assert!(
            flags.contains("--min-worker-port=0 --max-worker-port=0"),
            "{flags}"
        );
        let worker = choose_ray("n", false, None).unwrap().release();
        assert!(!worker.ray_flags().join(" ").contains("--port="));
        let base = 40_000 + (std::process::id() % 200) as u16 * 100;
        let given = choose_ray("n", true, Some(base)).unwrap().release();
        let flags = given.ray_flags().join(" ");
        assert!(flags.contains(&format!("--port={base} ")), "{flags}");
        assert!(
            flags.contains(&format!("--runtime-env-agent-port={}", base + 8)),
            "{flags}"
        );
        assert!(
            flags.contains(&format!("--max-worker-port={}", base + 999)),
            "{flags}"
        );
    }

    #[test]
    fn listening_locally_sees_a_listener() {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(listening_locally(port));
        drop(l);
        assert!(!listening_locally(port));
    }

    /// A `--port-base` layout as documented: the rendezvous port at base + 9, the workers'
    /// range base + 10 to base + 999 (also named in the error of a busy base), and the ports
    /// asked over HTTP by name.
    #[test]
    fn a_port_base_layout_places_every_port_where_the_docs_say() {
        // A block another process (a test of another run, an outgoing connection's ephemeral
        // port) holds a port of is passed over: the layout is the same at any base.
        let (base, master) = (0..200u16)
            .map(|i| 40_050 + ((std::process::id() as u16 % 200 + i) % 200) * 100)
            .find_map(|base| choose_master("n", Some(base)).ok().map(|m| (base, m)))
            .expect("a free block of 1000 ports");
        assert_eq!(master.port, base + 9);
        let worker = choose_ray("n", false, Some(base)).unwrap().release();
        assert_eq!(worker.workers, Some((base + 10, base + 999)));
        assert_eq!(
            (worker.node_manager, worker.runtime_env_agent),
            (base + 3, base + 8)
        );
        assert_eq!(
            worker.other_http(),
            [
                ("metrics", base + 5),
                ("dashboard agent", base + 6),
                ("runtime env agent", base + 8),
            ]
        );
        let err = choose_master("n2", Some(base)).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "ports {base}-{} (--port-base {base}) are not all free on node n2: port {} is in use",
                base + 999,
                base + 9
            )
        );
    }

    /// The hidden `rayslurm ports N` succeeds when every run found its ports.
    #[test]
    fn printing_the_choices_of_runs_succeeds() {
        assert_eq!(print_choices(2), 0);
    }
}
