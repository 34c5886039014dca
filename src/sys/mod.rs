//! Small system helpers every layer uses: SHA-256 digests ([`digest`]), the one wrapper for external commands ([`process`]),
//! quoting for bash ([`quote`]), files that appear whole or not at all ([`staged_file`]) and
//! whole results on stdout ([`stdout`]).

pub(crate) mod digest;
pub(crate) mod process;
pub(crate) mod pump;
pub(crate) mod quote;
pub(crate) mod staged_file;
pub(crate) mod stdout;
