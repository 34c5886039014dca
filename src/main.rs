//! rayslurm: run Ray (and other multi-node programs) on a Slurm cluster with one command.
//!
//! The folders are the layers:
//! - `cli/` (clap structs, and the parser of arguments and variables into them), `commands/`
//!   (each command's arguments resolved into its settings, `commands/settings/`, then one module
//!   per subcommand), `printer`, `env_vars` and `error`: the command line on the login node;
//! - `launch/`: a resolved launch to a submitted job (config, validation, job spec, template,
//!   script files, the node-visible copy of this binary);
//! - `runs/`: what became of a run afterwards (records, selection, status, cancel, follow);
//! - `clusters/`: persistent clusters (`up`), opened by name, and the jobs submitted to them;
//! - `slurm/`: every Slurm client and text format;
//! - `ray/`: the Ray clients both sides use (the Jobs API);
//! - `remote/`: from a laptop, the SSH connection to a login node and a command run there;
//! - `containers/`: the container runtimes, one file each, which both sides use;
//! - `handoff/`: the contract between launcher and bootstrap (the bootstrap's arguments, the
//!   cluster options, the environment set inside jobs, a run's file names, its final state);
//! - `bootstrap/`: what runs inside the allocation, on every node;
//! - `sys/`: small system helpers (external commands, quoting, whole-file writes);
//! - `state_dir`: where the user's state lives, which `runs/` and `launch/` share.
//!
//! The dependency rule, held by `tests/it/layers.rs` on every path the source names (in `use`
//! trees or inline): a folder or root file names itself and what its row lists, nothing else;
//! a crate listed (`clap`) is for the rows listing it only. A row for a folder inside another
//! makes it a room: only the file its row gives names it, and only its entries (one name deep);
//! that file holds nothing the rest of its folder names.
//!
//! | folder              | may use                                                              |
//! |---------------------|----------------------------------------------------------------------|
//! | `main.rs`           | every layer                                                          |
//! | `commands/`         | `cli` `clusters` `runs` `launch` `handoff` `containers` `ray` `slurm` `remote` `state_dir` `printer` `env_vars` `sys` `error` `clap` |
//! | `cli/`              | `launch` `handoff` `containers` `env_vars` `clap`                    |
//! | `clusters/`         | `runs` `launch` `handoff` `ray` `slurm` `printer` `env_vars` `sys` `error` |
//! | `runs/`             | `launch` `handoff` `slurm` `state_dir` `printer` `sys` `error`       |
//! | `launch/`           | `handoff` `containers` `slurm` `state_dir` `printer` `env_vars` `sys` `error` |
//! | `bootstrap/`        | `handoff` `containers` `ray` `slurm` `sys` `error`                   |
//! | `bootstrap/head/`   | a room, named only by `bootstrap/mod.rs`                             |
//! | `bootstrap/worker/` | a room, named only by `bootstrap/mod.rs`                             |
//! | `bootstrap/rank.rs` | a room, named only by `bootstrap/mod.rs`                             |
//! | `handoff/`          | `containers` `sys` `error` `clap`                                    |
//! | `containers/`       | `slurm` `sys` `error` `clap`                                         |
//! | `remote/`           | `sys` `error`                                                        |
//! | `ray/`              | `sys` `error`                                                        |
//! | `slurm/`            | `sys` `error`                                                        |
//! | `state_dir.rs`      | `env_vars` `sys` `error`                                             |
//! | `printer.rs`        | `env_vars`                                                           |
//! | `env_vars.rs`       | `sys`                                                                |
//! | `sys/`              | `error`                                                              |
//! | `error.rs`          |                                                                      |

mod bootstrap;
mod cli;
mod clusters;
mod commands;
mod containers;
mod env_vars;
mod error;
mod handoff;
mod launch;
mod printer;
mod ray;
mod remote;
mod runs;
mod slurm;
mod state_dir;
mod sys;

use std::process::ExitCode;

