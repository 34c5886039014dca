//! On the login node, what became of a run after `launch`: its record ([`store`]), which
//! records a command-line target means ([`select`]), its state put together from every source
//! ([`status`]), cancelling it ([`cancel`]), the run a new one follows ([`after_chain`]), and following its log to the end ([`follow`],
//! [`log_tail`], [`interrupt`]).

pub(crate) mod after_chain;
pub(crate) mod cancel;
pub(crate) mod follow;
pub(crate) mod interrupt;
pub(crate) mod log_tail;
pub(crate) mod select;
pub(crate) mod status;
pub(crate) mod store;
