//! The user's code as every node runs it, whatever its role (head, worker, a per-node rank):
//! the rank environment ([`env`]) and SkyPilot's task variables ([`skypilot`]), the node's
//! setup ([`setup`]) and the command itself ([`command`]). A library the roles share, not a
//! role.

pub(crate) mod command;
pub(crate) mod env;
pub(crate) mod setup;
pub(crate) mod skypilot;
