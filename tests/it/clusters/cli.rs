//! The persistent-cluster commands (`up`, `exec`, `queue`, `down`) and the run commands given a
//! cluster: bad input is refused before anything is submitted.

use crate::runs::fake::Fake;

#[test]
fn cluster_commands_refuse_bad_input_and_submit_nothing() {
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed_cluster("sweep", "102");
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["exec", "swep", "--", "true"],
            &["no cluster named `swep`", "did you mean sweep?"],
        ),
        (&["exec", "sweep"], &["no command to run"]),
        (
            &["exec", "sweep", "--num-gpus", "0", "--", "true"],
            &["--num-gpus 0 is not a positive number"],
        ),
        (
            &["exec", "sweep", "--memory", "lots", "--", "true"],
            &["invalid --memory"],
        ),
        (
            &["exec", "sweep", "--env", "NOEQUALS", "--", "true"],
            &["--env"],
        ),
        (&["queue", "nope"], &["no cluster named `nope`"]),
        (&["down", "nope"], &["no cluster named `nope`"]),
        (
            &["up", "resnet"],
            &["`resnet` is the name of a recorded experiment"],
        ),
        (&["up", "a/b"], &["invalid NAME `a/b`"]),
        (
            &["up", "x", "--per-node"],
            &["--per-node does not go with `up`"],
        ),
        (&["up", "x", "--idle-timeout", "5d"], &["unknown unit"]),
        (
            &["cancel", "sweep"],
            &["`rayslurm down sweep` stops the cluster"],
        ),
        (&["logs", "sweep", "7"], &["cluster `sweep` has no job 7"]),
    ];
    for (args, needles) in cases {
        let mut run = fake
            .run(args.iter().copied())
            .expect_status(2)
            .expect_stdout("");
        for needle in *needles {
            run = run.expect_stderr_contains(needle);
        }
        run.run();
    }
    assert!(fake.calls("sbatch").is_empty(), "nothing submitted");
}
