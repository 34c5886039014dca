//! The project file, `./rayslurm.toml`: found by itself in the working directory, so possibly
//! written by someone else (a group's project directory is often writable by the whole group).
//!
//! Its site keys (where the job runs and how big it is) are taken from any owner, with a notice
//! that names the file. Its guarded keys ([`guarded_keys`]) run code as the user or weaken the
//! run's security, so they are taken only from a file no one else could have written, or one
//! the user trusted as it is now (`rayslurm trust FILE`, [`crate::launch::config::trust::TrustStore`]). A file that sets
//! guarded keys and is neither is refused, and nothing is submitted.
//!
//! The file is read from one open descriptor, and its owner and mode are that descriptor's:
//! renaming another file into its place between the check and the read changes nothing.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::UsageError;
use crate::launch::config::trust::TrustRecord;
use crate::launch::config::{FileDefaults, parse_config};
use crate::sys::digest::sha256_hex;

/// The name looked for in the working directory.
pub(crate) const NAME: &str = "rayslurm.toml";

/// Who could have written a file: its owner and mode, and its directory's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ownership {
    pub(crate) uid: u32,
    pub(crate) mode: u32,
    pub(crate) dir: PathBuf,
    pub(crate) dir_uid: u32,
    pub(crate) dir_mode: u32,
}

impl Ownership {
    /// Why a user other than `euid` could have written the file (or put another in its place),
    /// or `None` when only `euid` (and root) could: the file is `euid`'s (or root's) with no
    /// group or other write bit, and its directory is `euid`'s or root's, writable by no one else unless
    /// sticky (as ssh's StrictModes checks).
    pub(crate) fn open_to_others(&self, euid: u32) -> Option<String> {
        let mode = |m: u32| format!("{:04o}", m & 0o7777);
        // Root can run code as anyone already: a file of root's is no one else's.
        if self.uid != euid && self.uid != 0 {
            return Some(format!(
                "it is owned by uid {} (you are uid {euid}), mode {}",
                self.uid,
                mode(self.mode)
            ));
        }
        if self.mode & 0o022 != 0 {
            return Some(format!(
                "it is writable by others: mode {}",
                mode(self.mode)
            ));
        }
        let sticky = self.dir_mode & 0o1000 != 0;
        if (self.dir_uid != euid && self.dir_uid != 0) || (self.dir_mode & 0o022 != 0 && !sticky) {
            return Some(format!(
                "its directory `{}` (uid {}, mode {}) lets others put another file in its place",
                self.dir.display(),
                self.dir_uid,
                mode(self.dir_mode)
            ));
        }
        None
    }
}

