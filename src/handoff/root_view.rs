//! `rayslurm root-view` (hidden), between the bootstrap that writes its command line and the
//! process that runs it: on a node, a program run in a private view of the node's filesystem
//! that shows each `--bind SRC DST` too (`sys::root_view`), for a run's file mounts that no
//! user can make on the node itself.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct RootViewArgs {
    /// An empty directory of the user's own, that the view is built on.
    #[arg(long)]
    pub(crate) base: PathBuf,
    /// What the view shows where: SRC at DST (repeated).
    #[arg(long, num_args = 2, value_names = ["SRC", "DST"])]
    pub(crate) bind: Vec<PathBuf>,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true)]
    pub(crate) program: Vec<OsString>,
}

impl RootViewArgs {
    /// The binds, SRC then DST.
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (&Path, &Path)> {
        self.bind
            .chunks_exact(2)
            .map(|p| (p[0].as_path(), p[1].as_path()))
    }

    /// The words after the program's own name that run `program` in the view.
    pub(crate) fn words<'a>(
        base: &Path,
        binds: impl Iterator<Item = (&'a Path, &'a Path)>,
        program: impl Iterator<Item = OsString>,
    ) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec!["root-view".into(), "--base".into(), base.into()];
        for (src, dst) in binds {
            words.extend(["--bind".into(), src.into(), dst.into()]);
        }
        words.push("--".into());
        words.extend(program);
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        c: Sub,
    }
    #[derive(clap::Subcommand)]
    enum Sub {
        RootView(RootViewArgs),
    }

    #[test]
    fn the_words_written_are_the_words_read() {
        let binds = [
            (Path::new("/s/run/fm/0"), Path::new("/sft")),
            (Path::new("/s/st/ckpt"), Path::new("/out put")),
        ];
        let program = ["bash", "-c", "ls /sft -- x"].map(OsString::from);
        let mut words = vec![OsString::from("rayslurm")];
        words.extend(RootViewArgs::words(
            Path::new("/s/run/fm/view"),
            binds.iter().copied(),
            program.iter().cloned(),
        ));
        let Sub::RootView(args) = Cli::parse_from(words).c;
        assert_eq!(args.base, Path::new("/s/run/fm/view"));
        assert_eq!(args.pairs().collect::<Vec<_>>(), binds);
        assert_eq!(args.program, program);
    }
}
