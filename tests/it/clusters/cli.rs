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
            &["up", "x", "--file-mount", "data=."],
            &[
                "--file-mount `data=",
                "a cluster's nodes have no workdir for the relative destination `data`",
                "write `~/data` (under your home on each node)",
            ],
        ),
        (
            &["up", "x", "--file-mount", "/etc/x=."],
            &["`/etc/x` is the node's own system directory"],
        ),
        (
            &["up", "x", "--file-mount", "/data=./no-such-dir"],
            &["the source", "no-such-dir` does not exist"],
        ),
        (
            &["cancel", "sweep"],
            &["`rayslurm down sweep` stops the cluster"],
        ),
        (&["logs", "sweep", "7"], &["cluster `sweep` has no job 7"]),
    ];
    refused_each(&fake, cases);
    assert!(fake.calls("sbatch").is_empty(), "nothing submitted");
}

/// A file mount outside home and /tmp is bound into an image or shown in a node's private
/// view: a worker type in an image the head has not would not see it, so `up` refuses it,
/// submitting nothing. (The site's srun has pyxis: `--help` names its options.)
#[test]
fn up_refuses_a_file_mount_a_worker_type_in_another_image_would_not_see() {
    let fake = Fake::new();
    fake.shim(
        "srun",
        "echo '      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH'",
    );
    refused_each(
        &fake,
        &[(
            &[
                "up",
                "x",
                "--max-nodes",
                "3",
                "--file-mount",
                "/data=.",
                "--worker-type",
                "boxed: --container-image docker://img --max-workers 2",
            ],
            &[
                "worker type boxed runs in a container image and the head does not, so its nodes would not see `/data` where the head's do",
            ],
        )],
    );
    assert!(fake.calls("sbatch").is_empty(), "nothing submitted");
}

/// `forward`: an unknown name, a port that is neither a number nor a range, and a run that
/// is not running (pending, or ended) are refused, saying which and why, with exit 2.
#[test]
fn forward_refuses_bad_input() {
    use crate::runs::fake::says;
    let fake = Fake::new();
    fake.seed("resnet", "101", 1, None);
    fake.seed("queued", "102", 2, None);
    let (ended, pending) = (fake.line("101", "COMPLETED"), fake.line("102", "PENDING"));
    fake.shim(
        "squeue",
        &format!("case \"$*\" in *101*) {ended};; *) {pending};; esac"),
    );
    fake.shim(
        "scontrol",
        &says("JobId=101 JobState=COMPLETED ExitCode=0:0"),
    );
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["forward", "nope", "8080"],
            &["no run has the experiment name or job id `nope`"],
        ),
        (
            &["forward", "resnet", "http"],
            &[
                "`http` is not a port to forward: the head's `http` is not a port (1-65535)",
                "9000-9002:19000-19002",
            ],
        ),
        (
            &["forward", "resnet", "8080:70000"],
            &["the local `70000` is not a port"],
        ),
        (
            &["forward", "resnet", "9000-9002:9000"],
            &["it forwards 3 ports to 1"],
        ),
        (&["forward", "resnet"], &["PORT[:LOCAL]"]),
        (
            &["forward", "resnet", "8080"],
            &["run `resnet` has no head node to forward from any more: it has ended (COMPLETED)"],
        ),
        (
            &["forward", "queued", "8080"],
            &[
                "run `queued` has no head node to forward from yet: its allocation is PENDING (Resources)",
                "forward once it runs",
            ],
        ),
    ];
    refused_each(&fake, cases);
    assert!(fake.calls("srun").is_empty(), "no relay step started");
}

/// Each command line of `cases` exits 2 with nothing on stdout and its words on stderr.
fn refused_each(fake: &Fake, cases: &[(&[&str], &[&str])]) {
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
}
