//! One module per subcommand, each with `run`.

pub(crate) mod cancel;
pub(crate) mod launch;
pub(crate) mod logs;
pub(crate) mod status;
pub(crate) mod template;
