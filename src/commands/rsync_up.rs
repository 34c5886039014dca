//! `rayslurm rsync-up CLUSTER SRC DST` (Ray's `ray rsync_up`): a file or directory copied into
//! the cluster's files directory, in its private directory on the shared filesystem, which
//! every node sees; its jobs find it as `$RAYSLURM_CLUSTER_FILES/DST`.

use std::process::ExitCode;

use anyhow::Result;

use crate::clusters::cluster::Cluster;
use crate::clusters::files::{self, FILES_ENV};
use crate::commands::settings::ray_commands::RsyncUpSettings;
use crate::printer::Printer;

pub(crate) fn run(settings: &RsyncUpSettings, printer: &Printer) -> Result<ExitCode> {
    let (_, cluster) = Cluster::open(&settings.cluster, printer)?;
    let placed = files::place(
        &cluster.run_dir,
        &settings.source,
        &settings.target,
        settings.into_dir,
    )?;
    let rel = placed
        .path
        .strip_prefix(files::files_dir(&cluster.run_dir))
        .unwrap_or(&placed.path)
        .display()
        .to_string();
    printer.result(&placed.path.display().to_string());
    printer.info(&format!(
        "copied {} file{} ({:.1} MB) to cluster {}'s files, which every node sees: jobs of the cluster (`exec`, `submit`) find it as ${FILES_ENV}/{rel}",
        placed.files,
        if placed.files == 1 { "" } else { "s" },
        placed.bytes as f64 / f64::from(1 << 20),
        cluster.name(),
    ));
    Ok(ExitCode::SUCCESS)
}
