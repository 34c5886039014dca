//! What a run's start-up holds while it runs: the run's arguments and allocation, what it has
//! started so far, the head's IP, its clock and the nodes' setups. The start (`start.rs`)
//! starts the cluster with it, and waits on it (`ready.rs`) until enough nodes have joined.

use std::net::IpAddr;
use std::time::Instant;

use super::setups::Setups;
use super::teardown::Started;
use crate::bootstrap::allocation::Allocation;
use crate::handoff::bootstrap_args::BootstrapArgs;

/// The start-up of a run with Ray (or with `--no-ray`) once its node's IP is known.
pub(super) struct StartUp<'a> {
    pub(super) args: &'a BootstrapArgs,
    pub(super) alloc: &'a Allocation,
    pub(super) started: &'a mut Started,
    pub(super) ip: IpAddr,
    /// When the start-up began, for the times the log gives.
    pub(super) t0: Instant,
    /// The nodes' setups, whose end starts `--ready-timeout`'s clock.
    pub(super) setups: Setups,
}