/// The keys of `defaults` that are set and guarded: taken only from a file the user controls.
///
/// - `load_env` is shell text run as the user on every node;
/// - `template` is the whole job script;
/// - `ray_args` and `ray_head_args` go to `ray start` as the user, which takes options that run
///   code or open the cluster (`--dashboard-host=0.0.0.0`, plugins, `--temp-dir`);
/// - `ray_auth = false` starts Ray without its token: anyone who reaches a node runs code as
///   the user;
/// - `log_dir` decides where the script (with `--env` values), the log, the token and the
///   binary the nodes run go: a directory someone else controls;
/// - `container_image` is every program the run runs; `container_mounts` and
///   `container_workdir` put someone else's files in its paths, or its working directory
///   (where `python train.py` is read) among them.
///
/// The others only describe where and how big the job is, or how long it waits (`partition`,
/// `account`, `qos`, `constraint`, `time`, `gpu_directive`, `gpu_partitions`, `interface`, `ip_family`,
/// `object_store_memory`, `ready_timeout`, `setup_timeout`, `stop_grace`, `signal`, `max_requeues`,
/// `idle_timeout`, `spot_partition`, `spot_qos`; `container_runtime` only says how the site runs images): at worst a job that
/// is refused, waits or ends early. Every field is named here, so that a new key is a compile
/// error until it is put on one side.
pub(crate) fn guarded_keys(defaults: &FileDefaults) -> Vec<&'static str> {
    let FileDefaults {
        partition: _,
        account: _,
        qos: _,
        constraint: _,
        time: _,
        log_dir,
        load_env,
        template,
        gpu_directive: _,
        gpu_partitions: _,
        interface: _,
        ip_family: _,
        object_store_memory: _,
        ray_args,
        ray_head_args,
        ready_timeout: _,
        setup_timeout: _,
        stop_grace: _,
        ray_auth,
        signal: _,
        max_requeues: _,
        idle_timeout: _,
        container_image,
        container_mounts,
        container_workdir,
        container_runtime: _,
        spot_partition: _,
        spot_qos: _,
        origin: _,
        host: _,
    } = defaults;
    [
        ("load_env", load_env.is_some()),
        ("template", template.is_some()),
        ("ray_args", ray_args.is_some()),
        ("ray_head_args", ray_head_args.is_some()),
        ("ray_auth", ray_auth.is_some()),
        ("log_dir", log_dir.is_some()),
        ("container_image", container_image.is_some()),
        ("container_mounts", container_mounts.is_some()),
        ("container_workdir", container_workdir.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect()
}

/// A project file read, and admitted.
#[derive(Debug)]
pub(crate) struct ProjectFile {
    pub(crate) defaults: FileDefaults,
    /// The line that tells the user the file was applied.
    pub(crate) notice: String,
}

/// Reads `dir/rayslurm.toml`, if there is one, and admits it (see [`admit`]).
pub(crate) fn load(
    dir: &Path,
    euid: u32,
    trust: &dyn Fn(&Path) -> anyhow::Result<Option<TrustRecord>>,
) -> Result<Option<ProjectFile>, UsageError> {
    let path = dir.join(NAME);
    let cannot = |e: std::io::Error| {
        UsageError::new(format!("cannot read config file `{}`: {e}", path.display()))
    };
    let mut file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cannot(e)),
    };
    let meta = file.metadata().map_err(cannot)?;
    let mut content = Vec::new();
    file.read_to_end(&mut content).map_err(cannot)?;
    let canonical = path.canonicalize().map_err(cannot)?;
    let parent = canonical.parent().unwrap_or(Path::new("/")).to_owned();
    let dir_meta = std::fs::metadata(&parent).map_err(cannot)?;
    let ownership = Ownership {
        uid: meta.uid(),
        mode: meta.mode(),
        dir: parent,
        dir_uid: dir_meta.uid(),
        dir_mode: dir_meta.mode(),
    };
    let text = String::from_utf8_lossy(&content);
    let defaults = parse_config(&path, &text)?;
    if let Some(host) = &defaults.host {
        // Whoever wrote it would choose where your commands, code and secrets go.
        return Err(UsageError::new(format!(
            "`{}` names a login node (`host = {host:?}`): a project file cannot choose where your commands and code go",
            path.display()
        ))
        .hint("remove `host` from it; put it in your own ~/.config/rayslurm/config.toml, or pass --host"));
    }
    let record = trust(&canonical).map_err(|e| {
        UsageError::new(format!(
            "cannot tell whether you trusted `{}`: {e:#}",
            canonical.display()
        ))
    })?;
    admit(
        &canonical,
        &guarded_keys(&defaults),
        &ownership,
        euid,
        record.as_ref(),
        &sha256_hex(&content),
    )?;
    Ok(Some(ProjectFile {
        defaults,
        notice: format!(
            "note: using settings from `{}` (owned by uid {})",
            path.display(),
            ownership.uid
        ),
    }))
}

