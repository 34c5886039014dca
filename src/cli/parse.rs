//! The process's arguments and environment into a [`Cli`]: clap, plus two rules for the
//! configuration variables (`env_vars`) that clap alone does not follow. A variable that is
//! set but empty counts as unset (`export RAYSLURM_TIME=` clears a default), and a bad value
//! that came from a variable says so, since the user did not type the flag clap names.

use std::ffi::{OsStr, OsString};

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

use crate::cli::Cli;
use crate::launch::owned_directives;

/// Parses `argv`, with `var` giving the environment's variables; exits (2, or 0 for `--help`)
/// on what clap refuses.
pub(crate) fn parse(argv: Vec<OsString>, var: &dyn Fn(&OsStr) -> Option<OsString>) -> Cli {
    let command = without_blank_env(super::view::shaped(Cli::command()), &|name| {
        var(name).is_some_and(|v| v.is_empty())
    });
    let matches = command
        .clone()
        .try_get_matches_from(&argv)
        .unwrap_or_else(|mut e| {
            if let Some(note) = from_variable(&e, &command, &argv, var).or_else(|| tip(&e, &argv)) {
                e.insert(
                    ContextKind::Suggested,
                    ContextValue::StyledStrs(vec![note.into()]),
                );
            }
            e.exit()
        });
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    cli.from_variables = from_variables(&command, &matches);
    if let (crate::cli::Command::Launch(args), Some(("launch", sub)), Some(launch)) = (
        &mut cli.command,
        matches.subcommand(),
        command.find_subcommand("launch"),
    ) {
        args.given = given(launch, sub);
    }
    cli
}

/// The long names of the options of `command` given on the command line (not from a
/// variable or a default).
fn given(command: &clap::Command, matches: &clap::ArgMatches) -> Vec<String> {
    command
        .get_arguments()
        .filter(|a| {
            matches.value_source(a.get_id().as_str())
                == Some(clap::parser::ValueSource::CommandLine)
        })
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect()
}

/// The options of the subcommand whose value came from their variable: (id, variable).
fn from_variables(command: &clap::Command, matches: &clap::ArgMatches) -> Vec<(String, String)> {
    let Some((name, sub)) = matches.subcommand() else {
        return Vec::new();
    };
    let Some(sub_command) = command.find_subcommand(name) else {
        return Vec::new();
    };
    sub.ids()
        .filter(|id| sub.value_source(id.as_str()) == Some(ValueSource::EnvVariable))
        .filter_map(|id| {
            let arg = sub_command.get_arguments().find(|a| a.get_id() == id)?;
            let var = arg.get_env()?.to_string_lossy().into_owned();
            Some((id.as_str().to_owned(), var))
        })
        .collect()
}

/// Parses `argv` with `inserted` (a task file's flags) put right after the subcommand `sub`:
/// each inserted option is overridden by the same option given after it on the command line;
/// repeatable ones (`--env`) add up.
pub(crate) fn parse_with_inserted(
    argv: &[OsString],
    var: &dyn Fn(&OsStr) -> Option<OsString>,
    sub: &str,
    inserted: &[OsString],
) -> Result<Cli, clap::Error> {
    let at = argv
        .iter()
        .skip(1)
        .position(|a| a == sub)
        .map_or(argv.len(), |i| i + 2);
    let mut full = argv[..at].to_vec();
    full.extend_from_slice(inserted);
    full.extend_from_slice(&argv[at..]);
    let command = without_blank_env(Cli::command(), &|name| {
        var(name).is_some_and(|v| v.is_empty())
    })
    .mut_subcommand(sub, |c| c.args_override_self(true));
    let matches = command.try_get_matches_from(&full)?;
    Cli::from_arg_matches(&matches)
}

/// Whether `sub` has the option `--long`, and if so whether it takes a value (else it is a
/// switch).
pub(crate) fn option_takes_value(sub: &str, long: &str) -> Option<bool> {
    let command = Cli::command();
    let arg = command
        .find_subcommand(sub)?
        .get_arguments()
        .find(|a| a.get_long() == Some(long) && !a.is_hide_set())?;
    Some(arg.get_action().takes_values())
}

/// Checks `words` (one option and its value) as `sub` would take them: clap's message for a
/// value it refuses, without its usage lines.
pub(crate) fn check_option(sub: &str, positional: &str, words: &[OsString]) -> Result<(), String> {
    let mut argv: Vec<OsString> = vec!["rayslurm".into(), sub.into(), positional.into()];
    argv.extend_from_slice(words);
    match Cli::command().try_get_matches_from(&argv) {
        Err(e)
            if !matches!(
                e.kind(),
                ErrorKind::MissingRequiredArgument
                    | ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
            ) =>
        {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            Err(first.trim_start_matches("error: ").to_owned())
        }
        _ => Ok(()),
    }
}

