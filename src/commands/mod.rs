//! One module per subcommand, each with `run`.

pub(crate) mod launch;
pub(crate) mod template;
