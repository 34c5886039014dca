//! Whether the login node's `srun` has pyxis, Slurm's container plugin: its `srun --help`
//! then lists `--container-image` among the plugins' options (asking no daemon).

use crate::sys::process::Cmd;

/// Whether `srun --help` lists pyxis's `--container-image`; `false` when srun is missing or
/// fails.
pub(crate) fn srun_has_pyxis() -> bool {
    Cmd::new("srun").arg("--help").output().is_ok_and(|out| {
        lists_container_image(&String::from_utf8_lossy(&out.stdout))
            || lists_container_image(&String::from_utf8_lossy(&out.stderr))
    })
}

/// Whether a `srun --help` text has a line for `--container-image` (pyxis's, not Slurm's own
/// `--container` or `--container-id`).
fn lists_container_image(help: &str) -> bool {
    help.lines().any(|l| {
        l.trim_start()
            .strip_prefix("--container-image")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['=', ' ', '\t']))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyxis_is_its_help_line_not_slurms_own_container_options() {
        let pyxis = "Options provided by plugins:\n      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH\n                              [pyxis] the image to use for the container\n";
        assert!(lists_container_image(pyxis));
        let slurm = "      --container=PATH        Path to OCI container bundle\n      --container-id=ID       OCI container ID\n";
        assert!(!lists_container_image(slurm));
        assert!(!lists_container_image(""));
    }
}
