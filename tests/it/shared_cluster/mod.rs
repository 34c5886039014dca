//! rayslurm on a cluster shared with other users (docs/security.md): the project file another
//! member could have written, and, end to end, each attack of the security model tried by the
//! lab's second user `rsbob` against runs of `rsalice` (`two_users.rs`): the shared project
//! directory, the state path's links, the token's doors, Ray's auth on every port, ports taken
//! by another user, a forward of a run's ports, and containers that remap ids.

mod e2e_auth;
mod e2e_forward;
mod e2e_planted_mounts;
mod e2e_ports;
mod e2e_remapped_ids;
mod e2e_shared;
mod e2e_state_path;
mod e2e_token_doors;
mod planted_temp_roots;
mod project_trust;
pub(crate) mod two_users;
