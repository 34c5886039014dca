//! `rayslurm man [COMMAND]`: the manual page (roff, from the same definitions as `--help`, by
//! clap_mangen) of rayslurm or of one of its commands, for `man -l -` or a `man1` directory.

use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, ManArgs};
use crate::error::{UsageError, show};
use crate::sys::stdout::write_result;

pub(crate) fn run(args: &ManArgs) -> Result<ExitCode> {
    let mut command = Cli::command().disable_help_subcommand(true);
    // Names the subcommands `rayslurm-launch`, ... as their pages are named.
    command.build();
    let page = match &args.command {
        None => command,
        Some(name) => {
            let visible: Vec<&clap::Command> = command
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .collect();
            match visible.iter().find(|c| c.get_name() == name) {
                Some(sub) => (*sub).clone(),
                None => {
                    let names: Vec<&str> = visible.iter().map(|c| c.get_name()).collect();
                    return Err(UsageError::new(format!("no command named {}", show(name)))
                        .hint(format!("pages exist for: {}", names.join(", ")))
                        .into());
                }
            }
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    write_result(&out)?;
    Ok(ExitCode::SUCCESS)
}
