//! The bootstrap on the nodes, end to end: Ray's start on every node (and a worker's tries
//! when it fails) and the command's exit code and output, the setup before it, the ways a run stops (time limit, scancel, a ready
//! timeout), and the failures it must notice and clean up after (a killed bootstrap, a dead
//! node, a node-local directory).

mod e2e_bootstrap;
pub(crate) mod e2e_crash;
mod e2e_failures;
mod e2e_setup;
mod e2e_stops;
mod e2e_worker_start;
