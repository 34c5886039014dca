//! One module per subcommand, each with `run`; [`settings`] resolves their arguments first, and
//! [`submit`] is the submission `launch` and `up` share (`rayslurm submit` is [`ray_submit`]).

pub(crate) mod again;
pub(crate) mod ask_slurm;
pub(crate) mod attach;
pub(crate) mod bin_copies;
pub(crate) mod call_outcome;
pub(crate) mod cancel;
pub(crate) mod completions;
pub(crate) mod dashboard;
pub(crate) mod down;
pub(crate) mod exec;
pub(crate) mod forward;
pub(crate) mod gpus;
pub(crate) mod launch;
pub(crate) mod logs;
pub(crate) mod man;
pub(crate) mod on_host;
mod on_host_ports;
pub(crate) mod queue;
pub(crate) mod ray_submit;
pub(crate) mod relay;
pub(crate) mod rsync_up;
pub(crate) mod scale;
pub(crate) mod settings;
pub(crate) mod status;
pub(crate) mod submit;
pub(crate) mod task_launch;
pub(crate) mod template;
pub(crate) mod trust;
pub(crate) mod up;
mod worker_type_scripts;
