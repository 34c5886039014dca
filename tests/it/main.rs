//! The one integration-test binary: one folder a feature, its CLI tests (with PATH shims for
//! error paths) and its end-to-end tests against the local test cluster
//! (`tests/cluster/cluster.sh up`) side by side. An end-to-end test's file is named `e2e_*.rs`,
//! so that the filter `e2e_` picks (or `--skip e2e_` leaves out) exactly the tests that need the
//! cluster; docs/testing.md says how to run and extend them.
//!
//! A CLI test states an invocation and what it must do in one expression, e.g.
//! `rayslurm(["status"]).env(..).expect_status(0).expect_stdout_contains(..).run()`.

mod harness;

mod bootstrap;
mod cli;
mod clusters;
mod config;
mod containers;
mod doc_examples;
mod elastic;
mod gpus;
mod laptop;
mod launch;
mod long_runs;
mod per_node;
mod python_api;
mod ray_yaml;
mod runs;
mod scale;
mod shared_cluster;
mod task_file;

mod layers;
mod python_package;
mod python_typing;
mod sizes;
