//! A task file's `file_mounts` and the whole command line: whether a destination can be made
//! on a node depends on the image, which the file or the command line may give. Each flag of
//! the file is checked alone (`task_file::resolves`, without the image), so destinations are
//! left out of that check and judged here, once the command line is parsed whole, and refused
//! as `FILE:LINE: file_mounts.DEST: ...` (`up`'s too: a cluster's nodes have no workdir).

use crate::cli::{Cli, Command};
use crate::error::UsageError;
use crate::launch::task_file::{self, TaskFile};

/// `cli` again, if every file mount of `task` has a destination its nodes (or its image) can
/// make.
pub(super) fn judged(cli: Cli, task: &TaskFile) -> Result<Cli, UsageError> {
    match &cli.command {
        Command::Launch(args) => {
            task_file::check_destinations(task, args.container.container_image.is_some(), false)?;
        }
        Command::Up(args) => {
            task_file::check_destinations(task, args.container.container_image.is_some(), true)?;
        }
        _ => {}
    }
    Ok(cli)
}
