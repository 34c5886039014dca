//! `rayslurm man [COMMAND]`: the manual page (roff, from the same definitions as `--help`, by
//! clap_mangen) of rayslurm or of one of its commands, for `man -l -` or a `man1` directory,
//! with the sections clap has no place for: EXAMPLES, EXIT STATUS and ENVIRONMENT.

use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::view::{EXAMPLES, shaped};
use crate::cli::{Cli, ManArgs};
use crate::env_vars;
use crate::error::{UsageError, show};
use crate::sys::stdout::write_result;

/// What each exit code means (the same for every command).
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Success."),
    (
        "1",
        "The job, Slurm or Ray failed (for `launch --follow` and `exec`: the job failed without an exit code of its own).",
    ),
    (
        "2",
        "Usage error: a bad flag, value, variable or config file; nothing was written or submitted.",
    ),
    (
        "N",
        "Where rayslurm ran the command and followed it to its end (`launch --follow`, `exec` without --detach): the command's own exit code, or 128 + the signal that ended it.",
    ),
];

/// The variables that are not an option's own (those are in OPTIONS, as `[env: ...]`).
const VARIABLES: &[(&str, &str)] = &[
    (
        env_vars::CONFIG,
        "The user config file to read instead of $XDG_CONFIG_HOME/rayslurm/config.toml (else ~/.config/rayslurm/config.toml): an absolute path, of a file that exists; /dev/null reads none.",
    ),
    (
        env_vars::STATE_DIR,
        "rayslurm's private directory (run records, scripts, logs, tokens, the binary the nodes run); default $XDG_STATE_HOME/rayslurm, else ~/.local/state/rayslurm. The compute nodes must see it; a symbolic link on the way is followed only from a directory no one else can write, and runs use the resolved path.",
    ),
    (
        env_vars::RELAY,
        "How a cluster's head is reached: `always` through the allocation (as --via-allocation), `never` only directly (refused where the token would go to a listener rayslurm cannot check: a head on another host); unset: through the allocation, directly only to a head on this host or to an open cluster's.",
    ),
    (
        env_vars::TRUST_UNVERIFIED_OWNER,
        "Numeric user ids (comma-separated) accepted as your own where a shared filesystem cannot show owners (NFS's nobody); anyone mapped to such an id may write to your private directory.",
    ),
    (env_vars::NO_COLOR, "Set: no colour in the output."),
];

pub(crate) fn run(args: &ManArgs) -> Result<ExitCode> {
    let mut command = shaped(Cli::command().disable_help_subcommand(true));
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
    write_result(&page_of(page)?)?;
    Ok(ExitCode::SUCCESS)
}

/// The page of `command` (rayslurm's or a subcommand's, shaped).
fn page_of(command: clap::Command) -> std::io::Result<Vec<u8>> {
    let name = command.get_name().to_owned();
    let sub = name.strip_prefix("rayslurm-").unwrap_or(&name).to_owned();
    let examples = EXAMPLES
        .iter()
        .filter(|(n, _)| name == "rayslurm" || *n == sub)
        .flat_map(|(_, lines)| lines.iter().copied())
        .collect::<Vec<_>>();
    let own_variables: Vec<(String, String)> = command
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| {
            let var = a.get_env()?.to_string_lossy().into_owned();
            Some((var, format!("As --{}.", a.get_long()?)))
        })
        .collect();
    // clap_mangen would put after_help (the examples) in an "EXTRA" section: EXAMPLES instead.
    let man = clap_mangen::Man::new(command.clone().after_help(""));
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if command.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if command.get_subcommands().any(|c| !c.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = String::from(".SH EXAMPLES\n.nf\n");
    for line in &examples {
        roff.push_str(&escape(line));
        roff.push('\n');
    }
    roff.push_str(".fi\n.SH \"EXIT STATUS\"\n");
    for (code, what) in EXIT_STATUS {
        roff.push_str(&format!(".TP\n{}\n{}\n", escape(code), escape(what)));
    }
    roff.push_str(".SH ENVIRONMENT\n");
    let fixed = VARIABLES
        .iter()
        .map(|(v, t)| ((*v).to_owned(), (*t).to_owned()));
    for (var, what) in own_variables.into_iter().chain(fixed) {
        roff.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            escape(&var),
            escape(&what)
        ));
    }
    out.extend_from_slice(roff.as_bytes());
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// Text as one roff line: backslashes and hyphens escaped, a leading `.` or `'` made text.
fn escape(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with(['.', '\'']) {
        format!("\\&{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(name: Option<&str>) -> String {
        let mut command = shaped(Cli::command().disable_help_subcommand(true));
        command.build();
        let command = match name {
            Some(n) => command.find_subcommand(n).unwrap().clone(),
            None => command,
        };
        String::from_utf8(page_of(command).unwrap()).unwrap()
    }

    #[test]
    fn pages_have_examples_exit_status_and_the_environment() {
        let launch = page(Some("launch"));
        for section in [".SH EXAMPLES", ".SH \"EXIT STATUS\"", ".SH ENVIRONMENT"] {
            assert!(launch.contains(section), "{section}");
        }
        assert!(!launch.contains("EXTRA"));
        assert!(launch.contains("rayslurm launch \\-\\-exp\\-name train"));
        assert!(launch.contains("\\fBRAYSLURM_PARTITION\\fR\nAs \\-\\-partition."));
        // The options' group of that name is not taken for the variables.
        assert_eq!(launch.matches(".SH ENVIRONMENT").count(), 1);
        let top = page(None);
        for var in [
            env_vars::CONFIG,
            env_vars::STATE_DIR,
            env_vars::RELAY,
            env_vars::TRUST_UNVERIFIED_OWNER,
        ] {
            assert!(top.contains(&escape(var)), "{var}");
        }
        assert!(top.contains("rayslurm exec lab"));
    }

    #[test]
    fn roff_escapes() {
        assert_eq!(escape("a-b"), "a\\-b");
        assert_eq!(escape(".x"), "\\&.x");
        assert_eq!(escape("a\\b"), "a\\eb");
    }
}
