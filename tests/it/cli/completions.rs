//! `rayslurm completions SHELL` and `rayslurm man [COMMAND]`: the scripts and pages users
//! install, generated from the same definitions as `--help`.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::harness::rayslurm;

#[test]
fn completions_for_each_shell_offer_the_commands_and_options_and_no_hidden_one() {
    for (shell, opening) in [
        ("bash", "_rayslurm() {"),
        ("zsh", "#compdef rayslurm"),
        ("fish", "# Print an optspec"),
    ] {
        let mut run = rayslurm(["completions", shell])
            .case(shell)
            .expect_status(0)
            .expect_stderr("")
            .expect_stdout_starts_with(opening);
        for word in [
            "launch",
            "status",
            "exec",
            "completions",
            "scale",
            "max-nodes",
            "num-nodes",
            "verbose",
        ] {
            run = run.expect_stdout_contains(word);
        }
        for hidden in ["bootstrap", "relay"] {
            run = run.expect_stdout_lacks(hidden);
        }
        run.run();
    }
}

/// What bash completes after `words`, with the script `rayslurm completions bash` printed.
fn bash_completes(words: &[&str]) -> String {
    let script = rayslurm(["completions", "bash"])
        .expect_status(0)
        .run()
        .stdout;
    let words_q: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source /dev/stdin\nCOMP_WORDS=({})\nCOMP_CWORD={}\n_rayslurm rayslurm '{}' '{}'\necho \"${{COMPREPLY[*]}}\"\n",
        words_q.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let mut bash = Command::new("bash")
        .args(["-c", &program])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    bash.stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = bash.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn the_bash_script_completes_commands_and_options() {
    assert_eq!(bash_completes(&["rayslurm", "la"]), "launch");
    assert_eq!(
        bash_completes(&["rayslurm", "launch", "--num"]),
        "--num-nodes --num-gpus"
    );
    assert_eq!(bash_completes(&["rayslurm", "completions", "fi"]), "fish");
}

#[test]
fn completions_for_an_unknown_shell_exit_2() {
    rayslurm(["completions", "tcsh"])
        .expect_status(2)
        .expect_stderr_contains("possible values: bash")
        .expect_stdout("")
        .run();
}

#[test]
fn man_prints_a_roff_page_of_rayslurm_or_of_a_command() {
    let mut run = rayslurm(["man"])
        .expect_status(0)
        .expect_stdout_starts_with(".ie \\n(.g .ds Aq \\(aq\n")
        .expect_stdout_contains("\n.TH rayslurm 1 ");
    for section in ["NAME", "SYNOPSIS", "OPTIONS", "SUBCOMMANDS", "VERSION"] {
        run = run.expect_stdout_contains(&format!("\n.SH {section}\n"));
    }
    run
        // It lists the commands' pages, and no hidden command.
        .expect_stdout_contains("rayslurm\\-launch(1)")
        .expect_stdout_lacks("bootstrap")
        .run();

    rayslurm(["man", "launch"])
        .expect_status(0)
        .expect_stdout_contains("\n.TH rayslurm-launch 1 ")
        // launch's options, with their variables.
        .expect_stdout_contains("\\-\\-num\\-nodes")
        .expect_stdout_contains("RAYSLURM_PARTITION")
        .run();

    rayslurm(["man", "scale"])
        .expect_status(0)
        .expect_stdout_contains("\n.TH rayslurm-scale 1 ")
        .expect_stdout_contains("rayslurm scale lab +2")
        .run();
}

#[test]
fn man_of_an_unknown_or_hidden_command_exits_2_and_lists_the_pages() {
    for name in ["nope", "bootstrap"] {
        rayslurm(["man", name])
            .expect_status(2)
            .expect_stderr_starts_with(&format!("error: no command named `{name}`"))
            .expect_stderr_contains("pages exist for: launch, ")
            .expect_stdout("")
            .run();
    }
}
