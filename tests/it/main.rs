//! The one integration-test binary: CLI tests (with PATH shims for error paths) and
//! end-to-end tests against the local test cluster (`tests/cluster/cluster.sh up`).
//!
//! A CLI test states an invocation and what it must do in one expression, e.g.
//! `rayslurm(["status"]).env(..).expect_status(0).expect_stdout_contains(..).run()`; one file
//! (or folder) a feature.

mod harness;

mod completions;
mod config;
mod config_errors;
mod doc_examples;
mod docs_options;
mod env_file;
mod exec;
mod help;
mod launch;
mod layers;
mod project_trust;
mod python_package;
mod runs;
mod sizes;
mod slurm_spellings;
mod user_namespace;
mod verbose;
mod version;

mod e2e_again;
mod e2e_auth;
mod e2e_bootstrap;
mod e2e_clusters;
mod e2e_containers;
mod e2e_containers_pyxis;
mod e2e_crash;
mod e2e_doc_examples;
mod e2e_elastic;
mod e2e_exec_ranks;
mod e2e_failures;
mod e2e_long_runs;
mod e2e_per_node;
mod e2e_ports;
mod e2e_python;
mod e2e_runs;
mod e2e_setup;
mod e2e_shared;
mod e2e_slurm_calls;
mod e2e_snapshot;
mod e2e_state_path;
mod e2e_task_file;
mod e2e_token_doors;
