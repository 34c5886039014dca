//! The container runtimes a run's image runs with, one file each ([`pyxis`], [`apptainer`] for
//! Apptainer and SingularityCE, [`charliecloud`]), behind one interface ([`Runtime`]): how the
//! login node finds it, how it spells an image, whether it mounts read-only, where it mounts a
//! run's path, and the command line that runs a program inside the image. A layer both sides
//! use, like `slurm`: the launcher resolves and checks the image with it, the bootstrap runs the
//! run's programs with it; which image this node's programs run in, and pyxis's containers on
//! the node, are the bootstrap's (`bootstrap::in_image`, `bootstrap::enroot`).
//!
//! Adding a runtime is a file here and its line in [`RUNTIMES`].

mod apptainer;
mod charliecloud;
mod found;
mod image;
mod mount;
mod pyxis;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use clap::ValueEnum;
use clap::builder::PossibleValue;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::UsageError;
pub(crate) use found::Found;
pub(crate) use image::{Container, Inside};
pub(crate) use mount::Mount;

/// Every runtime, in the order `--container-runtime` lists them and a login node's are found.
static RUNTIMES: &[&dyn Runtime] = &[
    &pyxis::Pyxis,
    &apptainer::Apptainer::APPTAINER,
    &apptainer::Apptainer::SINGULARITY,
    &charliecloud::Charliecloud,
];

/// What a container runtime knows: one implementation per runtime.
pub(crate) trait Runtime: Sync {
    /// The value as `--container-runtime` takes it.
    fn name(&self) -> &'static str;
    /// What it is, for `--container-runtime`'s help.
    fn about(&self) -> &'static str;
    /// The program that runs the image on a node, as messages name it.
    fn program(&self) -> &'static str;
    /// Where the login node has it, when it does.
    fn find(&self) -> Option<PathBuf>;
    /// Whether it is Slurm's own (pyxis, a plugin of `srun`): found, it is the site's choice
    /// over any program on PATH.
    fn is_slurms_own(&self) -> bool {
        false
    }
    /// A registry or stored image (not a path) as the runtime takes it; `how` says where the
    /// runtime came from, for errors.
    fn image_name(&self, image: &str, how: &str) -> Result<String, UsageError>;
    /// Whether it mounts read-only (`SRC:DST:ro`).
    fn mounts_read_only(&self) -> bool {
        true
    }
    /// Where a run's own `path` is mounted in `image`: the same path, unless the runtime can
    /// mount only at directories the image has.
    fn mount_point(&self, _image: &Path, path: &Path) -> PathBuf {
        path.to_owned()
    }
    /// Whether each program is a Slurm step of its own (pyxis): one that leaves daemons behind
    /// when it exits, as `ray start` does, must then keep its step alive.
    fn runs_as_steps(&self) -> bool {
        false
    }
    /// Whether it refuses to start without `$USER` (which Slurm does not always set).
    fn needs_user(&self) -> bool {
        false
    }
    /// The command line that runs `argv` inside `image`, with what the node adds (`inside`).
    fn command(&self, image: &Container<'_>, inside: &Inside, argv: &[OsString]) -> Vec<OsString>;
}

/// One runtime, as `--container-runtime`, the config files and the bootstrap's flags name it.
#[derive(Clone, Copy)]
pub(crate) struct ContainerRuntime(&'static dyn Runtime);

/// Every runtime as a value, for clap.
static VALUES: LazyLock<Vec<ContainerRuntime>> =
    LazyLock::new(|| RUNTIMES.iter().map(|r| ContainerRuntime(*r)).collect());

impl ContainerRuntime {
    /// The runtime `name` names, as `--container-runtime` takes it.
    pub(crate) fn named(name: &str) -> Option<Self> {
        VALUES.iter().copied().find(|r| r.name() == name)
    }

    /// The first runtime listed (pyxis): a run's image that names none runs with it.
    pub(crate) fn first() -> Self {
        VALUES[0]
    }

    /// Every runtime, in their order.
    pub(crate) fn all() -> &'static [Self] {
        &VALUES
    }

    /// The value as `--container-runtime` takes it.
    pub(crate) fn as_arg(self) -> &'static str {
        self.0.name()
    }
}

impl std::ops::Deref for ContainerRuntime {
    type Target = dyn Runtime;

    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl PartialEq for ContainerRuntime {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for ContainerRuntime {}

impl fmt::Debug for ContainerRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for ContainerRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl ValueEnum for ContainerRuntime {
    fn value_variants<'a>() -> &'a [Self] {
        Self::all()
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(self.about()))
    }
}

impl Serialize for ContainerRuntime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// The runtimes' names, as serde's errors list them.
static NAMES: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| RUNTIMES.iter().map(|r| r.name()).collect());

impl<'de> Deserialize<'de> for ContainerRuntime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Self::named(&name).ok_or_else(|| serde::de::Error::unknown_variant(&name, &NAMES))
    }
}
