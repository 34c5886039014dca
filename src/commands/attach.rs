//! `rayslurm attach CLUSTER [-- CMD]` (Ray's `ray attach`): a shell on the cluster's head node,
//! inside its allocation (`srun --overlap --jobid`), with a terminal (`--pty`) when this is
//! one, without one otherwise so that a script can pipe commands into it; `-- CMD` runs one
//! command there instead. The exit code is the shell's (the command's). The shell finds the
//! cluster's files (`rsync-up`) at `$RAYSLURM_CLUSTER_FILES`, as the cluster's jobs do.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Result;

use crate::clusters::cluster::{Cluster, State};
use crate::clusters::files::{self, FILES_ENV};
use crate::commands::settings::ray_commands::AttachSettings;
use crate::error::{UsageError, show};
use crate::printer::Printer;
use crate::sys::process::{Cmd, exit_code_of};

pub(crate) fn run(settings: &AttachSettings, printer: &Printer) -> Result<ExitCode> {
    let (_, cluster) = Cluster::open(&settings.cluster, printer)?;
    let name = cluster.name().to_owned();
    let info = match cluster.state(&cluster.status(printer)?)? {
        State::Up(info) => info,
        State::Starting | State::Pending(_) => {
            return Err(
                UsageError::new(format!("cluster {} is not up yet", show(&name)))
                    .hint(format!(
                        "wait for it: `rayslurm queue {name}` shows when it is"
                    ))
                    .into(),
            );
        }
        State::Down(how) => {
            return Err(
                UsageError::new(format!("cluster {} is down ({how})", show(&name)))
                    .hint(format!("start it again with `rayslurm up {name} ...`"))
                    .into(),
            );
        }
    };
    let tty = settings.command.is_none() && std::io::stdin().is_terminal();
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| s.starts_with('/'))
        .unwrap_or_else(|| "/bin/bash".to_owned());
    let files = files::files_dir(&cluster.run_dir);
    let mut srun = Cmd::new("srun").env(FILES_ENV, &files).args([
        "--overlap".to_owned(),
        format!("--jobid={}", info.job_id),
        format!("--nodelist={}", info.head_node),
        "--nodes=1".to_owned(),
        "--ntasks=1".to_owned(),
        "--quiet".to_owned(),
        "--job-name=rayslurm-attach".to_owned(),
    ]);
    if tty {
        srun = srun.arg("--pty");
    }
    srun = match &settings.command {
        Some(command) => srun.args(["bash", "-c", command.as_str()]),
        None => srun.arg(&shell),
    };
    if tty {
        printer.info(&format!(
            "a shell on {} (the head of cluster {name}); `exit` leaves it",
            info.head_node
        ));
    }
    let status = srun.command().status().map_err(|e| srun.spawn_error(e))?;
    Ok(ExitCode::from(
        u8::try_from(exit_code_of(status)).unwrap_or(1),
    ))
}
