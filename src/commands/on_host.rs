//! `--host`: a command typed on a laptop, run on the login node. The command line is read here
//! as it would be there; a task file is read here (its `$VAR`s from this shell, its paths from
//! here) into the flags it gives; what names a file of this machine (`--workdir`, `--snapshot`
//! of the current directory, `--git-workdir`'s clone, made here, a local `--file-mount`
//! source, `--env-file`, `--template`) is
//! copied here, as the login node would copy it (a workdir's snapshot keeps what git or a
//! `.skyignore` keeps), and sent through the SSH connection with the command, which is given
//! the copies' paths there; `--env KEY` and `--secret KEY` take their values from this shell
//! and send them in a private file, never on a command line. `dashboard` and `forward` are
//! in [`super::on_host_ports`].

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::given_words::{GivenArg, given_words, words};
use crate::commands::settings::task_file::laptop_words;
use crate::error::UsageError;
use crate::launch::git_workdir::GitSource;
use crate::launch::snapshot::{Listing, SnapshotPlan};
use crate::printer::Printer;
use crate::remote::session::{Session, Word};
use crate::remote::ssh::{SOCKET_DIR_MAX, Ssh};
use crate::remote::{REMOTE_BINARY, binary_to_send};
use crate::state_dir;
use crate::sys::private_tree::PrivateDir;
use crate::sys::quote::shell_quote;
use crate::sys::tree_copy::{all_files, copy_entry};

/// A project's settings file in the current directory (what `launch` reads on a login node).
const PROJECT_FILE: &str = "rayslurm.toml";

/// Commands that do the same on any machine: run here, `--host` or not.
const HERE: &[&str] = &["template", "completions", "man"];

/// Runs the command of `argv` on `host`; `None` when it runs here instead ([`HERE`]).
pub(crate) fn run(
    argv: &[OsString],
    var: &dyn Fn(&OsStr) -> Option<OsString>,
    host: &str,
    printer: &Printer,
) -> Result<Option<ExitCode>> {
    let Some((sub, args)) = given_words(argv, var).map_err(|e| UsageError::new(e.to_string()))?
    else {
        return Ok(None);
    };
    if HERE.contains(&sub.as_str()) {
        return Ok(None);
    }
    let private = state_dir::private_root()?;
    let control = socket_dir(&private)?;
    let ssh = Ssh::new(host, &control)?;
    if sub == "disconnect" {
        if ssh.close() {
            printer.info(&format!("closed the SSH connection to {host}"));
        } else {
            printer.info(&format!("no SSH connection to {host} was open"));
        }
        return Ok(Some(ExitCode::SUCCESS));
    }
    if matches!(
        sub.as_str(),
        "trust" | "bootstrap" | "relay" | "ports" | "root-view"
    ) {
        return Err(UsageError::new(format!("`{sub}` does not run with --host"))
            .hint(format!("log in to {host} and run it there"))
            .into());
    }
    if matches!(sub.as_str(), "launch" | "up" | "exec") && Path::new(PROJECT_FILE).exists() {
        printer.warn(&format!(
            "./{PROJECT_FILE} here is not read with --host: the login node's settings apply (its ~/.config/rayslurm/config.toml, or a {PROJECT_FILE} where the command runs there); give these as flags or put them there"
        ));
    }
    let args = with_task_file(argv, var, &sub, args, printer)?;
    let sending = tempfile::Builder::new()
        .prefix("send-")
        .tempdir_in(private.path())
        .context("cannot make a directory for what is sent")?;
    let prepared = prepare(&sub, args, sending.path())?;
    let binary = binary_to_send(std::env::var_os(REMOTE_BINARY).map(PathBuf::from))?;
    let sha = crate::sys::digest::sha256_file(&binary)
        .with_context(|| format!("cannot read `{}`", binary.display()))?;
    ssh.open(&sending.path().join("ssh.log"))?;
    std::fs::remove_file(sending.path().join("ssh.log")).ok();
    let id = sending
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let session = Session {
        ssh: &ssh,
        id,
        binary: sha,
        words: prepared.words,
        sent: prepared.sends.then_some(sending.path()),
        env_file: prepared.env_file,
        // `attach` with no command is a shell: on a terminal, one there too.
        terminal: sub == "attach"
            && !argv.iter().any(|a| a == "--")
            && std::io::IsTerminal::is_terminal(&std::io::stdin()),
        version: format!("rayslurm {}", crate::cli::VERSION),
    };
    if sub == "dashboard" || sub == "forward" {
        return super::on_host_ports::run(&session, &binary).map(Some);
    }
    let status = session.run_with_copy(
        &binary,
        || None,
        || {
            printer.info(&format!(
                "copying rayslurm to your state directory on {host} (once for this version)"
            ));
        },
    )?;
    Ok(Some(exit_code(status)))
}

