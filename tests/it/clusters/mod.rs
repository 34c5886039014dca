//! Persistent clusters (`up`, `exec`, `queue`, `logs`, `cancel`, `down`): bad input and `exec`
//! against a faked head on the login side, and, end to end, many jobs through Ray's Jobs API,
//! `exec --per-node`'s ranks, and autostop; and `forward`, a run's ports on this machine.

mod cli;
mod e2e_clusters;
mod e2e_exec_ranks;
pub(crate) mod e2e_forward;
mod exec;
pub(crate) mod lab_cluster;
