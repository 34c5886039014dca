//! The check every script makes of the binary copy the nodes run: a copy that does not start
//! (an old glibc, another CPU, any other error) says why in one line.

use std::path::Path;

use super::launch_in;
use crate::harness::text;

/// Runs a dry-run script whose binary copy was replaced by `fake` and returns the script's
/// exit code and stderr: what a node prints when the copy is there but does not start.
fn script_with_broken_copy(fake: &[u8]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--dry-run", "--exp-name", "b", "--command", "true"];
    let script = launch_in(dir.path(), &args).expect_status(0).run().stdout;
    // The copy the script names (a dry run makes none), as the node would find it: a binary
    // that is the one launch copied (its digest matches) and still does not start.
    let bin = regex::Regex::new(r"(?m)^rayslurm_bin='?([^'\n]+?)'?$")
        .unwrap()
        .captures(&script)
        .expect("the script names its binary")[1]
        .to_owned();
    std::fs::create_dir_all(Path::new(&bin).parent().unwrap()).unwrap();
    std::fs::write(&bin, fake).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let digest = regex::Regex::new(r"!= ([0-9a-f]{64}) ")
        .unwrap()
        .captures(&script)
        .expect("the script checks a digest")[1]
        .to_owned();
    let script = script.replace(&digest, &sha256(fake));
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    (out.status.code(), text(&out).1)
}

/// The message an old glibc's loader prints, from a stand-in that prints it.
#[test]
fn a_copy_the_nodes_glibc_cannot_load_says_so() {
    let fake = "#!/bin/bash\necho \"$0: /lib64/libc.so.6: version \\`GLIBC_2.34' not found (required by $0)\" >&2\nexit 1\n";
    let (code, stderr) = script_with_broken_copy(fake.as_bytes());
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("rayslurm: cannot run "), "{stderr}");
    assert!(
        stderr.contains(
            "the node's glibc is older than this build needs: /lib64/libc.so.6: version `GLIBC_2.34' not found"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("glibc 2.17"), "{stderr}");
}

#[test]
fn a_copy_for_another_cpu_says_so() {
    // An ELF header alone, for a machine that is not this one.
    let (machine, arch) = match std::env::consts::ARCH {
        "aarch64" => (62u8, "x86_64"),
        _ => (183u8, "aarch64"),
    };
    let mut elf = vec![0u8; 64];
    elf[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    elf[16] = 2;
    elf[18] = machine;
    let (code, stderr) = script_with_broken_copy(&elf);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(&format!(
            "it is built for {arch}, the node is {}",
            std::env::consts::ARCH
        )),
        "{stderr}"
    );
}

#[test]
fn a_copy_that_fails_otherwise_shows_the_first_line_of_its_error() {
    let fake = "#!/bin/bash\necho 'first line' >&2\necho 'second line' >&2\nexit 3\n";
    let (code, stderr) = script_with_broken_copy(fake.as_bytes());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.ends_with(": first line (exit code 3)\n"), "{stderr}");
    assert!(!stderr.contains("second line"), "{stderr}");
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
