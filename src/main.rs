//! rayslurm: run Ray (and other multi-node programs) on a Slurm cluster with one command.

mod bootstrap;
mod cancellation;
mod cli;
mod commands;
mod config;
mod elapsed;
mod env_vars;
mod error;
mod final_state;
mod follow;
mod hostlist;
mod interrupt;
mod job_spec;
mod job_status;
mod log_tail;
mod node_binary;
mod printer;
mod process;
mod quote;
mod run_store;
mod script_files;
mod slurm;
mod slurm_query;
mod staged_file;
mod target;
mod template;
mod validate;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::config::{LaunchConfig, Sources};
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
