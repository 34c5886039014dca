//! The arguments of the commands that use a running cluster (`queue`, `scale`, `down`,
//! `dashboard`),
//! resolved: each destructured, so a flag added to `cli` is a compile error here until it is.

use std::time::Duration;

use crate::cli::{DashboardArgs, DownArgs, QueueArgs, ScaleArgs};
use crate::handoff::elastic::ScaleRequest;

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
    /// How long to wait for the head to take the request.
    pub(crate) timeout: Duration,
    pub(crate) json: bool,
}

impl ScaleSettings {
    pub(crate) fn resolve(args: &ScaleArgs) -> Self {
        let ScaleArgs {
            cluster,
            change,
            timeout,
            json,
        } = args;
        Self {
            cluster: cluster.clone(),
            change: *change,
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