/// `command` without the `env` of options whose variable `is_blank` says is set but empty.
pub(crate) fn without_blank_env(
    command: clap::Command,
    is_blank: &dyn Fn(&OsStr) -> bool,
) -> clap::Command {
    command
        .mut_args(|arg| match arg.get_env() {
            Some(name) if is_blank(name) => arg.env(None::<&'static str>),
            _ => arg,
        })
        .mut_subcommands(|sub| without_blank_env(sub, is_blank))
}

/// For a value clap refused that came from a variable (the flag is not on the command line,
/// and the variable holds the value): a note that names the variable.
fn from_variable(
    error: &clap::Error,
    command: &clap::Command,
    argv: &[OsString],
    var: &dyn Fn(&OsStr) -> Option<OsString>,
) -> Option<String> {
    if !matches!(
        error.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return None;
    }
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    let Some(ContextValue::String(value)) = error.get(ContextKind::InvalidValue) else {
        return None;
    };
    let long = arg.split([' ', '=']).next()?.strip_prefix("--")?;
    let option = find_long(command, long)?;
    let name = option.get_env()?;
    let typed = argv.iter().skip(1).any(|a| {
        let a = a.to_string_lossy();
        a == format!("--{long}")
            || a.starts_with(&format!("--{long}="))
            || option
                .get_short()
                .is_some_and(|s| a.starts_with(&format!("-{s}")))
    });
    let held = var(name).is_some_and(|v| v.to_string_lossy() == *value);
    (held && !typed).then(|| {
        format!(
            "the value comes from the variable {}; fix or unset it",
            name.to_string_lossy()
        )
    })
}

/// A tip for an argument clap does not know: Slurm's name of a rayslurm option (`--job-name`
/// is `--exp-name`), or `exec`'s command typed without the `--` before it.
fn tip(error: &clap::Error, argv: &[OsString]) -> Option<String> {
    if error.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    let name = arg.split('=').next().unwrap_or_default();
    if name.starts_with('-') {
        return owned_directives::instead_of(name)
            .map(|instead| format!("{name} is Slurm's name; rayslurm's is {instead}"));
    }
    let exec = argv.get(1).is_some_and(|a| a == "exec");
    // The command's first word, which clap took for a task file (`exec CLUSTER [TASK.yaml]`).
    let first = argv
        .iter()
        .skip(3)
        .map(|a| a.to_string_lossy())
        .find(|a| !a.starts_with('-'))
        .map_or(arg.clone(), |a| a.into_owned());
    exec.then(|| exec_command_tip(&first))
}

/// `exec`'s tip for a command typed without the `--` before it; `first` is its first word.
pub(crate) fn exec_command_tip(first: &str) -> String {
    format!(
        "put the command after `--`, as in `rayslurm exec CLUSTER -- {first} ...`, or give it as one string with --command"
    )
}

/// The option `--long` of `command` or of one of its subcommands.
fn find_long<'a>(command: &'a clap::Command, long: &str) -> Option<&'a clap::Arg> {
    command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))
        .or_else(|| command.get_subcommands().find_map(|s| find_long(s, long)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env_vars;

    #[test]
    fn an_empty_variable_counts_as_unset() {
        let blank = |name: &OsStr| name == env_vars::PARTITION;
        let command = without_blank_env(Cli::command(), &blank);
        let launch = command.find_subcommand("launch").unwrap();
        let env_of = |id: &str| {
            launch
                .get_arguments()
                .find(|a| a.get_id() == id)
                .unwrap()
                .get_env()
                .map(OsStr::to_owned)
        };
        assert_eq!(env_of("partition"), None);
        assert_eq!(
            env_of("account").as_deref(),
            Some(OsStr::new(env_vars::ACCOUNT))
        );
    }

    fn note(argv: &[&str], vars: &[(&str, &str)]) -> Option<String> {
        let var = |name: &OsStr| {
            vars.iter()
                .find(|(k, _)| OsStr::new(k) == name)
                .map(|(_, v)| OsString::from(v))
        };
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        let command = Cli::command();
        let error = command
            .clone()
            .try_get_matches_from(&argv)
            .expect_err("refused");
        from_variable(&error, &command, &argv, &var)
    }

    /// (A value that does come from a variable is named: `tests/it/config.rs`, where the
    /// variable can be set for the process.)
    #[test]
    fn a_bad_value_typed_on_the_command_line_gets_no_note() {
        let launch = ["rayslurm", "launch", "--exp-name", "x", "--command", "y"];
        let with = |extra: &[&'static str]| {
            let mut v = launch.to_vec();
            v.extend_from_slice(extra);
            v
        };
        // Typed, and the variable holds another value: no note.
        assert_eq!(
            note(
                &with(&["--ready-timeout", "soon"]),
                &[(env_vars::READY_TIMEOUT, "5")]
            ),
            None
        );
        // Typed as `--flag=value`, the variable holding the same: still typed.
        assert_eq!(
            note(
                &with(&["--ready-timeout=soon"]),
                &[(env_vars::READY_TIMEOUT, "soon")]
            ),
            None
        );
        assert_eq!(
            note(
                &with(&["--gpu-directive", "gpus"]),
                &[(env_vars::GPU_DIRECTIVE, "gpus")]
            ),
            None
        );
    }
}