/// This process's exit code for the command's there.
pub(super) fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    ExitCode::from(u8::try_from(crate::sys::process::exit_code_of(status)).unwrap_or(1))
}

/// `args` with a task file's flags in front (the file read here), and the file left out.
fn with_task_file(
    argv: &[OsString],
    var: &dyn Fn(&OsStr) -> Option<OsString>,
    sub: &str,
    args: Vec<GivenArg>,
    printer: &Printer,
) -> Result<Vec<GivenArg>> {
    let Some(task) = args.iter().find(|a| a.id == "task") else {
        return Ok(args);
    };
    let path = PathBuf::from(
        task.values
            .iter()
            .flatten()
            .next()
            .cloned()
            .unwrap_or_default(),
    );
    let typed = |id: &str| -> Vec<String> {
        args.iter()
            .filter(|a| a.id == id)
            .flat_map(|a| a.values.iter().flatten())
            .map(|v| v.to_string_lossy().into_owned())
            .collect()
    };
    let flags = laptop_words(sub, &path, &typed("env"), &typed("secret"), printer)?;
    let rest: Vec<GivenArg> = args.into_iter().filter(|a| a.id != "task").collect();
    let mut full = vec![argv[0].clone()];
    let typed_words = words(sub, &rest);
    full.push(typed_words[0].clone());
    full.extend(flags);
    full.extend(typed_words.into_iter().skip(1));
    let (_, merged) = given_words(&full, var)
        .map_err(|e| UsageError::new(format!("with task file `{}`: {e}", path.display())))?
        .context("the subcommand")?;
    Ok(merged)
}

/// The words to run there and what to send with them.
struct Prepared {
    words: Vec<Word>,
    /// Whether anything is in the directory to send.
    sends: bool,
    env_file: bool,
}

/// Copies what `args` name on this machine into `dir` and gives the words that name the
/// copies there.
fn prepare(sub: &str, args: Vec<GivenArg>, dir: &Path) -> Result<Prepared> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut sent = Vec::new();
    let mut env = String::new();
    let mut rest = Vec::new();
    let mut placed = None;
    sent.extend(code_of(&args, &cwd, dir)?);
    for arg in args {
        match arg.id.as_str() {
            "host" | "workdir" | "snapshot" | "git_workdir" | "git_ref" => {}
            "file_mount" => {
                for (n, value) in arg.values.iter().flatten().enumerate() {
                    sent.push(file_mount(value, &cwd, dir, n)?);
                }
            }
            "env_file" | "template" => {
                let short = if arg.id == "template" { "t" } else { "e" };
                for (n, value) in arg.values.iter().flatten().enumerate() {
                    let rel = format!("{short}{n}");
                    let local = cwd.join(value);
                    std::fs::copy(&local, dir.join(&rel))
                        .with_context(|| format!("cannot read `{}`", local.display()))?;
                    sent.push(Word::Sent {
                        before: format!("--{}=", arg.long.as_deref().unwrap_or_default()),
                        rel,
                    });
                }
            }
            // `submit`'s script and `rsync-up`'s source: copied, named there in their place.
            "script" | "source" if matches!(sub, "submit" | "rsync-up") => {
                let local = cwd.join(arg.values.iter().flatten().next().context("the path")?);
                let name = local.file_name().context("a path with a name")?;
                let rel = format!("p0/{}", name.to_string_lossy());
                copy_tree(&local, &dir.join(&rel))?;
                placed = Some(rel);
                rest.push(GivenArg {
                    values: vec![vec![OsString::from(SENT_HERE)]],
                    ..arg
                });
            }
            "env" | "secret" => {
                for value in arg.values.iter().flatten() {
                    let key = value.to_string_lossy();
                    if !key.contains('=')
                        && let Some(found) = std::env::var_os(&*key)
                    {
                        let _ = writeln!(
                            env,
                            "export {key}={}",
                            shell_quote(&found.to_string_lossy())
                        );
                    }
                }
                rest.push(arg);
            }
            _ => rest.push(arg),
        }
    }
    let env_file = !env.is_empty();
    if env_file {
        write_private(&dir.join("env.sh"), &env)?;
    }
    let plain = words(sub, &rest);
    let mut all: Vec<Word> = vec![Word::Plain(plain[0].clone())];
    let sends = !sent.is_empty() || env_file || placed.is_some();
    all.extend(sent);
    all.extend(plain.into_iter().skip(1).map(|w| match &placed {
        Some(rel) if w == SENT_HERE => Word::Sent {
            before: String::new(),
            rel: rel.clone(),
        },
        _ => Word::Plain(w),
    }));
    Ok(Prepared {
        words: all,
        sends,
        env_file,
    })
}

