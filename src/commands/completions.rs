//! `rayslurm completions SHELL`: the shell completion script for rayslurm's commands and
//! options (clap_complete), printed for the user to install (README, "Shell completions").

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{self, CompletionsArgs};
use crate::sys::stdout::write_result;

pub(crate) fn run(args: &CompletionsArgs) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(
        args.shell,
        &mut cli::public_command(),
        "rayslurm",
        &mut script,
    );
    write_result(&script)?;
    Ok(ExitCode::SUCCESS)
}
