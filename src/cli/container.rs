//! `launch`'s and `up`'s container flags, in pyxis's own spellings: the image every program of
//! the run (Ray, the setup, the command) runs in on the nodes, and how. Resolved with the config
//! files into `handoff::container::ContainerOptions` (`commands::settings::container`); the runtimes
//! themselves are `containers`.

use std::path::PathBuf;

use clap::Args;

use super::heading;
use crate::containers::{ContainerRuntime, Mount};
use crate::env_vars;

#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ContainerArgs {
    /// Run Ray, the setup and the command in this image (e.g. `/shared/torch.sqsh`).
    ///
    /// On every node; rayslurm itself stays outside. A path (from `/`, `./`, `../`, or a file
    /// that exists here) must exist, and is made absolute; put it where every node sees it. A
    /// registry image as the runtime takes it (pyxis `ubuntu:24.04` or
    /// `nvcr.io#nvidia/pytorch:24.05-py3`, Apptainer `docker://ubuntu:24.04`);
    /// `docker://IMAGE` is given to pyxis in its own spelling.
    #[arg(value_name = "IMAGE", long, env = env_vars::CONTAINER_IMAGE, help_heading = heading::CONTAINER)]
    pub(crate) container_image: Option<String>,

    /// Host paths mounted in the image, e.g. `/data:/data:ro` (comma-separated).
    ///
    /// Absolute paths, DST being SRC when left out. The run's own directory, Ray's temp
    /// directory and the working directory are mounted at their own paths without asking.
    #[arg(
        value_name = "SRC[:DST[:ro]]",
        long,
        value_delimiter = ',',
        value_parser = clap::value_parser!(Mount),
        env = env_vars::CONTAINER_MOUNTS,
        help_heading = heading::CONTAINER
    )]
    pub(crate) container_mounts: Vec<Mount>,

    /// The working directory inside the image, e.g. `/workspace`.
    ///
    /// An absolute path; the run's own working directory (mounted at its own path) otherwise.
    #[arg(value_name = "DIR", long, env = env_vars::CONTAINER_WORKDIR, help_heading = heading::CONTAINER)]
    pub(crate) container_workdir: Option<PathBuf>,

    /// What runs the image [default: the one this node has]
    ///
    /// pyxis when `srun --help` lists --container-image, else the one of `apptainer`,
    /// `singularity` and `ch-run` on PATH; with none, or several, name it here.
    #[arg(value_name = "RUNTIME", long, value_enum, env = env_vars::CONTAINER_RUNTIME, help_heading = heading::CONTAINER)]
    pub(crate) container_runtime: Option<ContainerRuntime>,
}
