//! Ray's cluster YAML (`rayslurm up cluster.yaml`, docs/clusters.md "From `ray up`"): the
//! file read into `up`'s flags, a cloud's file refused by line, and the commands that take the
//! file for its cluster's name.

mod cli;
mod e2e_from_laptop;
mod e2e_ray_yaml;
mod e2e_two_users;

/// Runs `script` (the `script` command, which gives what it runs a terminal) with a shell's
/// line piped in that prints the terminal it runs on (`terminal: /dev/pts/N`) and exits.
pub(super) fn on_a_terminal(mut script: std::process::Command) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = script
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(b"echo \"terminal: $(tty)\"; exit 0\n")
        .unwrap();
    let out = crate::harness::wait_within(child, std::time::Duration::from_secs(60));
    drop(input);
    out
}