fn value_of(args: &[GivenArg], id: &str) -> Option<OsString> {
    args.iter()
        .find(|a| a.id == id)
        .and_then(|a| a.values.last().and_then(|v| v.last()).cloned())
}

/// `--file-mount DEST=SRC`: a SRC on this machine is copied (`mN`) and named there by its
/// copy; anything else (a named storage, a URL) goes as it is.
fn file_mount(value: &OsStr, cwd: &Path, dir: &Path, n: usize) -> Result<Word> {
    let text = value.to_string_lossy();
    let Some((dest, src)) = text.split_once('=') else {
        return Ok(Word::Plain(format!("--file-mount={text}").into()));
    };
    let local = cwd.join(src);
    if src.contains("://") || !local.exists() {
        return Ok(Word::Plain(format!("--file-mount={text}").into()));
    }
    let rel = format!("m{n}");
    let to = dir.join(&rel);
    if local.is_dir() {
        std::fs::create_dir(&to)?;
        for file in all_files(&local)? {
            copy_entry(&local.join(&file), &to.join(&file))?;
        }
    } else {
        copy_entry(&local, &to)?;
    }
    Ok(Word::Sent {
        before: format!("--file-mount={dest}="),
        rel,
    })
}

/// Stands for a positional sent (`submit`'s script, `rsync-up`'s source) among the words,
/// until it is given its path there.
const SENT_HERE: &str = "\u{0}sent";

/// `from` (a file, or a directory and everything in it) copied to `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(from)
        .with_context(|| format!("cannot read `{}`", from.display()))?;
    if !meta.is_dir() {
        return copy_entry(from, to);
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(to)?;
    for file in all_files(from)? {
        copy_entry(&from.join(&file), &to.join(&file))?;
    }
    Ok(())
}

/// `text` into the new file `path`, readable by the user alone.
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .context("cannot write the values to send")?;
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    Ok(())
}

/// The run's code: `--git-workdir`'s clone (made here, with this machine's keys and
/// network), or the snapshot of `--workdir` (or of the current directory, `--snapshot`),
/// made here as the login node would make it, into `w0`; `None` without either.
fn code_of(args: &[GivenArg], cwd: &Path, dir: &Path) -> Result<Option<Word>> {
    let max_size = value_of(args, "snapshot_max_size").map(|s| s.to_string_lossy().into_owned());
    let snapshot = args.iter().any(|a| a.id == "snapshot" && a.count > 0);
    let workdir = value_of(args, "workdir");
    let text = |v: OsString| v.to_string_lossy().into_owned();
    let git = value_of(args, "git_workdir").is_some();
    let plan = if let Some(url) = value_of(args, "git_workdir") {
        SnapshotPlan {
            git: Some(GitSource {
                url: text(url),
                reference: value_of(args, "git_ref").map(text),
            }),
            max_size: SnapshotPlan::max_size(max_size.as_deref())?,
            ..SnapshotPlan::default()
        }
    } else if workdir.is_some() || snapshot {
        let local = cwd.join(workdir.as_deref().unwrap_or(OsStr::new(".")));
        SnapshotPlan::resolve(true, Some(&local), max_size.as_deref(), cwd)?
            .context("the snapshot")?
    } else {
        return Ok(None);
    };
    Listing::of(&plan)?.write(&dir.join("w0"))?;
    // The clone is cloned again there, so that the run's copy keeps its `.git` as ever.
    let before = if git {
        "--git-workdir=file://"
    } else {
        "--workdir="
    };
    Ok(Some(Word::Sent {
        before: before.into(),
        rel: "w0".into(),
    }))
}

