//! A command line taken apart into what was given, option by option, so that `--host` can
//! send it to the login node with some values changed (a laptop's paths for their uploaded
//! copies): each option as clap read it (from the command line or its variable), rebuilt as
//! words the same parser reads back.

use std::ffi::{OsStr, OsString};

use clap::parser::ValueSource;
use clap::{ArgAction, CommandFactory};

use crate::cli::Cli;

/// One option or positional of a command line, with its values as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GivenArg {
    /// clap's id (`workdir`, `file_mount`, `task`).
    pub(crate) id: String,
    /// `--LONG`, or `None` for a positional.
    pub(crate) long: Option<String>,
    /// What follows `--` (a command's words).
    pub(crate) last: bool,
    /// A switch given `count` times (no values).
    pub(crate) count: usize,
    /// Each occurrence's values.
    pub(crate) values: Vec<Vec<OsString>>,
}

/// The subcommand given and its options: `None` without one. An option given twice takes its
/// last value (a task file's flags are put first, then the command line's).
pub(crate) fn given_words(
    argv: &[OsString],
    var: &dyn Fn(&OsStr) -> Option<OsString>,
) -> Result<Option<(String, Vec<GivenArg>)>, clap::Error> {
    let mut command = super::parse::without_blank_env(Cli::command(), &|name| {
        var(name).is_some_and(|v| v.is_empty())
    });
    // A task file's flags come first: the same option typed after them overrides them.
    let names: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    for name in names {
        command = command.mut_subcommand(name, |c| c.args_override_self(true));
    }
    command.build();
    let matches = command.clone().try_get_matches_from(argv)?;
    let Some((name, sub)) = matches.subcommand() else {
        return Ok(None);
    };
    let Some(sub_command) = command.find_subcommand(name) else {
        return Ok(None);
    };
    let mut args: Vec<&clap::Arg> = sub_command.get_arguments().collect();
    // Positionals in their order; options as clap lists them.
    args.sort_by_key(|a| a.get_index().unwrap_or(0));
    let mut given = Vec::new();
    for arg in args {
        let id = arg.get_id().as_str();
        if !matches!(
            sub.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let switch = matches!(
            arg.get_action(),
            ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
        );
        let (count, values) = if switch {
            let count = match arg.get_action() {
                ArgAction::Count => usize::from(sub.get_count(id)),
                ArgAction::SetTrue => usize::from(sub.get_flag(id)),
                _ => usize::from(!sub.get_flag(id)),
            };
            (count, Vec::new())
        } else {
            let values = sub
                .get_raw_occurrences(id)
                .map(|occ| occ.map(|o| o.map(OsStr::to_owned).collect()).collect())
                .unwrap_or_default();
            (0, values)
        };
        given.push(GivenArg {
            id: id.to_owned(),
            long: arg.get_long().map(str::to_owned),
            last: arg.is_last_set(),
            count,
            values,
        });
    }
    Ok(Some((name.to_owned(), given)))
}

/// The words that give `args` to `sub` again: options first (`--long=VALUE`, or `--long`
/// and its values where it takes several), then positionals, then `--` and the last ones.
pub(crate) fn words(sub: &str, args: &[GivenArg]) -> Vec<OsString> {
    let mut options = vec![OsString::from(sub)];
    let mut positionals = Vec::new();
    let mut last = Vec::new();
    for arg in args {
        match &arg.long {
            Some(long) if arg.values.is_empty() => {
                options.extend(std::iter::repeat_n(
                    OsString::from(format!("--{long}")),
                    arg.count,
                ));
            }
            Some(long) => {
                for occurrence in &arg.values {
                    if let [one] = occurrence.as_slice() {
                        let mut word = OsString::from(format!("--{long}="));
                        word.push(one);
                        options.push(word);
                    } else {
                        options.push(OsString::from(format!("--{long}")));
                        options.extend(occurrence.iter().cloned());
                    }
                }
            }
            None if arg.last => last.extend(arg.values.iter().flatten().cloned()),
            None => positionals.extend(arg.values.iter().flatten().cloned()),
        }
    }
    options.extend(positionals);
    if !last.is_empty() {
        options.push(OsString::from("--"));
        options.extend(last);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(words_typed: &[&str]) -> (String, Vec<GivenArg>) {
        let argv: Vec<OsString> = std::iter::once("rayslurm")
            .chain(words_typed.iter().copied())
            .map(OsString::from)
            .collect();
        given_words(&argv, &|_| None).unwrap().unwrap()
    }

    fn text(words: &[OsString]) -> Vec<String> {
        words
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_command_line_is_given_again_as_the_parser_reads_it() {
        let typed = [
            "launch",
            "--exp-name",
            "x",
            "-N",
            "2",
            "--env",
            "A=1",
            "--env=B",
            "--follow",
            "-q",
            "--workdir",
            "./code",
            "--",
            "python",
            "-c",
            "print(1)",
        ];
        let (sub, args) = given(&typed);
        assert_eq!(sub, "launch");
        let again = words(&sub, &args);
        let shown = text(&again);
        assert_eq!(shown[0], "launch");
        for word in [
            "--exp-name=x",
            "--num-nodes=2",
            "--follow",
            "--workdir=./code",
            "--quiet",
        ] {
            assert!(shown.contains(&word.to_owned()), "{word}: {shown:?}");
        }
        let env: Vec<&String> = shown.iter().filter(|w| w.starts_with("--env=")).collect();
        assert_eq!(env, ["--env=A=1", "--env=B"]);
        assert_eq!(shown[shown.len() - 4..], ["--", "python", "-c", "print(1)"]);
        // Read back, the same options with the same values.
        let argv: Vec<OsString> = std::iter::once(OsString::from("rayslurm"))
            .chain(again.iter().cloned())
            .collect();
        let (_, back) = given_words(&argv, &|_| None).unwrap().unwrap();
        let mut back = back;
        let mut args = args;
        back.sort_by(|a, b| a.id.cmp(&b.id));
        args.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(back, args);
    }

    #[test]
    fn positionals_stay_in_their_order_and_the_host_is_among_the_options() {
        let (sub, args) = given(&["--host", "login", "cancel", "mycluster", "3"]);
        assert_eq!(sub, "cancel");
        let ids: Vec<&str> = args.iter().map(|a| a.id.as_str()).collect();
        assert!(ids.contains(&"host"), "{ids:?}");
        let kept: Vec<GivenArg> = args.into_iter().filter(|a| a.id != "host").collect();
        assert_eq!(text(&words(&sub, &kept)), ["cancel", "mycluster", "3"]);
    }
}
