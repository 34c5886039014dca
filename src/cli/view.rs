//! The command line as users see it in `--help`, man pages and completions: each
//! subcommand's examples at the end of its help, the global options under a heading of their
//! own and only where they do something, and no flag a command refuses.
//!
//! Applied to `Cli::command()` by [`shaped`] wherever a help text is produced (the parser, the
//! man pages, the completion scripts), so the three agree.

/// Each subcommand's examples: 2 to 4 real command lines (a unit test parses every one).
pub(crate) const EXAMPLES: &[(&str, &[&str])] = &[
    (
        "launch",
        &[
            "rayslurm launch --exp-name train --command \"python train.py\" -n 2 --time 2:00:00",
            "rayslurm launch --exp-name ddp --per-node -n 2 --command 'python ddp.py'",
            "rayslurm launch --exp-name big --command \"python f.py\" -N 4 --mem 64GB -p gpu --num-gpus 4",
            "rayslurm launch --exp-name try --command \"python f.py\" --dry-run",
        ],
    ),
    (
        "up",
        &[
            "rayslurm up lab -n 4 --time 8:00:00 --idle-timeout 30m",
            "rayslurm up lab -n 1 --max-nodes 8 --worker-idle-timeout 600",
            "rayslurm up lab -n 2 --dry-run",
            "rayslurm up cluster.yaml   # Ray's cluster YAML: its cluster_name names the cluster",
        ],
    ),
    (
        "exec",
        &[
            "rayslurm exec lab -- python train.py --lr 0.1",
            "rayslurm exec lab --num-gpus 1 --memory 8G --command \"python eval.py > eval.txt\"",
            "rayslurm exec lab --per-node -n 2 -- hostname",
        ],
    ),
    (
        "submit",
        &[
            "rayslurm submit lab train.py --epochs 3",
            "rayslurm submit cluster.yaml eval.py --num-gpus 1",
        ],
    ),
    (
        "rsync-up",
        &[
            "rayslurm rsync-up lab data/ data/",
            "rayslurm rsync-up cluster.yaml config.json conf/config.json",
        ],
    ),
    (
        "attach",
        &[
            "rayslurm attach lab",
            "echo 'ray status' | rayslurm attach lab",
            "rayslurm attach cluster.yaml -- nvidia-smi",
        ],
    ),
    (
        "logs",
        &[
            "rayslurm logs train",
            "rayslurm logs train -f",
            "rayslurm logs lab 3 --tail 50",
        ],
    ),
    (
        "status",
        &["rayslurm status", "rayslurm status train --json"],
    ),
    (
        "cancel",
        &["rayslurm cancel train", "rayslurm cancel lab 3"],
    ),
    (
        "queue",
        &["rayslurm queue lab", "rayslurm queue lab --json"],
    ),
    ("gpus", &["rayslurm gpus", "rayslurm gpus --json"]),
    (
        "scale",
        &[
            "rayslurm scale lab +2",
            "rayslurm scale lab -1",
            "rayslurm scale lab =4 --json",
        ],
    ),
    ("down", &["rayslurm down lab", "rayslurm down cluster.yaml"]),
    (
        "dashboard",
        &[
            "rayslurm dashboard lab",
            "rayslurm dashboard train --port 8266",
        ],
    ),
    (
        "forward",
        &[
            "rayslurm forward web 8080",
            "rayslurm forward web 8080:18080 9000-9002",
        ],
    ),
    (
        "disconnect",
        &["rayslurm --host login.cluster.org disconnect"],
    ),
    (
        "template",
        &[
            "rayslurm template > my.sh.tera",
            "rayslurm launch --exp-name x --command true --template my.sh.tera --dry-run",
        ],
    ),
    (
        "trust",
        &[
            "rayslurm trust ./rayslurm.toml   # shows what it runs and its SHA-256, asks",
            "rayslurm trust ./rayslurm.toml --digest SHA256   # no question: that content only",
            "rayslurm trust --list",
        ],
    ),
    (
        "completions",
        &[
            "rayslurm completions bash > ~/.local/share/bash-completion/completions/rayslurm",
            "rayslurm completions zsh > ~/.zfunc/_rayslurm",
        ],
    ),
    (
        "man",
        &["rayslurm man | man -l -", "rayslurm man launch | man -l -"],
    ),
];

/// The commands that run or follow work on the cluster: what `-q`, `-v` and `--host` do
/// something for.
const ON_THE_CLUSTER: &[&str] = &[
    "launch",
    "submit",
    "rsync-up",
    "attach",
    "logs",
    "status",
    "cancel",
    "up",
    "exec",
    "queue",
    "scale",
    "down",
    "dashboard",
    "forward",
];

/// The global options, and the commands each does something for (lists joined).
const GLOBALS: &[(&str, &[&[&str]])] = &[
    ("quiet", &[ON_THE_CLUSTER, &["trust"]]),
    ("verbose", &[ON_THE_CLUSTER]),
    ("host", &[ON_THE_CLUSTER, &["gpus", "disconnect"]]),
    (
        "via_allocation",
        &[&[
            "logs",
            "cancel",
            "exec",
            "submit",
            "queue",
            "down",
            "dashboard",
        ]],
    ),
];

