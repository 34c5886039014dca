//! Each command's arguments resolved once into what the command takes (as uv's `settings.rs`):
//! below `commands/`, nothing knows clap or `cli`.
//!
//! `launch` and `up` resolve into a [`LaunchConfig`](crate::launch::config::LaunchConfig)
//! (their job and cluster flags alike: [`launch`], [`cluster`]); `exec` into [`exec::ExecSettings`].

mod cluster;
pub(crate) mod exec;
pub(crate) mod launch;
pub(crate) mod up;
