//! Inside the allocation: the same binary, started by the sbatch script on the head node
//! (`rayslurm bootstrap`) and by one `srun` step on every other node (`--worker`).
//!
//! The head starts Ray and, at the same moment, the worker step; each worker starts Ray
//! pointing at the head (Ray waits for the head's GCS by itself) and reports when its node is
//! registered. The command starts as soon as enough nodes have joined, and when it ends every
//! node stops the Ray processes it started (found by a mark in their environment), and no others.
//! It runs on other hosts than the launcher, with another environment and signal model, and
//! uses only `handoff` (its arguments, the environment it sets, the final state it writes),
//! `slurm`, `sys` and `error`.
//!
//! One room per role: `head/` is what only the head node runs (its watchdog included),
//! `worker/` what only a worker node of a Ray run runs, `rank.rs` a rank's task of a per-node
//! run. `user_code/` is the library every role uses for the user's code (its environment, setup
//! and command); `node.rs` and the files beside it are what every node shares. This file only dispatches: it alone names the
//! roles' entries, and the roles never name each other.

mod allocation;
mod byte_lines;
mod enroot;
mod file_mounts;
mod head;
mod heartbeat;
mod in_image;
mod kept_logs;
mod marked;
mod net;
mod node;
pub(crate) mod ports;
mod protocol;
mod rank;
mod ray_auth;
mod ray_node;
mod ray_version;
pub(crate) mod root_view;
mod signals;
mod user_code;
mod workdir;
mod worker;

use std::collections::HashMap;
use std::process::ExitCode;

use anyhow::Result;

use crate::bootstrap::allocation::Allocation;
use crate::handoff::bootstrap_args::BootstrapArgs;

/// Runs this node's role: the head's watchdog, a per-node rank's task, a worker (of the head's
/// own allocation, or an elastic cluster's worker job), or the head.
pub(crate) fn run(args: &BootstrapArgs) -> Result<ExitCode> {
    if let Some(list) = &args.trust_unverified_owner {
        crate::sys::private_tree::accept_owners(
            crate::sys::private_tree::parse_owner_list(list).map_err(anyhow::Error::msg)?,
        );
    }
    let env: HashMap<String, String> = std::env::vars().collect();
    // An array's task: a run of its own, with its own files (the one place that knows it).
    let task = env.get(crate::slurm::env::SLURM_ARRAY_TASK_ID);
    let args = &args
        .of_array_task(task.map(String::as_str))
        .map_err(anyhow::Error::msg)?;
    let alloc = Allocation::from_env(&env, args.requested_gpus)?;
    let args = &in_image::named(args, &alloc.job_id, alloc.restart_count)?;
    in_image::init(
        &args.cluster.container,
        args.run_dir.as_deref(),
        alloc.gpus_on_node > 0,
        &alloc.node,
        &alloc.job_id,
        args.pyxis_container.as_ref(),
    );
    if args.watchdog {
        return Ok(exit_code(head::watchdog(args, &alloc)));
    }
    signals::install()?;
    let code = if args.worker && args.cluster.program.per_node {
        rank::run(args, &alloc, &env)
    } else if args.worker {
        worker::run(args, &alloc, &env)
    } else if let Some(head) = env.get(crate::handoff::elastic::ELASTIC_WORKER) {
        // The run's script, submitted by an elastic cluster's head as a worker job.
        worker::run_elastic(args, &alloc, head)
    } else {
        head::run(args, &alloc)
    };
    Ok(exit_code(code))
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}
