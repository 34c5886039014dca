//! User templates (`--template`): a parse error names the line, and the documented context
//! reaches the template; `rayslurm template` prints the built-in one.

use super::{launch_in, visible_files};
use crate::harness::rayslurm;

#[test]
fn a_template_that_does_not_parse_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("mine.sh.tera");
    std::fs::write(
        &t,
        "#!/bin/bash\n#SBATCH --nodes={{ num_nodes }}\n{% if load_env %}\nnever closed\n",
    )
    .unwrap();
    let args = [
        "--dry-run",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--template",
    ];
    // A missing value is a usage error.
    launch_in(dir.path(), &args).expect_status(2).run();
    launch_in(dir.path(), &args)
        .arg(&t)
        .expect_status(2)
        .expect_stderr_contains("mine.sh.tera")
        // It names the line.
        .expect_stderr_contains("line 5, column 1")
        .run();
    assert_eq!(visible_files(dir.path()), ["mine.sh.tera"]);
}

#[test]
fn a_user_template_gets_the_documented_context() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("mine.sh.tera");
    std::fs::write(&t, "#!/bin/bash\n{% for d in directives %}#SBATCH {{ d }}\n{% endfor %}echo {{ exp_name }} {{ num_nodes }} {{ command | shell_quote }} {{ log_path }}\n").unwrap();
    let args = [
        "--dry-run",
        "--exp-name",
        "mine",
        "-n",
        "2",
        "--command",
        "a b",
    ];
    launch_in(dir.path(), &args)
        .arg("--template")
        .arg(&t)
        .expect_status(0)
        .expect_stdout_contains("#SBATCH --nodes=2")
        .expect_stdout_contains("echo mine 2 'a b' ")
        .run();
}

#[test]
fn template_command_prints_the_builtin() {
    rayslurm(["template"])
        .expect_status(0)
        .expect_stdout_contains("{% for directive in directives")
        .run();
}
