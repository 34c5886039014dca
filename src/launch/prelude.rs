//! What rayslurm puts into every script it writes, whatever the template: right after the
//! `#SBATCH` lines (sbatch reads directives only before the first command), a check that the
//! binary the job is about to run is the very copy `launch` made, by its SHA-256. A user's own
//! `--template` cannot leave it out.

use std::path::Path;

use crate::sys::quote::shell_quote;

/// `script` with the check inserted after its leading comment lines (the `#!` line, comments
/// and `#SBATCH` directives).
pub(crate) fn with_prelude(script: &str, bin: &Path, sha256: &str) -> String {
    // After the last `#SBATCH` line (or the `#!` line) of the leading comment block: the
    // template's own comments that introduce its first commands stay with them.
    let mut at = 0;
    let mut offset = 0;
    for line in script.split_inclusive('\n') {
        let t = line.trim_start();
        if !(t.is_empty() || t.starts_with('#')) {
            break;
        }
        offset += line.len();
        if t.starts_with("#SBATCH") || t.starts_with("#!") {
            at = offset;
        }
    }
    let (head, rest) = script.split_at(at);
    let sep = if head.is_empty() || head.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{head}{sep}{}{rest}", prelude(bin, sha256))
}

fn prelude(bin: &Path, sha256: &str) -> String {
    let bin = shell_quote(&bin.display().to_string());
    format!(
        r#"# Added by rayslurm to every script: run only the binary launch copied (by its SHA-256).
rayslurm_sha256=$(sha256sum < {bin} 2>&1) || rayslurm_sha256="unreadable: $rayslurm_sha256"
if [ "${{rayslurm_sha256%% *}}" != {sha256} ]; then
  echo "rayslurm: "{bin}" on $(hostname) is not the binary rayslurm launch copied (SHA-256 {sha256}, found ${{rayslurm_sha256%% *}}): it was changed or removed after the launch; launch the run again" >&2
  exit 1
fi
unset rayslurm_sha256
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_follows_the_directives_and_precedes_every_command() {
        let script =
            "#!/bin/bash\n# a comment\n#SBATCH --nodes=2\n\n# says hi\necho hi\n#SBATCH --late\n";
        let out = with_prelude(script, Path::new("/s/bin/rayslurm-x"), "ab12");
        let check = out.find("sha256sum").unwrap();
        assert!(out.find("#SBATCH --nodes=2").unwrap() < check);
        assert!(check < out.find("# says hi\necho hi").unwrap());
        assert!(out.starts_with("#!/bin/bash\n"));
        assert!(out.ends_with("echo hi\n#SBATCH --late\n"));
    }

    /// The check runs for real: a matching binary passes, a changed one stops the script.
    #[test]
    fn a_changed_binary_stops_the_script_before_it_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("it's bin");
        std::fs::write(&bin, b"original").unwrap();
        let digest = crate::sys::digest::sha256_hex(b"original");
        let script = with_prelude("#!/bin/bash\necho ran\n", &bin, &digest);
        let run = || {
            std::process::Command::new("bash")
                .arg("-c")
                .arg(&script)
                .output()
                .unwrap()
        };
        let ok = run();
        assert!(ok.status.success());
        assert_eq!(String::from_utf8_lossy(&ok.stdout), "ran\n");
        std::fs::write(&bin, b"planted").unwrap();
        let bad = run();
        assert_eq!(bad.status.code(), Some(1));
        assert!(bad.stdout.is_empty());
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(
            err.contains("is not the binary rayslurm launch copied"),
            "{err}"
        );
        assert!(err.contains(&digest), "{err}");
        std::fs::remove_file(&bin).unwrap();
        assert_eq!(run().status.code(), Some(1), "a removed binary too");
    }
}
