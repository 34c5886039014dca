//! Persistent clusters (`up`, `exec`, `queue`, `logs`, `cancel`, `down`): bad input and `exec`
//! against a faked head on the login side, and, end to end, many jobs through Ray's Jobs API,
//! `exec --per-node`'s ranks, and autostop.

mod cli;
mod e2e_clusters;
mod e2e_exec_ranks;
mod exec;
pub(crate) mod lab_cluster;
