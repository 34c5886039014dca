//! `rayslurm --host` from a laptop: the lab's part, end to end (`e2e_laptop_lab.rs`): the
//! laptop of `harness/laptop.rs` reaches the login node through the lab's real OpenSSH server,
//! as `rsalice`, with no Slurm, no Ray and files the login node cannot read, and the login
//! node's log counts its authentications; then rayslurm itself across them
//! (`e2e_host.rs`): a Ray run from the laptop's workdir, a task file, a cluster and its
//! dashboard, Ctrl-C, a refused key.

mod cli;
mod e2e_host;
mod e2e_laptop_lab;