use crate::cli::Command;
use crate::commands::settings::again::AgainSettings;
use crate::commands::settings::clusters::{
    DashboardSettings, DownSettings, ForwardSettings, QueueSettings, ScaleSettings,
};
use crate::commands::settings::ray_commands::{AttachSettings, RsyncUpSettings, SubmitSettings};
use crate::commands::settings::runs::{CancelSettings, LogsSettings, StatusSettings};
use crate::commands::settings::{self, exec::ExecSettings, up::UpSettings};
use crate::launch::config::Sources;
use crate::printer::Printer;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let var = |name: &std::ffi::OsStr| std::env::var_os(name);
    let cli = cli::parse::parse(argv.clone(), &var);
    let printer = Printer::new(cli.quiet);
    let (cli, argv) = match settings::ray_yaml::expand(cli, argv, &var, &printer) {
        Ok(expanded) => expanded,
        Err(error) => {
            eprint!("{}", error::report(&error.into()));
            return ExitCode::from(2);
        }
    };
    let host = match host_of(&cli, &var) {
        Ok(host) => host,
        Err(error) => {
            eprint!("{}", error::report(&error.into()));
            return ExitCode::from(2);
        }
    };
    if let Some(host) = host {
        sys::process::echo_commands(cli.verbose);
        match commands::on_host::run(&argv, &var, &host, &printer) {
            Ok(Some(code)) => return code,
            Ok(None) => {}
            Err(error) => {
                eprint!("{}", error::report(&error));
                return ExitCode::from(if error::is_usage(&error) { 2 } else { 1 });
            }
        }
    }
    let (cli, stages) = match settings::task_file::expand(cli, &argv, &var, &printer) {
        Ok(expanded) => expanded,
        Err(error) => {
            eprint!("{}", error::report(&error.into()));
            return ExitCode::from(2);
        }
    };
    // Inside the allocation nothing is echoed: the script never passes -v, and the job's log
    // is the bootstrap's own account.
    if !matches!(cli.command, Command::Bootstrap(_)) {
        sys::process::echo_commands(cli.verbose);
        clusters::relay::choose(cli.via_allocation);
        if let Some(list) = std::env::var_os(env_vars::TRUST_UNVERIFIED_OWNER) {
            match sys::private_tree::parse_owner_list(&list.to_string_lossy()) {
                Ok(uids) => sys::private_tree::accept_owners(uids),
                Err(why) => {
                    eprintln!("error: {why}\nhint: name numeric user ids, e.g. 65534");
                    return ExitCode::from(2);
                }
            }
        }
    }
    match run(cli.command, stages, cli.from_variables, &printer) {
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

/// `--host`, else `RAYSLURM_HOST`, else the user's config file's `host`, for the commands
/// users type: never inside a job (the bootstrap and the other hidden commands), where the
/// login environment and home are inherited.
fn host_of(
    cli: &cli::Cli,
    var: &dyn Fn(&std::ffi::OsStr) -> Option<std::ffi::OsString>,
) -> Result<Option<String>, error::UsageError> {
    if matches!(
        cli.command,
        Command::Bootstrap(_) | Command::Relay(_) | Command::Ports(_) | Command::RootView(_)
    ) {
        return Ok(None);
    }
    if let Some(host) = &cli.host {
        return Ok(Some(host.clone()));
    }
    match var(std::ffi::OsStr::new(env_vars::HOST)) {
        // Set but empty: here, whatever the config file says (a command run there by --host).
        Some(host) if host.is_empty() => Ok(None),
        Some(host) => Ok(Some(host.to_string_lossy().into_owned())),
        None => launch::config::user_host(),
    }
}

fn run(
    command: Command,
    stages: Vec<settings::task_file::Stage>,
    variables: Vec<(String, String)>,
    printer: &Printer,
) -> anyhow::Result<ExitCode> {
    match command {
        Command::Launch(args) => {
            let sources = Sources::load(printer, variables)?;
            if let Some(again) = AgainSettings::resolve(&args, &sources)? {
                return commands::again::run(&again, printer);
            }
            if !stages.is_empty() {
                let stages = settings::task_file::resolve_stages(&stages, &sources)?;
                return commands::task_launch::run(&stages, printer);
            }
            let config = settings::launch::resolve(&args, &sources)?;
            commands::launch::run(&config, printer)
        }
        Command::Template => Ok(commands::template::run(printer)),
        Command::Bootstrap(args) => bootstrap::run(&args),
        Command::RootView(args) => bootstrap::root_view::run(&args),
        Command::Logs(args) => commands::logs::run(&LogsSettings::resolve(&args), printer),
        Command::Status(args) => commands::status::run(&StatusSettings::resolve(&args), printer),
        Command::Cancel(args) => commands::cancel::run(&CancelSettings::resolve(&args), printer),
        Command::Up(args) => {
            let settings = UpSettings::resolve(&args, &Sources::load(printer, variables)?)?;
            commands::up::run(&settings, printer)
        }
        Command::Exec(args) => commands::exec::run(&ExecSettings::resolve(&args)?, printer),
        Command::Submit(args) => {
            commands::ray_submit::run(&SubmitSettings::resolve(&args)?, printer)
        }
        Command::RsyncUp(args) => {
            commands::rsync_up::run(&RsyncUpSettings::resolve(&args)?, printer)
        }
        Command::Attach(args) => commands::attach::run(&AttachSettings::resolve(&args), printer),
        Command::Queue(args) => commands::queue::run(&QueueSettings::resolve(&args), printer),
        Command::Gpus(args) => commands::gpus::run(args.json, printer),
        Command::Scale(args) => commands::scale::run(&ScaleSettings::resolve(&args), printer),
        Command::Down(args) => commands::down::run(&DownSettings::resolve(&args), printer),
        Command::Dashboard(args) => {
            commands::dashboard::run(&DashboardSettings::resolve(&args), printer)
        }
        Command::Forward(args) => {
            commands::forward::run(&ForwardSettings::resolve(&args)?, printer)
        }
        Command::Relay(args) => commands::relay::run(&args),
        Command::CallOutcome { run, dir } => {
            commands::call_outcome::run(run.as_deref(), dir.as_deref(), printer)
        }
        Command::Ports(args) => Ok(ExitCode::from(bootstrap::ports::print_choices(args.runs))),
        Command::Trust(args) => commands::trust::run(&args, printer),
        Command::Completions(args) => commands::completions::run(&args),
        Command::Disconnect => Err(error::UsageError::new(
            "`disconnect` ends the SSH connection to a login node: give it with --host",
        )
        .hint("rayslurm --host HOST disconnect (or set RAYSLURM_HOST)")
        .into()),
        Command::Man(args) => commands::man::run(&args),
    }
}