/// Where the master connection's socket goes: `ssh/` in the state directory, else (its path
/// too long for a socket) `rayslurm-ssh/` in `$XDG_RUNTIME_DIR`, else `/tmp/rayslurm-ssh-UID`
/// (made 0700, and used only while it is a directory of the user's that no one else can
/// enter: `/tmp` is sticky, so no one else can move it).
fn socket_dir(private: &PrivateDir) -> Result<PathBuf, UsageError> {
    let dir = private.dir("ssh").map_err(state_dir::tree_error)?;
    if dir.path().as_os_str().len() <= SOCKET_DIR_MAX {
        return Ok(dir.path().to_owned());
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && d.as_os_str().len() + 13 <= SOCKET_DIR_MAX);
    if let Some(runtime) = runtime {
        return PrivateDir::open_root(&runtime)
            .and_then(|r| r.dir("rayslurm-ssh"))
            .map(|d| d.path().to_owned())
            .map_err(state_dir::tree_error);
    }
    let uid = nix::unistd::getuid();
    let tmp = PathBuf::from(format!("/tmp/rayslurm-ssh-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&tmp);
    let ours = std::fs::symlink_metadata(&tmp)
        .is_ok_and(|m| m.file_type().is_dir() && m.uid() == uid.as_raw() && m.mode() & 0o077 == 0);
    if ours {
        return Ok(tmp);
    }
    Err(UsageError::new(format!(
        "the SSH connection's socket cannot go in `{}` (a socket's path is at most 107 bytes), and `{}` is not a private directory of yours",
        dir.path().display(),
        tmp.display()
    ))
    .hint(format!(
        "set XDG_RUNTIME_DIR to a short private directory, or {} to a shorter one",
        crate::env_vars::STATE_DIR
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `submit`'s script and `rsync-up`'s source on the laptop are sent, and named there in
    /// their place among the positionals, under their own names.
    #[test]
    fn a_submitted_script_and_a_copied_source_are_sent_in_their_place() {
        let here = tempfile::tempdir().unwrap();
        let job = here.path().join("job.py");
        std::fs::write(&job, "print(1)\n").unwrap();
        let typed = |words: &[&str]| {
            let argv: Vec<OsString> = std::iter::once("rayslurm")
                .chain(words.iter().copied())
                .map(OsString::from)
                .collect();
            given_words(&argv, &|_| None).unwrap().unwrap()
        };
        let job = job.to_str().unwrap();
        for (words, rel) in [
            (
                &["submit", "-d", "lab", job, "--lr", "0.1"][..],
                "p0/job.py",
            ),
            (&["rsync-up", "lab", job, "code/"], "p0/job.py"),
        ] {
            let (sub, args) = typed(words);
            let sending = tempfile::tempdir().unwrap();
            let prepared = prepare(&sub, args, sending.path()).unwrap();
            assert!(prepared.sends);
            let shown: Vec<String> = prepared
                .words
                .iter()
                .map(|w| match w {
                    Word::Plain(p) => p.to_string_lossy().into_owned(),
                    Word::Sent { before, rel } => format!("{before}<{rel}>"),
                })
                .collect();
            let at = shown.iter().position(|w| w == "lab").unwrap();
            assert_eq!(shown[at + 1], format!("<{rel}>"), "{shown:?}");
            assert_eq!(
                std::fs::read_to_string(sending.path().join(rel)).unwrap(),
                "print(1)\n"
            );
        }
    }
}
