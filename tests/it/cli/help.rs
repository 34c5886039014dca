//! `--help` of rayslurm and of each subcommand, as snapshots: a change of wording is reviewed
//! as a diff.

use crate::harness::rayslurm;

#[test]
fn help_texts() {
    let cases: &[(&str, &[&str])] = &[
        ("rayslurm", &["--help"]),
        ("launch", &["launch", "--help"]),
        ("launch_short", &["launch", "-h"]),
        ("up", &["up", "--help"]),
        ("up_short", &["up", "-h"]),
        ("exec", &["exec", "--help"]),
        ("logs", &["logs", "--help"]),
        ("status", &["status", "--help"]),
        ("cancel", &["cancel", "--help"]),
        ("template", &["template", "--help"]),
        ("trust", &["trust", "--help"]),
        ("queue", &["queue", "--help"]),
        ("scale", &["scale", "--help"]),
        ("down", &["down", "--help"]),
        ("dashboard", &["dashboard", "--help"]),
        ("forward", &["forward", "--help"]),
        ("completions", &["completions", "--help"]),
        ("man", &["man", "--help"]),
        ("exec_short", &["exec", "-h"]),
    ];
    for (name, args) in cases {
        let ran = rayslurm(*args).case(*name).expect_status(0).run();
        insta::assert_snapshot!(format!("help_{name}"), ran.transcript());
    }
}

/// `exec`'s resource flags say what a good value looks like, not the parser's words.
#[test]
fn exec_values_are_explained() {
    for flag in ["--num-cpus", "--num-gpus"] {
        let ran = rayslurm(["exec", "lab", flag, "many", "--", "true"])
            .case(flag)
            .expect_status(2)
            .expect_stderr_contains("is not a number of 0 or more")
            .expect_stderr_lacks("float literal")
            .run();
        insta::assert_snapshot!(
            format!("exec_bad{}", flag.replace('-', "_")),
            ran.transcript()
        );
    }
}

/// The man pages have EXAMPLES, EXIT STATUS and an ENVIRONMENT of variables.
#[test]
fn man_pages_have_examples_exit_status_and_environment() {
    for page in [&["man"][..], &["man", "launch"], &["man", "exec"]] {
        rayslurm(page)
            .expect_status(0)
            .expect_stdout_contains(".SH EXAMPLES")
            .expect_stdout_contains(".SH \"EXIT STATUS\"")
            .expect_stdout_contains(".SH ENVIRONMENT")
            .expect_stdout_contains("RAYSLURM_CONFIG")
            .run();
    }
}
