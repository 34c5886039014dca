//! The contract between the launcher (login node) and the bootstrap (compute nodes): the
//! options the script passes on, the names of a run's files, and the final state the bootstrap
//! writes for the login node to read. Both sides use these types; neither reaches into the other.

pub(crate) mod bootstrap_args;
pub(crate) mod cluster;
pub(crate) mod cluster_info;
pub(crate) mod container;
pub(crate) mod elastic;
pub(crate) mod file_mounts;
pub(crate) mod final_state;
pub(crate) mod job_env;
pub(crate) mod port_held;
pub(crate) mod pyxis_name;
pub(crate) mod root_view;
pub(crate) mod run_files;
pub(crate) mod signal_name;
pub(crate) mod signal_request;
pub(crate) mod worker_types;
