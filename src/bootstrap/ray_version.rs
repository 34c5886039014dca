//! The oldest Ray rayslurm runs (README, "Requirements"): Ray 2.52, the first with token
//! authentication. A node whose Ray is older is refused before `ray start`, naming both
//! versions, instead of a run that ends `auth-not-enforced`. The version is read from the
//! package's metadata beside the Python that `ray`'s script names: no process, since importing
//! Ray costs seconds of CPU on every node.

use std::path::{Path, PathBuf};

/// The oldest Ray supported.
pub(crate) const OLDEST: Version = Version(2, 52, 0);

/// A Ray release, `MAJOR.MINOR.PATCH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Version(pub(crate) u32, pub(crate) u32, pub(crate) u32);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

impl Version {
    /// `2.60.0`, `2.52.1rc1` (the pre-release part is dropped), `3.0`.
    fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split('.').map(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().ok()
        });
        Some(Self(
            parts.next()??,
            parts.next()??,
            parts.next().flatten().unwrap_or(0),
        ))
    }
}

/// Finds `ray` on PATH and refuses it when it is older than [`OLDEST`].
pub(crate) fn check_on_path(node: &str) -> Result<(), String> {
    let ray = which::which("ray").map_err(|_| format!(
        "`ray` was not found on PATH on node {node}; make --load-env put Ray on PATH on every node (e.g. `source venv/bin/activate`)"
    ))?;
    check(node, &ray)
}

/// Refuses the Ray that the script `ray` runs when it is older than [`OLDEST`]; a Ray whose
/// version cannot be read (an unusual layout) is let through, for the start-up checks to judge.
pub(crate) fn check(node: &str, ray: &Path) -> Result<(), String> {
    match installed(ray) {
        Some(found) if found < OLDEST => Err(format!(
            "Ray {found} on node {node} ({}) is older than Ray {OLDEST}, the oldest rayslurm runs (the first with token authentication); install a newer one on every node (`pip install 'ray[default]>={OLDEST}'`)",
            ray.display()
        )),
        _ => Ok(()),
    }
}

/// The interpreter a script's `#!` line names (for `ray`, the Python that has Ray).
pub(crate) fn interpreter_of(script: &Path) -> Option<PathBuf> {
    let text = std::fs::read(script).ok()?;
    let first = text.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(first).ok()?;
    Some(PathBuf::from(
        line.strip_prefix("#!")?.split_whitespace().next()?,
    ))
}

/// The version of the Ray package beside the Python that `ray`'s `#!` line names.
fn installed(ray: &Path) -> Option<Version> {
    let python = interpreter_of(ray)?;
    let prefix = python.parent()?.parent()?;
    for lib in ["lib", "lib64", "local/lib"] {
        let Ok(pythons) = std::fs::read_dir(prefix.join(lib)) else {
            continue;
        };
        for dir in pythons.flatten() {
            for packages in ["site-packages", "dist-packages"] {
                if let Some(v) = version_in(&dir.path().join(packages)) {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// The version of `ray-VERSION.dist-info` in a packages directory.
fn version_in(packages: &Path) -> Option<Version> {
    std::fs::read_dir(packages).ok()?.flatten().find_map(|e| {
        let name = e.file_name();
        let name = name.to_str()?;
        Version::parse(name.strip_prefix("ray-")?.strip_suffix(".dist-info")?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A venv's layout: `bin/ray` naming `bin/python3`, and Ray's metadata in site-packages.
    fn venv(version: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(
            bin.join("ray"),
            format!("#!{}/python3\nimport sys\n", bin.display()),
        )
        .unwrap();
        let packages = dir.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(packages.join(format!("ray-{version}.dist-info"))).unwrap();
        std::fs::create_dir_all(packages.join("rich-13.0.0.dist-info")).unwrap();
        dir
    }

    #[test]
    fn an_older_ray_is_refused_naming_both_versions() {
        let old = venv("2.49.2");
        let err = check("node1", &old.path().join("bin/ray")).unwrap_err();
        assert!(
            err.contains("Ray 2.49.2 on node node1") && err.contains("older than Ray 2.52.0"),
            "{err}"
        );
        for fine in ["2.52.0", "2.60.0", "3.0.0rc1"] {
            let v = venv(fine);
            assert_eq!(check("node1", &v.path().join("bin/ray")), Ok(()), "{fine}");
        }
        // No metadata where it is looked for: not refused.
        let tmp = tempfile::tempdir().unwrap();
        let ray = tmp.path().join("ray");
        std::fs::write(&ray, "#!/nowhere/bin/python3\n").unwrap();
        assert_eq!(check("node1", &ray), Ok(()));
    }

    #[test]
    fn versions_compare_by_number() {
        assert!(Version::parse("2.9.0").unwrap() < Version::parse("2.52.0").unwrap());
        assert_eq!(Version::parse("2.52.1rc1"), Some(Version(2, 52, 1)));
        assert_eq!(Version::parse("3.0"), Some(Version(3, 0, 0)));
        assert_eq!(Version::parse("x"), None);
    }
}
