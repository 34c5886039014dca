//! The variables the command line reads (clap's `env`), checked against those set inside jobs:
//! the configuration variables of `env_vars` never reach the bootstrap.

use std::collections::BTreeSet;

use clap::CommandFactory;

use super::Cli;

/// Every variable an option of `command` (or of its subcommands) reads, with the option.
fn env_of(command: &clap::Command, found: &mut BTreeSet<(String, String)>) {
    for arg in command.get_arguments() {
        if let Some(name) = arg.get_env() {
            let option = format!("{} --{}", command.get_name(), arg.get_id());
            found.insert((name.to_string_lossy().into_owned(), option));
        }
    }
    for sub in command.get_subcommands() {
        env_of(sub, found);
    }
}

fn all_env() -> BTreeSet<(String, String)> {
    let mut command = Cli::command();
    command.build();
    let mut found = BTreeSet::new();
    env_of(&command, &mut found);
    found
}

/// The `RAYSLURM_*` names `handoff/job_env.rs` declares: the variables set inside jobs
/// (read from the source, so a variable added there later is checked too).
fn set_inside_jobs() -> BTreeSet<String> {
    let source = include_str!("../handoff/job_env.rs");
    let re = regex::Regex::new(r#""(RAYSLURM_[A-Z0-9_]+)""#).unwrap();
    re.captures_iter(source).map(|c| c[1].to_owned()).collect()
}

#[test]
fn configuration_variables_never_share_a_name_with_the_variables_set_inside_jobs() {
    let inside = set_inside_jobs();
    assert!(inside.contains("RAYSLURM_NODE_RANK"), "{inside:?}");
    for (name, option) in all_env() {
        assert!(name.starts_with("RAYSLURM_"), "{option} reads {name}");
        assert!(
            !inside.contains(&name),
            "{option} reads {name}, set inside jobs"
        );
    }
}

/// Jobs inherit the login environment, so a variable read by the bootstrap would change
/// what runs on the nodes behind the script's back: only `launch` and `up` read any.
#[test]
fn only_launch_and_up_read_variables_and_the_bootstrap_none() {
    let readers: BTreeSet<String> = all_env()
        .into_iter()
        .map(|(_, option)| option.split(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(
        readers,
        BTreeSet::from(["launch".to_owned(), "up".to_owned()])
    );
}
