//! Small system helpers every layer uses: the checked walk to the private tree ([`checked_walk`]), the one wrapper for external commands ([`process`]),
//! quoting for bash ([`quote`]), who owns a local TCP socket ([`socket_owner`]), files that appear whole or not at all ([`staged_file`]) and
//! whole results on stdout ([`stdout`]), ports kept from changing hands ([`port_keeper`]), a port or range as task files write it ([`port_range`]), the user's private tree ([`private_tree`]) and
//! SHA-256 digests ([`digest`]), the end of a file ([`file_tail`]), what root looks like inside a user namespace
//! ([`user_namespace`]), and, for tests, how one that cannot run here is skipped ([`test_skip`]).

pub(crate) mod checked_walk;
pub(crate) mod digest;
pub(crate) mod file_tail;
pub(crate) mod port_keeper;
pub(crate) mod port_range;
pub(crate) mod private_tree;
pub(crate) mod process;
pub(crate) mod pump;
pub(crate) mod quote;
pub(crate) mod root_view;
pub(crate) mod socket_owner;
pub(crate) mod staged_file;
pub(crate) mod stdout;
#[cfg(test)]
pub(crate) mod test_skip;
pub(crate) mod tree_copy;
pub(crate) mod user_namespace;
