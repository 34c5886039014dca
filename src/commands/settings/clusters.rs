//! The arguments of the commands that use a running cluster (`queue`, `scale`, `down`,
//! `dashboard`, `forward`),
//! resolved: each destructured, so a flag added to `cli` is a compile error here until it is.

use std::time::Duration;

use crate::cli::{DashboardArgs, DownArgs, ForwardArgs, QueueArgs, ScaleArgs};
use crate::error::{UsageError, show};
use crate::handoff::elastic::ScaleRequest;
use crate::sys::port_range;

/// `queue`, resolved.
#[derive(Debug)]
pub(crate) struct QueueSettings {
    pub(crate) cluster: String,
    pub(crate) json: bool,
}

impl QueueSettings {
    pub(crate) fn resolve(args: &QueueArgs) -> Self {
        let QueueArgs { cluster, json } = args;
        Self {
            cluster: cluster.clone(),
            json: *json,
        }
    }
}

/// `scale`, resolved.
#[derive(Debug)]
pub(crate) struct ScaleSettings {
    pub(crate) cluster: String,
    pub(crate) change: ScaleRequest,
    /// The worker type `+N` and `=N` grow (none: the first).
    pub(crate) worker_type: Option<String>,
    /// How long to wait for the head to take the request.
    pub(crate) timeout: Duration,
    pub(crate) json: bool,
}

impl ScaleSettings {
    pub(crate) fn resolve(args: &ScaleArgs) -> Self {
        let ScaleArgs {
            cluster,
            change,
            worker_type,
            timeout,
            json,
        } = args;
        Self {
            cluster: cluster.clone(),
            change: *change,
            worker_type: worker_type.clone(),
            timeout: Duration::from_secs(u64::from(*timeout)),
            json: *json,
        }
    }
}

/// `down`, resolved.
#[derive(Debug)]
pub(crate) struct DownSettings {
    pub(crate) cluster: String,
}

impl DownSettings {
    pub(crate) fn resolve(args: &DownArgs) -> Self {
        let DownArgs { cluster } = args;
        Self {
            cluster: cluster.clone(),
        }
    }
}

/// `dashboard`, resolved.
#[derive(Debug)]
pub(crate) struct DashboardSettings {
    /// A cluster, or a run of `launch`.
    pub(crate) target: String,
    /// The local port asked for; the dashboard's own number (or any free one) without it.
    pub(crate) port: Option<u16>,
}

impl DashboardSettings {
    pub(crate) fn resolve(args: &DashboardArgs) -> Self {
        let DashboardArgs { target, port } = args;
        Self {
            target: target.clone(),
            port: *port,
        }
    }
}

/// How many ports one `forward` forwards at the most.
const MAX_FORWARDS: usize = 256;

/// `forward`, resolved.
#[derive(Debug)]
pub(crate) struct ForwardSettings {
    /// A run, or a cluster.
    pub(crate) target: String,
    /// Each port of the head node, in the order given, with the local port asked for it.
    pub(crate) ports: Vec<Forward>,
}

/// One port of the head node to forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Forward {
    pub(crate) remote: u16,
    /// The local port asked for; the remote's own number (or any free one) without it.
    pub(crate) local: Option<u16>,
}

impl ForwardSettings {
    pub(crate) fn resolve(args: &ForwardArgs) -> Result<Self, UsageError> {
        let ForwardArgs { target, ports } = args;
        let mut forwards = Vec::new();
        for spec in ports {
            forwards.extend(forwards_of(spec)?);
        }
        if forwards.len() > MAX_FORWARDS {
            return Err(UsageError::new(format!(
                "{} ports to forward: at most {MAX_FORWARDS} at once (each is a listener of its own)",
                forwards.len()
            ))
            .hint("forward the ports you will use, or run several `rayslurm forward`"));
        }
        Ok(Self {
            target: target.clone(),
            ports: forwards,
        })
    }
}

/// `PORT`, `PORT:LOCAL`, `FIRST-LAST` or `FIRST-LAST:LOCALFIRST-LOCALLAST`, one forward a port.
fn forwards_of(spec: &str) -> Result<Vec<Forward>, UsageError> {
    let wrong = |why: &str| {
        UsageError::new(format!("{} is not a port to forward: {why}", show(spec))).hint(
            "give PORT or PORT:LOCAL (1-65535), or ranges as a task file writes them: 9000-9002 or 9000-9002:19000-19002",
        )
    };
    let (remote, local) = match spec.split_once(':') {
        Some((remote, local)) => (remote, Some(local)),
        None => (spec, None),
    };
    let range = |text: &str, which: &str| {
        port_range::parse(text).ok_or_else(|| {
            wrong(&format!(
                "{which} {} is not a port (1-65535) or a range of them (FIRST-LAST, the first no higher)",
                show(text)
            ))
        })
    };
    let remote = range(remote, "the head's")?;
    let Some(local) = local else {
        return Ok(remote
            .map(|remote| Forward {
                remote,
                local: None,
            })
            .collect());
    };
    let local = range(local, "the local")?;
    if local.len() != remote.len() {
        return Err(wrong(&format!(
            "it forwards {} ports to {}: give as many local ports as ports of the head",
            remote.len(),
            local.len()
        )));
    }
    Ok(remote
        .zip(local)
        .map(|(remote, local)| Forward {
            remote,
            local: Some(local),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forwards(spec: &str) -> Vec<(u16, Option<u16>)> {
        forwards_of(spec)
            .unwrap()
            .into_iter()
            .map(|f| (f.remote, f.local))
            .collect()
    }

    #[test]
    fn each_port_or_range_forwards_to_its_own_number_or_the_local_one_given() {
        assert_eq!(forwards("8080"), [(8080, None)]);
        assert_eq!(forwards("8080:18080"), [(8080, Some(18080))]);
        assert_eq!(
            forwards("9000-9002"),
            [(9000, None), (9001, None), (9002, None)]
        );
        assert_eq!(
            forwards("9000-9001:19000-19001"),
            [(9000, Some(19000)), (9001, Some(19001))]
        );
        let refused = |spec: &str| forwards_of(spec).unwrap_err().to_string();
        assert_eq!(
            refused("http"),
            "`http` is not a port to forward: the head's `http` is not a port (1-65535) or a range of them (FIRST-LAST, the first no higher)"
        );
        assert_eq!(
            refused("8080:x"),
            "`8080:x` is not a port to forward: the local `x` is not a port (1-65535) or a range of them (FIRST-LAST, the first no higher)"
        );
        assert!(refused("0").contains("the head's `0` is not a port"));
        assert!(refused("9002-9000").contains("the head's `9002-9000`"));
        let many = ForwardArgs {
            target: "web".into(),
            ports: vec!["1000-1255".into(), "2000".into()],
        };
        assert_eq!(
            ForwardSettings::resolve(&many).unwrap_err().to_string(),
            "257 ports to forward: at most 256 at once (each is a listener of its own)"
        );
        assert_eq!(
            refused("9000-9002:19000"),
            "`9000-9002:19000` is not a port to forward: it forwards 3 ports to 1: give as many local ports as ports of the head"
        );
    }
}
