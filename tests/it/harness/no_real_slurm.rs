//! The CLI tests never reach the real cluster: a test that puts fake commands on PATH
//! ([`Run::shims`](super::Run::shims)) gets, right after its own, a stub of every Slurm client
//! it did not fake. A stub says on stderr that it was not faked, exits 99, and notes the call
//! in the test's shim directory ([`UNFAKED`]); the invocation then fails the test, whatever
//! rayslurm made of the failure. Without them, a fake `sbatch` alone let `srun`, `sinfo` and
//! the rest through to the lab's real Slurm (the suite runs with `SLURM_CONF` set).
//!
//! One call is answered instead: `srun --version`, which every real launch asks to judge the
//! cluster's Slurm (and takes a failure for "unknown"); it says the lab's release.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Every Slurm client: those rayslurm calls (`sbatch`, `srun`, `squeue`, `scontrol`,
/// `scancel`, `sacct`), and the others a change could start calling.
pub const SLURM_CLIENTS: &[&str] = &[
    "sbatch", "srun", "salloc", "sinfo", "squeue", "scontrol", "scancel", "sacct", "sstat",
    "sattach", "sbcast", "sprio", "sshare", "sacctmgr", "sreport", "strigger", "sdiag",
];

/// The file in a test's shim directory where the harness's stubs note each call they took.
pub const UNFAKED: &str = "unfaked-slurm.calls";

/// The variable that tells the stubs where [`UNFAKED`] is.
pub const UNFAKED_VAR: &str = "RSTEST_UNFAKED_SLURM";

/// The directory of the harness's stubs, written once by each test process. Each stub is
/// written beside its place and renamed into it, so that a test process writing them never
/// changes a file that another one runs.
pub(super) fn stubs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-real-slurm");
        let staging = dir.join(format!(".staging-{}", std::process::id()));
        std::fs::create_dir_all(&staging).unwrap();
        for name in SLURM_CLIENTS {
            let answer = if *name == "srun" {
                "if [ \"$*\" = --version ]; then echo 'slurm-wlm 22.05.8'; exit 0; fi\n"
            } else {
                ""
            };
            super::shim(
                &staging,
                name,
                &format!(
                    "{answer}echo \"{name} $*\" >> \"${{{UNFAKED_VAR}:-/dev/null}}\"\n\
                     echo '{name}: not faked in this test (the harness stub of a real Slurm client); \
                     give the test a fake {name}' >&2\nexit 99"
                ),
            );
            std::fs::rename(staging.join(name), dir.join(name)).unwrap();
        }
        let _ = std::fs::remove_dir(&staging);
        dir
    })
}

/// The calls of Slurm clients the test did not fake, as the stubs noted them in `shims`;
/// the file is removed, so that the next invocation starts afresh.
pub(super) fn unfaked_calls(shims: &Path) -> Option<String> {
    let path = shims.join(UNFAKED);
    let calls = std::fs::read_to_string(&path).ok()?;
    let _ = std::fs::remove_file(&path);
    Some(calls)
}

/// Each stub fails loudly and notes its call; `srun --version` alone is answered.
#[test]
fn every_slurm_client_is_stubbed_and_fails_loudly() {
    let note = tempfile::tempdir().unwrap();
    let calls = note.path().join(UNFAKED);
    for name in SLURM_CLIENTS {
        let out = std::process::Command::new(stubs().join(name))
            .args(["--parsable", "x"])
            .env(UNFAKED_VAR, &calls)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(99), "{name}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("not faked in this test"),
            "{name}"
        );
    }
    let noted = unfaked_calls(note.path()).unwrap();
    assert_eq!(noted.lines().count(), SLURM_CLIENTS.len(), "{noted}");
    assert!(noted.contains("sinfo --parsable x\n"), "{noted}");
    let version = std::process::Command::new(stubs().join("srun"))
        .arg("--version")
        .env(UNFAKED_VAR, &calls)
        .output()
        .unwrap();
    assert!(version.status.success());
    assert!(unfaked_calls(note.path()).is_none());
}
