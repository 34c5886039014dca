//! Which Slurm the login node's clients are (`srun --version`, which asks no daemon), and
//! what rayslurm needs of it: `srun --overlap` (Slurm 20.11) for the steps it starts inside a
//! running allocation. The versions it is tested on are those of docs/slurm-versions.md.

use crate::error::UsageError;
use crate::sys::process::Cmd;

/// A Slurm release, as `MAJOR.MINOR` (Slurm numbers releases by year and month: 23.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Release(pub u32, pub u32);

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:02}", self.0, self.1)
    }
}

/// The oldest Slurm rayslurm runs on: its worker and relay steps are `srun --overlap`.
pub(crate) const OLDEST: Release = Release(20, 11);
/// The oldest and newest releases the end-to-end tests run on (tests/slurm-matrix.sh).
pub(crate) const TESTED: (Release, Release) = (Release(22, 5), Release(26, 5));

/// `slurm 22.05.8`, `slurm-wlm 22.05.8`, `slurm 25.11.7`: the release; `None` for anything else.
pub(crate) fn parse(out: &str) -> Option<Release> {
    let word = out.split_whitespace().nth(1)?;
    let mut parts = word.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some(Release(major, minor))
}

/// What a release means for a launch: `Err` when rayslurm cannot run on it, a note when it is
/// outside the tested range, nothing otherwise.
pub(crate) fn judge(release: Release) -> Result<Option<String>, UsageError> {
    if release < OLDEST {
        return Err(UsageError::new(format!(
            "this cluster's Slurm is {release} (`srun --version`); rayslurm needs Slurm {OLDEST} \
             or newer: it starts its worker steps with `srun --overlap`, which {release} lacks"
        ))
        .hint("ask the site for a newer Slurm, or use a cluster that runs one"));
    }
    let (oldest, newest) = TESTED;
    if release < oldest || release > newest {
        return Ok(Some(format!(
            "this cluster's Slurm is {release}; rayslurm is tested on {oldest} to {newest} \
             (docs/slurm-versions.md)"
        )));
    }
    Ok(None)
}

/// The login node's Slurm release, if `srun --version` says which (srun: every Slurm has
/// it, and it is not the command a submission's tests stand in for).
pub(crate) fn of_clients() -> Option<Release> {
    parse(&Cmd::new("srun").arg("--version").stdout().ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_as_each_slurm_prints_them() {
        assert_eq!(parse("slurm-wlm 22.05.8\n"), Some(Release(22, 5)));
        assert_eq!(parse("slurm 23.11.11\n"), Some(Release(23, 11)));
        assert_eq!(parse("slurm 26.05.3"), Some(Release(26, 5)));
        assert_eq!(parse("4242"), None);
        assert_eq!(parse(""), None);
        assert_eq!(Release(22, 5).to_string(), "22.05");
    }

    #[test]
    fn too_old_is_refused_untested_is_noted() {
        let err = judge(Release(20, 2)).unwrap_err().to_string();
        assert!(
            err.contains("Slurm is 20.02") && err.contains("20.11"),
            "{err}"
        );
        assert!(judge(Release(20, 11)).unwrap().is_some());
        assert_eq!(judge(Release(22, 5)).unwrap(), None);
        assert_eq!(judge(Release(25, 11)).unwrap(), None);
        assert!(judge(Release(27, 5)).unwrap().unwrap().contains("27.05"));
    }
}
