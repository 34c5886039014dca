//! Inside a container that remaps ids (pyxis `--container-remap-root`, here `unshare -r`, which
//! maps the user to root and leaves host root unmapped), root's directories show the overflow
//! id: the private tree is still found safe where it is, and still refused where the group can
//! write. Run as the lab's first member (`rsalice`): root would pass every check.

use std::path::Path;
use std::process::{Command, Output};

use crate::harness::{bin, lab, text, unique_name};

/// `rayslurm launch --dry-run` as `rsalice` inside a new user namespace, with the state
/// directory `state`.
fn dry_run_remapped(state: &Path) -> Output {
    let copy = Path::new("/srv/rayslurm-lab/test-bin").join(unique_name("rayslurm-userns"));
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(bin(), &copy).unwrap();
    let out = Command::new("runuser")
        .args(["-u", "rsalice", "--", "env", "-i", "HOME=/home/rsalice"])
        .arg("PATH=/usr/bin:/bin")
        .arg(format!("RAYSLURM_STATE_DIR={}", state.display()))
        .args(["unshare", "-r", "sh", "-c"])
        .arg("test \"$(id -u)\" = 0 || exit 97; cd /home/rsalice && exec \"$0\" launch --dry-run --exp-name userns --command true")
        .arg(&copy)
        .output()
        .expect("runuser runs");
    let _ = std::fs::remove_file(&copy);
    assert_ne!(
        out.status.code(),
        Some(97),
        "unshare -r did not map the user to root"
    );
    out
}

#[test]
fn a_private_tree_is_safe_inside_a_container_that_remaps_ids_and_a_shared_one_is_not() {
    let Some((_lab, _turn)) = lab("a_private_tree_is_safe_inside_a_container_that_remaps_ids")
    else {
        return;
    };
    let state = Path::new("/home/rsalice").join(unique_name(".userns-state"));
    let out = dry_run_remapped(&state);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("dry run: wrote {}/jobs/userns_", state.display())),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&state);

    // The group's 2775 project directory stays refused inside as well.
    let shared = Path::new("/srv/rayslurm-lab/project");
    let out = dry_run_remapped(&shared.join(unique_name("state")));
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("`{}`", shared.display()))
            && stderr.contains("mode 2775")
            && stderr.contains("can be written by others"),
        "{stderr}"
    );
}
