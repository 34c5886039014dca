//! Ray's cluster YAML named where a cluster's name goes: `up config.yaml` reads the file
//! (`launch::ray_yaml`) into `up`'s flags, put before the flags typed (which win, as a task
//! file's do) with the file's `cluster_name` as the cluster's name; `down`, `exec`,
//! `dashboard`, `queue`, `scale`, `forward`, `submit`, `rsync-up` and `attach` take the file
//! for its `cluster_name`. The command line is rebuilt as words, so that `--host` sends the
//! command with the file already read here (its local paths sent as a task file's are).

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::cli::given_words::{given_words, words};
use crate::cli::parse::{check_option, parse_with_inserted};
use crate::cli::{Cli, Command};
use crate::error::UsageError;
use crate::launch::ray_yaml::{self, RayCluster, names_a_file, refusal};
use crate::launch::worker_type::SLURM_OPTIONS;
use crate::printer::Printer;

/// `cli` and `argv` again with a cluster YAML read into the cluster's name (and for `up`, its
/// flags); as they are when no cluster YAML is named.
pub(crate) fn expand(
    cli: Cli,
    argv: Vec<OsString>,
    var: &dyn Fn(&OsStr) -> Option<OsString>,
    printer: &Printer,
) -> Result<(Cli, Vec<OsString>), UsageError> {
    let (id, word) = match &cli.command {
        Command::Up(args) => {
            if let Some(task) = &args.task {
                refuse_as_task(task)?;
            }
            ("name", &args.name)
        }
        Command::Down(args) => ("cluster", &args.cluster),
        Command::Exec(args) => ("cluster", &args.cluster),
        Command::Queue(args) => ("cluster", &args.cluster),
        Command::Scale(args) => ("cluster", &args.cluster),
        Command::Submit(args) => ("cluster", &args.cluster),
        Command::RsyncUp(args) => ("cluster", &args.cluster),
        Command::Attach(args) => ("cluster", &args.cluster),
        Command::Dashboard(args) => ("target", &args.target),
        Command::Forward(args) => ("target", &args.target),
        _ => return Ok((cli, argv)),
    };
    let cwd = std::env::current_dir()
        .map_err(|e| UsageError::new(format!("cannot read the current directory: {e}")))?;
    if !names_a_file(word, &cwd) || matches!(&cli.command, Command::Up(a) if a.task.is_some()) {
        return Ok((cli, argv));
    }
    let path = Path::new(word).to_owned();
    let up = matches!(cli.command, Command::Up(_));
    let (name, inserted) = if up {
        refuse_a_task_file(&path, &cwd)?;
        let cluster = ray_yaml::read(&path, &cwd)?;
        checked(&cluster)?;
        for notice in &cluster.notices {
            printer.info(notice);
        }
        let words: Vec<OsString> = cluster.words().into_iter().map(OsString::from).collect();
        (cluster.name, words)
    } else {
        (ray_yaml::cluster_name_of(&path, &cwd)?, Vec::new())
    };
    let bad = |e: clap::Error| {
        let text = e.to_string();
        UsageError::new(format!(
            "with Ray's cluster YAML `{}`: {}",
            path.display(),
            text.lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
        ))
    };
    let (sub, mut args) = given_words(&argv, var)
        .map_err(bad)?
        .ok_or_else(|| UsageError::new("no command"))?;
    // A value from its variable stays the variable's, under the file's (as under a task file's).
    args.retain(|a| !cli.from_variables.iter().any(|(v, _)| *v == a.id));
    for arg in args.iter_mut().filter(|a| a.id == id) {
        arg.values = vec![vec![OsString::from(&name)]];
    }
    let typed = words(&sub, &args);
    let rebuilt: Vec<OsString> = std::iter::once(argv[0].clone())
        .chain(typed.iter().cloned())
        .collect();
    let mut full = vec![argv[0].clone(), typed[0].clone()];
    full.extend(inserted.iter().cloned());
    full.extend(typed.into_iter().skip(1));
    let cli = parse_with_inserted(&rebuilt, var, &sub, &inserted).map_err(bad)?;
    Ok((cli, full))
}

/// `up NAME FILE` with Ray's cluster YAML as FILE: the file names the cluster itself.
fn refuse_as_task(task: &Path) -> Result<(), UsageError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    if !ray_yaml::is_ray_cluster_file(task, &cwd) {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "`{}` is Ray's cluster YAML, not a task file: it names its cluster itself (`cluster_name`)",
        task.display()
    ))
    .hint(format!(
        "give it alone: `rayslurm up {}` (then `rayslurm down {}`)",
        task.display(),
        task.display()
    )))
}

/// `up FILE` with a task file (SkyPilot's): a task file goes after the cluster's name.
fn refuse_a_task_file(path: &Path, cwd: &Path) -> Result<(), UsageError> {
    if !cwd.join(path).is_file() || ray_yaml::is_ray_cluster_file(path, cwd) {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "`{}` is not Ray's cluster YAML: it has no `cluster_name`, `provider` or `available_node_types`",
        path.display()
    ))
    .hint(format!(
        "a task file (SkyPilot's) goes after the cluster's name: `rayslurm up NAME {}`",
        path.display()
    )))
}

/// Each of the file's flags as `up` takes it (a worker type's Slurm options too): a value
/// refused is `FILE:LINE: FIELD: why`.
fn checked(cluster: &RayCluster) -> Result<(), UsageError> {
    let file = cluster.path.to_string_lossy();
    let options = cluster.flags.iter().chain(
        cluster
            .worker_types
            .iter()
            .flat_map(|(_, t)| &t.options)
            .filter(|o| SLURM_OPTIONS.contains(&o.long.as_str()) || o.long == "no-exclusive"),
    );
    for option in options {
        let words: Vec<OsString> = option.words().into_iter().map(OsString::from).collect();
        check_option("up", &file, &words)
            .map_err(|why| refusal(&cluster.path, &option.field, option.line, &why))?;
    }
    Ok(())
}
