//! Each command's arguments resolved once into what the command takes (as uv's `settings.rs`):
//! below `commands/`, nothing knows clap or `cli`.
//!
//! `launch` and `up` resolve into a [`LaunchConfig`](crate::launch::config::LaunchConfig):
//! their job flags alike ([`job`]), and a cluster built in one piece from typed groups, each
//! resolved whole by one function: what runs, the nodes and Ray ([`cluster`]), the image
//! ([`container`]), a long run's ([`long_run`], `launch`'s), serving and growth (`up`'s);
//! `up` into [`up::UpSettings`]; `exec` into [`exec::ExecSettings`]; `launch --again` into [`again::AgainSettings`]; the others into the settings of
//! [`runs`] and [`clusters`]. A task file named on the command line is turned into flags first
//! ([`task_file`]), and so is Ray's cluster YAML ([`ray_yaml`]).

pub(crate) mod again;
mod array;
mod cluster;
pub(crate) mod clusters;
mod container;
pub(crate) mod exec;
mod file_mounts;
mod job;
pub(crate) mod launch;
mod long_run;
pub(crate) mod ray_commands;
pub(crate) mod ray_yaml;
pub(crate) mod runs;
pub(crate) mod task_file;
mod task_site;
mod task_stages;
pub(crate) mod up;
mod worker_types;
