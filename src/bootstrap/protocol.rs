//! The lines the head and the other nodes say to each other through the worker step: reports
//! on the step's stdout (each node's to the head; anything else there is job output), orders on
//! its stdin (srun `--input=all` gives every task the head's). Heartbeats have their own module;
//! a Ray worker's ready line is [`READY_PREFIX`]; the rest serve setup and per-node runs.

use std::net::IpAddr;

use nix::sys::signal::Signal;

/// The line a worker prints on stdout once its node has joined Ray.
pub(crate) const READY_PREFIX: &str = "RAYSLURM-READY";

const IP: &str = "RAYSLURM-IP";
const SETUP: &str = "RAYSLURM-SETUP";
const EXIT: &str = "RAYSLURM-EXIT";
const GO: &str = "RAYSLURM-GO";
const RUN: &str = "RAYSLURM-RUN";
const STOP: &str = "RAYSLURM-STOP";
const SIGNAL: &str = "RAYSLURM-SIGNAL";

/// What a node tells the head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Report {
    /// The node's address, as `--interface`/`--ip-family` chose it.
    Ip { node: String, ip: IpAddr },
    /// The node's setup ended with this exit code.
    Setup { node: String, code: i32 },
    /// A rank's command ended with this exit code (128 + signal if a signal ended it).
    Exit { rank: u32, node: String, code: i32 },
}

impl Report {
    pub(crate) fn line(&self) -> String {
        match self {
            Self::Ip { node, ip } => format!("{IP} {node} {ip}"),
            Self::Setup { node, code } => format!("{SETUP} {node} {code}"),
            Self::Exit { rank, node, code } => format!("{EXIT} {rank} {node} {code}"),
        }
    }

    pub(crate) fn parse(line: &str) -> Option<Self> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [IP, node, ip] => Some(Self::Ip {
                node: (*node).to_owned(),
                ip: ip.parse().ok()?,
            }),
            [SETUP, node, code] => Some(Self::Setup {
                node: (*node).to_owned(),
                code: code.parse().ok()?,
            }),
            [EXIT, rank, node, code] => Some(Self::Exit {
                rank: rank.parse().ok()?,
                node: (*node).to_owned(),
                code: code.parse().ok()?,
            }),
            _ => None,
        }
    }
}

/// What the head tells every node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Order {
    /// Every node's address (in node-rank order) and the framework port on the head: run
    /// setup.
    Go { master_port: u16, ips: Vec<IpAddr> },
    /// Every node's setup succeeded: run the command.
    Run,
    /// Stop the command (another rank failed, or the run was asked to stop): `signal`, then
    /// SIGKILL after `grace` seconds.
    Stop { grace: u32, signal: Signal },
    /// Pass this signal on to the command (`rayslurm cancel --signal`); nothing stops.
    Signal { signal: Signal },
}

impl Order {
    pub(crate) fn line(&self) -> String {
        match self {
            Self::Go { master_port, ips } => {
                let ips: Vec<String> = ips.iter().map(ToString::to_string).collect();
                format!("{GO} {master_port} {}", ips.join(","))
            }
            Self::Run => RUN.to_owned(),
            Self::Stop { grace, signal } => format!("{STOP} {grace} {}", signal.as_str()),
            Self::Signal { signal } => format!("{SIGNAL} {}", signal.as_str()),
        }
    }

    pub(crate) fn parse(line: &str) -> Option<Self> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [GO, port, ips] => Some(Self::Go {
                master_port: port.parse().ok()?,
                ips: ips
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .ok()?,
            }),
            [RUN] => Some(Self::Run),
            [STOP, grace, signal] => Some(Self::Stop {
                grace: grace.parse().ok()?,
                signal: signal.parse().ok()?,
            }),
            [SIGNAL, signal] => Some(Self::Signal {
                signal: signal.parse().ok()?,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_and_orders_round_trip() {
        let reports = [
            Report::Ip {
                node: "node2".into(),
                ip: "fd00::12".parse().unwrap(),
            },
            Report::Setup {
                node: "node2".into(),
                code: 3,
            },
            Report::Exit {
                rank: 5,
                node: "node3".into(),
                code: 137,
            },
        ];
        for r in reports {
            assert_eq!(Report::parse(&r.line()), Some(r));
        }
        let orders = [
            Order::Go {
                master_port: 12009,
                ips: vec!["10.0.0.1".parse().unwrap(), "fd00::2".parse().unwrap()],
            },
            Order::Run,
            Order::Stop {
                grace: 5,
                signal: Signal::SIGTERM,
            },
            Order::Stop {
                grace: 55,
                signal: Signal::SIGUSR1,
            },
            Order::Signal {
                signal: Signal::SIGUSR2,
            },
        ];
        for o in orders {
            assert_eq!(Order::parse(&o.line()), Some(o));
        }
        assert_eq!(Report::parse("[0 node1] RAYSLURM-EXIT 1 n 0"), None);
        assert_eq!(Order::parse("RAYSLURM-GO x 10.0.0.1"), None);
    }
}
