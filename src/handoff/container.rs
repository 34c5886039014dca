//! The container image a run's programs run in (`--container-image`), as the launcher resolves
//! it and the bootstrap is told: the image, the mounts, the working directory inside it and the
//! runtime, always named by then. How each runtime runs a program is `containers`'.

use std::path::PathBuf;

use clap::Args;

use crate::containers::{Container, ContainerRuntime, Mount};

/// The image the run's programs run in, and how: resolved by the launcher (the runtime is
/// always named by then), passed to the bootstrap as flags.
#[derive(Debug, Clone, PartialEq, Eq, Default, Args)]
pub(crate) struct ContainerOptions {
    /// Run Ray, the setup and the command inside this image on every node.
    #[arg(long)]
    pub(crate) container_image: Option<String>,
    /// Host paths mounted into the image, `SRC[:DST[:ro]]`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub(crate) container_mounts: Vec<Mount>,
    /// The working directory inside the image (the run's own working directory otherwise).
    #[arg(long)]
    pub(crate) container_workdir: Option<PathBuf>,
    /// The runtime that runs the image.
    #[arg(long, value_enum)]
    pub(crate) container_runtime: Option<ContainerRuntime>,
}

impl ContainerOptions {
    /// The flags that carry these options (none without an image).
    pub(crate) fn to_flags(&self) -> Vec<(&'static str, Option<String>)> {
        let Some(image) = &self.container_image else {
            return Vec::new();
        };
        let mut flags = vec![("--container-image", Some(image.clone()))];
        if !self.container_mounts.is_empty() {
            let mounts: Vec<String> = self.container_mounts.iter().map(Mount::to_string).collect();
            flags.push(("--container-mounts", Some(mounts.join(","))));
        }
        if let Some(dir) = &self.container_workdir {
            flags.push(("--container-workdir", Some(dir.display().to_string())));
        }
        if let Some(runtime) = self.container_runtime {
            flags.push(("--container-runtime", Some(runtime.as_arg().to_owned())));
        }
        flags
    }

    /// The image with its runtime, mounts and working directory, when the run has an image.
    pub(crate) fn container(&self) -> Option<Container<'_>> {
        let image = self.container_image.as_deref()?;
        Some(Container {
            image,
            runtime: self
                .container_runtime
                .unwrap_or_else(ContainerRuntime::first),
            mounts: &self.container_mounts,
            workdir: self.container_workdir.as_deref(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Parse {
        #[command(flatten)]
        container: ContainerOptions,
    }

    #[test]
    fn flags_round_trip() {
        let charliecloud = ContainerOptions {
            container_image: Some("/images/debian.sqsh".into()),
            container_mounts: vec![
                "/opt/venv".parse().unwrap(),
                "/data:/mnt/data:ro".parse().unwrap(),
            ],
            container_workdir: None,
            container_runtime: ContainerRuntime::named("charliecloud"),
        };
        for o in [charliecloud, ContainerOptions::default()] {
            let argv = std::iter::once("x".to_owned()).chain(
                o.to_flags()
                    .into_iter()
                    .flat_map(|(f, v)| std::iter::once(f.to_owned()).chain(v)),
            );
            assert_eq!(Parse::try_parse_from(argv).unwrap().container, o);
        }
    }
}
