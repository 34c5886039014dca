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
    ];
    for (name, args) in cases {
        let ran = rayslurm(*args).case(*name).expect_status(0).run();
        insta::assert_snapshot!(format!("help_{name}"), ran.transcript());
    }
}