/// Flags a command shares with another but refuses (with an error that says why).
const REFUSED: &[(&str, &[&str])] = &[("up", &["per_node", "no_ray", "no_prefix"])];

/// The heading of the global options in a subcommand's help.
pub(crate) const GLOBAL_HEADING: &str = "Global options";

/// `Examples:` and the command lines, as help text.
pub(crate) fn examples_text(lines: &[&str]) -> String {
    let mut text = String::from("Examples:");
    for line in lines {
        text.push_str("\n  ");
        text.push_str(line);
    }
    text
}

/// `command` (rayslurm's, not yet built) as users see it.
///
/// A built command must not have its arguments changed (clap's index of flags would point at
/// the wrong ones), so the global options are given to each subcommand here, before clap's
/// build would copy them: hidden where the command ignores them. clap copies a global option
/// only into a subcommand that has none of its name, and still passes its value up.
pub(crate) fn shaped(command: clap::Command) -> clap::Command {
    let globals: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|a| a.is_global_set())
        .cloned()
        .collect();
    command.mut_subcommands(|mut c| {
        let name = c.get_name().to_owned();
        if let Some((_, lines)) = EXAMPLES.iter().find(|(n, _)| *n == name) {
            c = c.after_help(examples_text(lines));
        }
        for global in &globals {
            let id = global.get_id().as_str();
            let used = GLOBALS
                .iter()
                .any(|(g, by)| *g == id && by.iter().any(|list| list.contains(&name.as_str())));
            c = c.arg(global.clone().hide(!used));
        }
        for (_, flags) in REFUSED.iter().filter(|(n, _)| *n == name) {
            for flag in *flags {
                c = c.mut_arg(*flag, |a| a.hide(true));
            }
        }
        c
    })
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::cli::Cli;

    /// Every example parses as rayslurm's command line (up to a pipe, redirection or comment).
    #[test]
    fn every_example_parses() {
        for (name, lines) in EXAMPLES {
            assert!((1..=4).contains(&lines.len()), "{name}");
            for line in *lines {
                let words = shlex::split(line).expect("quoted");
                let end = words
                    .iter()
                    .position(|w| ["|", ">", "#"].contains(&w.as_str()))
                    .unwrap_or(words.len());
                if words[0] != "rayslurm" {
                    continue;
                }
                if let Err(e) = Cli::try_parse_from(&words[..end]) {
                    panic!("{line}: {e}");
                }
            }
        }
    }

    /// The defaults `--help` states are the ones resolution applies.
    #[test]
    fn the_defaults_shown_are_the_defaults() {
        use crate::handoff::cluster::{DEFAULT_READY_TIMEOUT, DEFAULT_STOP_GRACE};
        let command = shaped(Cli::command());
        let launch = command.find_subcommand("launch").unwrap();
        let help = |id: &str| {
            let arg = launch.get_arguments().find(|a| a.get_id() == id).unwrap();
            arg.get_help().unwrap().to_string()
        };
        let shown = format!("[default: {DEFAULT_READY_TIMEOUT}]");
        assert!(help("ready_timeout").contains(&shown));
        assert!(help("stop_grace").contains(&format!("[default: {DEFAULT_STOP_GRACE}]")));
        assert!(help("gpu_directive").contains("[default: gpus-per-task]"));
        use crate::handoff::cluster::{DEFAULT_MAX_PENDING_WORKERS, DEFAULT_WORKER_IDLE_TIMEOUT};
        let up = command.find_subcommand("up").unwrap();
        let help = |id: &str| {
            let arg = up.get_arguments().find(|a| a.get_id() == id).unwrap();
            arg.get_help().unwrap().to_string()
        };
        let shown = format!("[default: {DEFAULT_WORKER_IDLE_TIMEOUT}]");
        assert!(help("worker_idle_timeout").contains(&shown));
        let shown = format!("[default: {DEFAULT_MAX_PENDING_WORKERS}]");
        assert!(help("max_pending_workers").contains(&shown));
    }

    #[test]
    fn every_visible_command_has_examples_and_the_globals_name_real_commands() {
        let command = shaped(Cli::command());
        let public = command
            .get_subcommands()
            .filter(|c| !c.is_hide_set() && c.get_name() != "help");
        for sub in public {
            assert!(
                EXAMPLES.iter().any(|(n, _)| *n == sub.get_name()),
                "{} has no examples",
                sub.get_name()
            );
        }
        for (_, used_by) in GLOBALS {
            for name in used_by.iter().flat_map(|list| list.iter()) {
                assert!(command.find_subcommand(name).is_some(), "{name}");
            }
        }
        for (name, _) in REFUSED {
            assert!(command.find_subcommand(name).is_some(), "{name}");
        }
        let template = command.find_subcommand("template").unwrap();
        assert!(
            template
                .get_arguments()
                .all(|a| a.is_hide_set() || ["help", "version"].contains(&a.get_id().as_str())),
            "template offers a global option"
        );
        let up = command.find_subcommand("up").unwrap();
        let per_node = up.get_arguments().find(|a| a.get_id() == "per_node");
        assert!(per_node.unwrap().is_hide_set());
    }
}
