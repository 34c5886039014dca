//! On the login node, persistent clusters (`rayslurm up`): which recorded run a cluster name
//! means and what state it is in ([`cluster`]: `Cluster::open` and `connect` are how every
//! cluster command reaches one; [`target`]: `Target::open` is how a command that takes a cluster
//! or a run reads its target), and the jobs submitted to it through Ray's Jobs
//! API, each with a short id and its output kept on the shared filesystem ([`jobs`]); a head's
//! ports forwarded to the login node ([`relay`], [`forwarding`]); an
//! elastic cluster's worker jobs as its head reports them ([`elastic`]); the files
//! `rsync-up` copies for its jobs ([`files`]).

pub(crate) mod cluster;
pub(crate) mod elastic;
pub(crate) mod files;
pub(crate) mod follow;
pub(crate) mod forwarding;
pub(crate) mod jobs;
pub(crate) mod ranks;
pub(crate) mod relay;
pub(crate) mod target;
