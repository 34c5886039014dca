//! Which runtime runs a run's image when none is named: the login node's, and only where that
//! is unambiguous. The nodes never guess: the runtime chosen here is written into the script.

use std::path::PathBuf;

use crate::error::UsageError;
use crate::handoff::container::ContainerRuntime;

/// The runtimes a node has: pyxis in its `srun`, and the wrapping runtimes' programs on PATH.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Runtimes {
    /// `srun --help` lists `--container-image`.
    pub(crate) pyxis: bool,
    /// `apptainer`, `singularity`, `ch-run` found on PATH, with where.
    pub(crate) on_path: Vec<(ContainerRuntime, PathBuf)>,
}

/// What `--container-runtime` takes, for hints.
const NAMES: &str = "pyxis|apptainer|singularity|charliecloud";

impl Runtimes {
    /// The login node's: `srun --help`, and PATH.
    pub(crate) fn of_login_node() -> Self {
        let on_path = [
            ContainerRuntime::Apptainer,
            ContainerRuntime::Singularity,
            ContainerRuntime::Charliecloud,
        ]
        .into_iter()
        .filter_map(|r| Some((r, which::which(r.program()?).ok()?)))
        .collect();
        Self {
            pyxis: crate::slurm::pyxis::srun_has_pyxis(),
            on_path,
        }
    }

    /// The one runtime these say: pyxis if `srun` has it, else the one wrapping runtime on
    /// PATH (a `singularity` that is Apptainer's own link counts as `apptainer`); an error
    /// that lists what was found when that is none, or several.
    pub(crate) fn choose(&self) -> Result<ContainerRuntime, UsageError> {
        if self.pyxis {
            return Ok(ContainerRuntime::Pyxis);
        }
        let same = |a: &PathBuf, b: &PathBuf| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
        let apptainer = self
            .on_path
            .iter()
            .find(|(r, _)| *r == ContainerRuntime::Apptainer);
        let found: Vec<&(ContainerRuntime, PathBuf)> = self
            .on_path
            .iter()
            .filter(|(r, path)| {
                !(*r == ContainerRuntime::Singularity
                    && apptainer.is_some_and(|(_, a)| same(a, path)))
            })
            .collect();
        let hint = format!(
            "name the runtime the compute nodes have: --container-runtime {NAMES} (or `container_runtime` in a config file)"
        );
        match found.as_slice() {
            [(one, _)] => Ok(*one),
            [] => Err(UsageError::new(
                "--container-image needs a runtime, and this node shows none: `srun --help` lists no --container-image (pyxis), and none of `apptainer`, `singularity`, `ch-run` is on PATH",
            )
            .hint(hint)),
            several => {
                let list: Vec<String> = several
                    .iter()
                    .map(|(r, path)| {
                        format!("`{}` ({})", r.program().unwrap_or_default(), path.display())
                    })
                    .collect();
                Err(UsageError::new(format!(
                    "--container-image needs a runtime, and this node has several, so rayslurm cannot tell which the nodes use: {}",
                    list.join(", ")
                ))
                .hint(hint))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(pyxis: bool, on_path: &[(ContainerRuntime, &str)]) -> Runtimes {
        Runtimes {
            pyxis,
            on_path: on_path
                .iter()
                .map(|(r, p)| (*r, PathBuf::from(p)))
                .collect(),
        }
    }

    #[test]
    fn pyxis_wins_else_the_one_program_on_path() {
        use ContainerRuntime::*;
        let ch = (Charliecloud, "/usr/bin/ch-run");
        let app = (Apptainer, "/opt/a/bin/apptainer");
        assert_eq!(found(true, &[ch, app]).choose().unwrap(), Pyxis);
        assert_eq!(found(false, &[ch]).choose().unwrap(), Charliecloud);
        assert_eq!(found(false, &[app]).choose().unwrap(), Apptainer);
        let none = found(false, &[]).choose().unwrap_err();
        assert!(none.message.contains("none of"), "{}", none.message);
        assert!(none.hint.unwrap().contains("--container-runtime"));
        let several = found(false, &[app, ch]).choose().unwrap_err().message;
        assert!(
            several.contains("`apptainer` (/opt/a/bin/apptainer), `ch-run` (/usr/bin/ch-run)"),
            "{several}"
        );
    }

    #[test]
    fn singularity_that_is_apptainers_link_is_apptainer() {
        use ContainerRuntime::*;
        let dir = tempfile::tempdir().unwrap();
        let apptainer = dir.path().join("apptainer");
        std::fs::write(&apptainer, "").unwrap();
        let link = dir.path().join("singularity");
        std::os::unix::fs::symlink(&apptainer, &link).unwrap();
        let own = dir.path().join("own-singularity");
        std::fs::write(&own, "").unwrap();
        let linked = Runtimes {
            pyxis: false,
            on_path: vec![(Apptainer, apptainer.clone()), (Singularity, link)],
        };
        assert_eq!(linked.choose().unwrap(), Apptainer);
        let two = Runtimes {
            pyxis: false,
            on_path: vec![(Apptainer, apptainer), (Singularity, own)],
        };
        assert!(two.choose().is_err());
    }
}