/// Whether a project file at `canonical` that sets `guarded` keys may be used: when it sets
/// none, when no one but `euid` could have written it, or when the user trusted this very
/// content (`digest`). Otherwise a usage error that names the file, its owner and mode, the
/// keys, and the fix.
pub(crate) fn admit(
    canonical: &Path,
    guarded: &[&str],
    ownership: &Ownership,
    euid: u32,
    trusted: Option<&TrustRecord>,
    digest: &str,
) -> Result<(), UsageError> {
    if guarded.is_empty() {
        return Ok(());
    }
    let Some(why) = ownership.open_to_others(euid) else {
        return Ok(());
    };
    let keys = guarded
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let file = canonical.display();
    let fix = format!(
        "read it, then run `rayslurm trust {file}` to use it as it is now, or remove those keys from it"
    );
    match trusted {
        Some(record) if record.sha256 == digest => Ok(()),
        Some(record) => Err(UsageError::new(format!(
            "the project file `{file}` changed since you trusted it ({}), and it sets {keys} (settings that run code as you or weaken the run's security): {why}",
            record.trusted_at
        ))
        .hint(fix)),
        None => Err(UsageError::new(format!(
            "the project file `{file}` sets {keys} (settings that run code as you or weaken the run's security), and another user could have written it: {why}"
        ))
        .hint(fix)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: u32 = 1000;

    fn own(uid: u32, mode: u32, dir_uid: u32, dir_mode: u32) -> Ownership {
        Ownership {
            uid,
            mode,
            dir: PathBuf::from("/proj"),
            dir_uid,
            dir_mode,
        }
    }

    #[test]
    fn who_could_have_written_the_file() {
        for (ownership, open) in [
            (own(ME, 0o644, ME, 0o755), false),
            (own(ME, 0o600, ME, 0o700), false),
            (own(ME, 0o644, 0, 0o755), false),
            // /tmp-like: others may create names there, never replace ours.
            (own(ME, 0o644, 0, 0o1777), false),
            (own(ME, 0o664, ME, 0o755), true),
            (own(ME, 0o646, ME, 0o755), true),
            (own(65534, 0o644, ME, 0o755), true),
            (own(0, 0o644, 0, 0o755), false),
            (own(0, 0o664, 0, 0o755), true),
            // A group's project directory: any member may rename ours away.
            (own(ME, 0o644, ME, 0o2775), true),
            (own(ME, 0o644, ME, 0o757), true),
            (own(ME, 0o644, 65534, 0o755), true),
        ] {
            assert_eq!(
                ownership.open_to_others(ME).is_some(),
                open,
                "{ownership:?}"
            );
        }
    }

    fn record(digest: &str) -> TrustRecord {
        TrustRecord {
            path: PathBuf::from("/proj/rayslurm.toml"),
            sha256: digest.to_owned(),
            trusted_at: "2026-01-02T03:04:05Z".to_owned(),
        }
    }

    #[test]
    fn guarded_keys_need_a_private_or_trusted_file() {
        let path = Path::new("/proj/rayslurm.toml");
        let others = own(65534, 0o664, 65534, 0o2775);
        let mine = own(ME, 0o644, ME, 0o755);
        let ok = |guarded: &[&str], o: &Ownership, t: Option<&TrustRecord>| {
            admit(path, guarded, o, ME, t, "d1").is_ok()
        };
        assert!(ok(&[], &others, None), "site keys from anyone");
        assert!(ok(&["load_env"], &mine, None));
        assert!(!ok(&["load_env"], &others, None));
        assert!(ok(&["load_env"], &others, Some(&record("d1"))));
        assert!(!ok(&["load_env"], &others, Some(&record("d0"))));
    }

    #[test]
    fn the_refusal_names_the_file_owner_mode_keys_and_fix() {
        let path = Path::new("/proj/rayslurm.toml");
        let others = own(65534, 0o664, ME, 0o755);
        let err = admit(path, &["load_env", "log_dir"], &others, ME, None, "d").unwrap_err();
        assert_eq!(
            err.message,
            "the project file `/proj/rayslurm.toml` sets `load_env`, `log_dir` (settings that run code as you or weaken the run's security), and another user could have written it: it is owned by uid 65534 (you are uid 1000), mode 0664"
        );
        assert_eq!(
            err.hint.as_deref(),
            Some(
                "read it, then run `rayslurm trust /proj/rayslurm.toml` to use it as it is now, or remove those keys from it"
            )
        );
        let err = admit(path, &["template"], &others, ME, Some(&record("old")), "d")
            .unwrap_err()
            .message;
        assert!(err.contains("changed since you trusted it"), "{err}");
    }

    #[test]
    fn every_guarded_key_is_found() {
        let text = "[launch]\nload_env = \"x\"\ntemplate = \"t\"\nray_args = \"--a=1\"\nray_head_args = \"--b=1\"\nray_auth = false\nlog_dir = \"l\"\npartition = \"p\"\ncontainer_image = \"/i.sqsh\"\ncontainer_mounts = [\"/d\"]\ncontainer_workdir = \"/w\"\n";
        let d = parse_config(Path::new("f"), text).unwrap();
        assert_eq!(
            guarded_keys(&d),
            [
                "load_env",
                "template",
                "ray_args",
                "ray_head_args",
                "ray_auth",
                "log_dir",
                "container_image",
                "container_mounts",
                "container_workdir"
            ]
        );
        let site = "[launch]\npartition = \"p\"\naccount = \"a\"\nqos = \"q\"\ntime = \"1:00\"\nconstraint = \"c\"\ngpu_directive = \"gres\"\ninterface = \"ib0\"\nip_family = \"4\"\nobject_store_memory = 100\nready_timeout = 9\nstop_grace = 5\nsignal = \"USR1\"\nmax_requeues = 2\nidle_timeout = \"30m\"\ncontainer_runtime = \"apptainer\"\n";
        let d = parse_config(Path::new("f"), site).unwrap();
        assert!(guarded_keys(&d).is_empty());
    }
}
