//! What rayslurm puts into every script it writes, whatever the template: right after the
//! `#SBATCH` lines (sbatch reads directives only before the first command), a check that the
//! binary the job is about to run is the very copy `launch` made, by its SHA-256. A user's own
//! `--template` cannot leave it out.
//!
//! The check and the run are the same file because of where it lies, checked on the node
//! first: the copy is the user's and no one else can write it, and every directory from `/`
//! down to it is root's or the user's and writable by no one else (root's sticky ones aside,
//! where only an entry's owner may rename it). Only root and the user can change such a path,
//! so what the digest check read is what the template runs next (and what `srun` starts on
//! the other nodes, which see the same filesystem). The path is the resolved one the launch
//! found through [`crate::sys::checked_walk`]: no link another user could swap is on it.

use std::path::Path;

use crate::sys::quote::shell_quote;

/// `script` with the check inserted after its leading comment lines (the `#!` line, comments
/// and `#SBATCH` directives).
pub(crate) fn with_digest_check(script: &str, bin: &Path, sha256: &str) -> String {
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
    format!("{head}{sep}{}{rest}", check_lines(bin, sha256))
}

fn check_lines(bin: &Path, sha256: &str) -> String {
    let bin = shell_quote(&bin.display().to_string());
    // The ids the user accepted as theirs (RAYSLURM_TRUST_UNVERIFIED_OWNER), as the tree's
    // check at the launch did.
    let accepted: String = crate::sys::private_tree::accepted_owners()
        .iter()
        .map(|id| format!(" {id}"))
        .collect();
    format!(
        r#"# Added by rayslurm to every script: run only the binary launch copied (by its SHA-256), from
# directories no one else can write (each from / down to it root's or yours, none writable by
# others but a root-owned sticky one), so that no one can swap it between the check and the run.
rayslurm_root=0
if [ -r /proc/self/uid_map ]; then
  rayslurm_root=$(awk '$2 == 0 && $3 > 0 {{ print $1; exit }}' /proc/self/uid_map)
  [ -n "$rayslurm_root" ] || rayslurm_root=$(cat /proc/sys/kernel/overflowuid 2>/dev/null || echo 65534)
fi
rayslurm_mine=" $(id -u){accepted} "
rayslurm_path={bin}
while :; do
  rayslurm_stat=$(stat -L -c '%u %a' -- "${{rayslurm_path:-/}}" 2>&1) || {{ echo "rayslurm: cannot check ${{rayslurm_path:-/}} on $(hostname): $rayslurm_stat" >&2; exit 1; }}
  rayslurm_uid=${{rayslurm_stat%% *}}; rayslurm_mode=$((8#${{rayslurm_stat##* }}))
  rayslurm_why=
  if [[ $rayslurm_mine != *" $rayslurm_uid "* ]] && {{ [ "$rayslurm_path" = {bin} ] || [[ " 0 $rayslurm_root " != *" $rayslurm_uid "* ]]; }}; then
    rayslurm_why="belongs to another user"
  elif (( rayslurm_mode & 8#22 )) && ! {{ (( rayslurm_mode & 8#1000 )) && [[ " 0 $rayslurm_root " == *" $rayslurm_uid "* ]]; }}; then
    rayslurm_why="can be written by others"
  fi
  if [ -n "$rayslurm_why" ]; then
    echo "rayslurm: ${{rayslurm_path:-/}} on $(hostname) (owner uid $rayslurm_uid, mode $(printf %04o "$rayslurm_mode")) $rayslurm_why, who could swap the binary between its check and its run; keep RAYSLURM_STATE_DIR where every directory from / is yours or root's and writable by no one else" >&2
    exit 1
  fi
  [ -n "$rayslurm_path" ] || break
  rayslurm_path=${{rayslurm_path%/*}}
done
rayslurm_sha256=$(sha256sum < {bin} 2>&1) || rayslurm_sha256="unreadable: $rayslurm_sha256"
if [ "${{rayslurm_sha256%% *}}" != {sha256} ]; then
  echo "rayslurm: "{bin}" on $(hostname) is not the binary rayslurm launch copied (SHA-256 {sha256}, found ${{rayslurm_sha256%% *}}): it was changed or removed after the launch; launch the run again" >&2
  exit 1
fi
unset rayslurm_sha256 rayslurm_root rayslurm_mine rayslurm_path rayslurm_stat rayslurm_uid rayslurm_mode rayslurm_why
"#,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_follows_the_directives_and_precedes_every_command() {
        let script =
            "#!/bin/bash\n# a comment\n#SBATCH --nodes=2\n\n# says hi\necho hi\n#SBATCH --late\n";
        let out = with_digest_check(script, Path::new("/s/bin/rayslurm-x"), "ab12");
        let check = out.find("sha256sum").unwrap();
        assert!(out.find("#SBATCH --nodes=2").unwrap() < check);
        assert!(check < out.find("# says hi\necho hi").unwrap());
        assert!(out.starts_with("#!/bin/bash\n"));
        assert!(out.ends_with("echo hi\n#SBATCH --late\n"));
    }

    fn run_bash(script: &str) -> std::process::Output {
        std::process::Command::new("bash")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap()
    }

    /// The check runs for real: a matching binary passes, a changed one stops the script.
    #[test]
    fn a_changed_binary_stops_the_script_before_it_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("it's bin");
        std::fs::write(&bin, b"original").unwrap();
        let digest = crate::sys::digest::sha256_hex(b"original");
        let script = with_digest_check("#!/bin/bash\necho ran\n", &bin, &digest);
        let run = || run_bash(&script);
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

    /// The right bytes in a place another user can write are not run either: they could be
    /// swapped between the check and the run.
    #[test]
    fn a_binary_another_user_could_swap_is_not_run() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state dir");
        std::fs::create_dir(&dir).unwrap();
        let bin = dir.join("rayslurm-x");
        std::fs::write(&bin, b"original").unwrap();
        let digest = crate::sys::digest::sha256_hex(b"original");
        let script = with_digest_check("#!/bin/bash\necho ran\n", &bin, &digest);
        let run = || run_bash(&script);
        let chmod = |p: &Path, mode: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        assert_eq!(String::from_utf8_lossy(&run().stdout), "ran\n");
        for (path, mode) in [(&dir, 0o2775), (&bin, 0o664)] {
            chmod(path, mode);
            let bad = run();
            let err = String::from_utf8_lossy(&bad.stderr);
            assert_eq!(bad.status.code(), Some(1), "{err}");
            assert!(bad.stdout.is_empty(), "{err}");
            assert!(
                err.contains(&format!(
                    "rayslurm: {} on {} (owner uid {}, mode {mode:04o}) can be written by others",
                    path.display(),
                    nix::unistd::gethostname().unwrap().to_string_lossy(),
                    nix::unistd::geteuid()
                )),
                "{err}"
            );
            chmod(path, 0o700);
        }
        assert_eq!(String::from_utf8_lossy(&run().stdout), "ran\n");
    }
}
