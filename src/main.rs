//! rayslurm: run Ray (and other multi-node programs) on a Slurm cluster with one command.

mod bootstrap;
mod cli;
mod commands;
mod env_vars;
mod error;
mod handoff;
mod launch;
mod printer;
mod runs;
mod slurm;
mod sys;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::launch::config::{LaunchConfig, Sources};
use crate::printer::Printer;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let printer = Printer::new(cli.quiet);
    match run(cli.command, &printer) {
        Ok(code) => code,
        Err(error) => {
            eprint!("{}", error::report(&error));
            if error::is_usage(&error) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(command: Command, printer: &Printer) -> anyhow::Result<ExitCode> {
    match command {
        Command::Launch(args) => {
            let config = LaunchConfig::resolve(&args, &Sources::load()?)?;
            commands::launch::run(&config, printer)
        }
        Command::Template => Ok(commands::template::run(printer)),
        Command::Bootstrap(args) => bootstrap::run(&args),
        Command::Logs(args) => commands::logs::run(&args, printer),
        Command::Status(args) => commands::status::run(&args, printer),
        Command::Cancel(args) => commands::cancel::run(&args, printer),
    }
}
