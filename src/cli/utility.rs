//! The arguments of the commands around the others: `gpus`, `trust`, `completions`, `man`, and the
//! hidden `relay`.

use std::path::PathBuf;

use clap::Args;
use clap_complete::Shell;

#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// The project file, e.g. `./rayslurm.toml`.
    #[arg(value_name = "FILE", required_unless_present = "list")]
    pub(crate) file: Option<PathBuf>,

    /// Forget FILE: its settings that run code are refused again.
    #[arg(long, requires = "file")]
    pub(crate) revoke: bool,

    /// Trust FILE without asking, only if its SHA-256 is SHA256 (as `trust FILE` or
    /// `sha256sum FILE` shows it, once you read it); otherwise nothing is trusted.
    #[arg(
        long,
        value_name = "SHA256",
        requires = "file",
        conflicts_with = "revoke"
    )]
    pub(crate) digest: Option<String>,

    /// List the trusted files.
    #[arg(long, conflicts_with_all = ["file", "revoke"])]
    pub(crate) list: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GpusArgs {
    /// Print JSON for scripts.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: Shell,
}

#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// The command whose page to print, e.g. `launch` (default: rayslurm's own).
    pub(crate) command: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct PortsArgs {
    /// How many runs' ports to choose at once.
    #[arg(long)]
    pub(crate) runs: u32,
}

#[derive(Debug, Args)]
pub(crate) struct RelayArgs {
    /// `HOST:PORT` to connect to.
    #[arg(long)]
    pub(crate) to: String,
}
