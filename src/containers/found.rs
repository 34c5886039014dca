//! Which runtime runs a run's image when none is named: the login node's, and only where that
//! is unambiguous. The nodes never guess: the runtime chosen here is written into the script.

use std::path::PathBuf;

use super::ContainerRuntime;
use crate::error::UsageError;

/// The runtimes a node has, with where: Slurm's own (pyxis, in its `srun`) and the wrapping
/// runtimes' programs on PATH.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Found(pub(crate) Vec<(ContainerRuntime, PathBuf)>);

impl Found {
    /// The login node's.
    pub(crate) fn of_login_node() -> Self {
        Self(
            ContainerRuntime::all()
                .iter()
                .filter_map(|r| Some((*r, r.find()?)))
                .collect(),
        )
    }

    /// The one runtime these say: Slurm's own if `srun` has it, else the one wrapping runtime
    /// on PATH (a program that is an earlier one's link, as a `singularity` that is Apptainer's
    /// own, counts as that one); an error that lists what was found when that is none, or
    /// several.
    pub(crate) fn choose(&self) -> Result<ContainerRuntime, UsageError> {
        if let Some((own, _)) = self.0.iter().find(|(r, _)| r.is_slurms_own()) {
            return Ok(*own);
        }
        let same = |a: &PathBuf, b: &PathBuf| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
        let found: Vec<&(ContainerRuntime, PathBuf)> = self
            .0
            .iter()
            .enumerate()
            .filter(|(i, (_, path))| !self.0[..*i].iter().any(|(_, p)| same(p, path)))
            .map(|(_, f)| f)
            .collect();
        let names: Vec<&str> = ContainerRuntime::all().iter().map(|r| r.name()).collect();
        let hint = format!(
            "name the runtime the compute nodes have: --container-runtime {} (or `container_runtime` in a config file)",
            names.join("|")
        );
        match found.as_slice() {
            [(one, _)] => Ok(*one),
            [] => {
                let (own, wrapping): (Vec<_>, Vec<_>) = ContainerRuntime::all()
                    .iter()
                    .partition(|r| r.is_slurms_own());
                let mut none: Vec<String> = own
                    .iter()
                    .map(|r: &&ContainerRuntime| {
                        format!(
                            "`{} --help` lists no --container-image ({})",
                            r.program(),
                            r.name()
                        )
                    })
                    .collect();
                let programs: Vec<String> = wrapping
                    .iter()
                    .map(|r| format!("`{}`", r.program()))
                    .collect();
                none.push(format!("none of {} is on PATH", programs.join(", ")));
                Err(UsageError::new(format!(
                    "--container-image needs a runtime, and this node shows none: {}",
                    none.join(", and ")
                ))
                .hint(hint))
            }
            several => {
                let list: Vec<String> = several
                    .iter()
                    .map(|(r, path)| format!("`{}` ({})", r.program(), path.display()))
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

    fn runtime(name: &str) -> ContainerRuntime {
        ContainerRuntime::named(name).unwrap()
    }

    fn found(on: &[(&str, &str)]) -> Found {
        Found(
            on.iter()
                .map(|(r, p)| (runtime(r), PathBuf::from(p)))
                .collect(),
        )
    }

    #[test]
    fn pyxis_wins_else_the_one_program_on_path() {
        let ch = ("charliecloud", "/usr/bin/ch-run");
        let app = ("apptainer", "/opt/a/bin/apptainer");
        let pyxis = ("pyxis", "/usr/bin/srun");
        assert_eq!(found(&[pyxis, app, ch]).choose().unwrap(), runtime("pyxis"));
        assert_eq!(found(&[ch]).choose().unwrap(), runtime("charliecloud"));
        assert_eq!(found(&[app]).choose().unwrap(), runtime("apptainer"));
        let none = found(&[]).choose().unwrap_err();
        assert_eq!(
            none.message,
            "--container-image needs a runtime, and this node shows none: `srun --help` lists no --container-image (pyxis), and none of `apptainer`, `singularity`, `ch-run` is on PATH"
        );
        assert!(
            none.hint
                .unwrap()
                .contains("--container-runtime pyxis|apptainer|singularity|charliecloud")
        );
        let several = found(&[app, ch]).choose().unwrap_err().message;
        assert!(
            several.contains("`apptainer` (/opt/a/bin/apptainer), `ch-run` (/usr/bin/ch-run)"),
            "{several}"
        );
    }

    #[test]
    fn singularity_that_is_apptainers_link_is_apptainer() {
        let dir = tempfile::tempdir().unwrap();
        let apptainer = dir.path().join("apptainer");
        std::fs::write(&apptainer, "").unwrap();
        let link = dir.path().join("singularity");
        std::os::unix::fs::symlink(&apptainer, &link).unwrap();
        let own = dir.path().join("own-singularity");
        std::fs::write(&own, "").unwrap();
        let linked = Found(vec![
            (runtime("apptainer"), apptainer.clone()),
            (runtime("singularity"), link),
        ]);
        assert_eq!(linked.choose().unwrap(), runtime("apptainer"));
        let two = Found(vec![
            (runtime("apptainer"), apptainer),
            (runtime("singularity"), own),
        ]);
        assert!(two.choose().is_err());
    }
}
