//! `rayslurm --host` from a laptop: the lab's part, end to end (`e2e_laptop_lab.rs`): the
//! laptop of `harness/laptop.rs` reaches the login node through the lab's real OpenSSH server,
//! as `rsalice`, with no Slurm, no Ray and files the login node cannot read, and the login
//! node's log counts its authentications.

mod e2e_laptop_lab;
