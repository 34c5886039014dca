//! CLI tests of where `launch` takes its settings from, seen in the script `launch --dry-run`
//! writes: the command line, the environment (`RAYSLURM_*`), the project file
//! (`./rayslurm.toml`) and the user file (`$RAYSLURM_CONFIG`, else
//! `$XDG_CONFIG_HOME/rayslurm/config.toml`, else `~/.config/rayslurm/config.toml`), in that
//! order, for every key a file takes (each has its variable); that a config file or a
//! variable that cannot be used is a usage error that writes nothing, and that refusals name
//! where the value came from (`errors.rs`); and `--env-file` (`env_file.rs`).

use crate::harness::{Run, rayslurm};

mod keys;
mod world;

mod env_file;
mod errors;
mod files;
mod precedence;
mod variables;

/// `launch --dry-run` of a run that does nothing: the script shows the settings resolved.
fn dry_run() -> Run {
    rayslurm([
        "launch",
        "--dry-run",
        "--exp-name",
        "x",
        "--command",
        "true",
    ])
}
