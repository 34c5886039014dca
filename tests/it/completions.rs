//! `rayslurm completions SHELL` and `rayslurm man [COMMAND]`: the scripts and pages users
//! install, generated from the same definitions as `--help`.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::harness::{rayslurm, text};

#[test]
fn completions_for_each_shell_offer_the_commands_and_options_and_no_hidden_one() {
    for (shell, opening) in [
        ("bash", "_rayslurm() {"),
        ("zsh", "#compdef rayslurm"),
        ("fish", "# Print an optspec"),
    ] {
        let out = rayslurm(["completions", shell]).output();
        let (script, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{shell}: {stderr}");
        assert_eq!(stderr, "", "{shell}");
        assert!(script.starts_with(opening), "{shell}: {script:.200}");
        for word in [
            "launch",
            "status",
            "exec",
            "completions",
            "num-nodes",
            "verbose",
        ] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
        for hidden in ["bootstrap", "relay"] {
            assert!(!script.contains(hidden), "{shell} offers {hidden}");
        }
    }
}

/// What bash completes after `words`, with the script `rayslurm completions bash` printed.
fn bash_completes(words: &[&str]) -> String {
    let script = text(&rayslurm(["completions", "bash"]).output()).0;
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
    let out = rayslurm(["completions", "tcsh"]).output();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("possible values: bash"), "{stderr}");
    assert_eq!(stdout, "");
}

#[test]
fn man_prints_a_roff_page_of_rayslurm_or_of_a_command() {
    let out = rayslurm(["man"]).output();
    let (page, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(page.starts_with(".ie \\n(.g .ds Aq \\(aq\n"), "{page:.200}");
    assert!(page.contains("\n.TH rayslurm 1 "), "{page:.300}");
    for section in ["NAME", "SYNOPSIS", "OPTIONS", "SUBCOMMANDS", "VERSION"] {
        assert!(page.contains(&format!("\n.SH {section}\n")), "{section}");
    }
    assert!(
        page.contains("rayslurm\\-launch(1)"),
        "lists the commands' pages"
    );
    assert!(!page.contains("bootstrap"), "no hidden command");

    let out = rayslurm(["man", "launch"]).output();
    let (page, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(page.contains("\n.TH rayslurm-launch 1 "), "{page:.300}");
    assert!(page.contains("\\-\\-num\\-nodes"), "launch's options");
    assert!(page.contains("RAYSLURM_PARTITION"), "with their variables");
}

#[test]
fn man_of_an_unknown_or_hidden_command_exits_2_and_lists_the_pages() {
    for name in ["nope", "bootstrap"] {
        let out = rayslurm(["man", name]).output();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: no command named `{name}`")),
            "{stderr}"
        );
        assert!(stderr.contains("pages exist for: launch, "), "{stderr}");
        assert_eq!(stdout, "");
    }
}
