//! What every command shares: `--help` (snapshots), shell completions and man pages,
//! `--version`, and `-v/--verbose`'s echo of the external commands.

mod completions;
mod help;
mod verbose;
mod version;
