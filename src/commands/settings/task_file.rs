//! A task file named on the command line (`launch TASK.yaml`, `up NAME TASK.yaml`, `exec
//! CLUSTER TASK.yaml`): read it (`launch::task_file`),
//! turn what it gives into flags of the command, check each against the command's own options
//! (a refusal names the file, line and field), and parse the command line again with the
//! file's flags in front, so that the flags typed override the file.
//!
//! The file is the user's own choice, as `RAYSLURM_CONFIG` is: its `rayslurm:` section may set
//! any option, those a project file may set only once trusted (`load_env`, `template`, ...)
//! included.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::cli::parse::{check_option, exec_command_tip, option_takes_value, parse_with_inserted};
use crate::cli::{Cli, Command, ContainerArgs};
use crate::error::UsageError;
use crate::launch::config::Sources;
use crate::launch::gpu_names::GpuAsk;
use crate::launch::task_file::{
    self, EMPTY_WORKDIR, Given, Refusal, SLURM_CLUSTER, TaskFile, USE_SPOT, Value,
};
use crate::printer::Printer;

use super::task_site::{Spot, check_cluster};
use super::task_stages::distinct_names;
pub(crate) use super::task_stages::{Stage, StageSettings, resolve_stages};
use crate::commands::task_launch::forwards;

/// `cli` again with its task file's flags, or as it is when it names none; for `launch`, each
/// stage of the file as well (one for a file of one task; none without a task file).
pub(crate) fn expand(
    cli: Cli,
    argv: &[OsString],
    var: &dyn Fn(&OsStr) -> Option<OsString>,
    printer: &Printer,
) -> Result<(Cli, Vec<Stage>), UsageError> {
    // The `--env` and the `--secret` typed, each a task file's key without a value may take.
    let (sub, path, typed_env, typed_secrets) = match &cli.command {
        Command::Launch(args) => match &args.task {
            Some(path) => (
                "launch",
                path.clone(),
                args.job.env.clone(),
                args.job.secret.clone(),
            ),
            None => return Ok((cli, Vec::new())),
        },
        Command::Up(args) => match &args.task {
            Some(path) => (
                "up",
                path.clone(),
                args.job.env.clone(),
                args.job.secret.clone(),
            ),
            None => return Ok((cli, Vec::new())),
        },
        Command::Exec(args) => match &args.task {
            Some(path) => ("exec", path.clone(), args.env.clone(), args.secret.clone()),
            None => return Ok((cli, Vec::new())),
        },
        _ => return Ok((cli, Vec::new())),
    };
    let cwd = std::env::current_dir()
        .map_err(|e| UsageError::new(format!("cannot read the current directory: {e}")))?;
    if sub == "exec" && !names_a_task_file(&cwd.join(&path)) {
        return Err(UsageError::new(format!(
            "`{}` is not a task file: there is no such file",
            path.display()
        ))
        .hint(exec_command_tip(&path.to_string_lossy())));
    }
    let tasks = match sub {
        "launch" => task_file::read_stages_with_env(&path, &cwd, &typed_env)?,
        _ => vec![task_file::read_with_env(&path, &cwd, &typed_env)?],
    };
    let mut parsed = Vec::new();
    for task in &tasks {
        let words = flags(sub, task)?;
        check_needed_env(task, &typed_env, &typed_secrets)?;
        parsed.push((
            parse_with_task(argv, var, sub, &words, task)?,
            parse_with_task(argv, var, sub, &words, task)?,
        ));
    }
    for notice in tasks.iter().flat_map(|t| &t.notices) {
        printer.info(notice);
    }
    let cluster = match &cli.command {
        Command::Up(args) => Some(args.name.clone()),
        Command::Exec(args) => Some(args.cluster.clone()),
        _ => None,
    };
    if let Some(cluster) = cluster {
        // `launch` prints them with each stage's name; here they are served by the cluster.
        for line in tasks.iter().flat_map(|t| forwards(&t.ports, &cluster)) {
            printer.info(&line);
        }
    }
    let mut stages = Vec::new();
    let mut first = None;
    for (task, (cli, again)) in tasks.into_iter().zip(parsed) {
        if let Command::Launch(args) = again.command {
            stages.push(Stage {
                args,
                ports: task.ports,
                pipeline: task.pipeline,
                waits_for: task.waits_for,
            });
        }
        first.get_or_insert(cli);
    }
    distinct_names(&path, &stages)?;
    let cli = first.ok_or_else(|| UsageError::new("the task file has no task"))?;
    Ok((cli, stages))
}

/// For `--host`: the flags a task file on this machine gives `sub`, read here (its `$VAR`s
/// from `typed_env` and this shell, its paths from here), its notices printed; what it needs
/// typed is checked. A file of several tasks (a pipeline) is refused: it runs on the login
/// node itself.
pub(crate) fn laptop_words(
    sub: &str,
    path: &Path,
    typed_env: &[String],
    typed_secrets: &[String],
    printer: &Printer,
) -> Result<Vec<OsString>, UsageError> {
    let cwd = std::env::current_dir()
        .map_err(|e| UsageError::new(format!("cannot read the current directory: {e}")))?;
    let mut tasks = task_file::read_stages_with_env(path, &cwd, typed_env)?;
    if tasks.len() != 1 {
        return Err(UsageError::new(format!(
            "`{}` is a pipeline of {} tasks: --host runs one task file of one task",
            path.display(),
            tasks.len()
        ))
        .hint("copy the file and its code to the login node and launch it there, or launch its tasks one by one with --after"));
    }
    let task = tasks.remove(0);
    check_needed_env(&task, typed_env, typed_secrets)?;
    for notice in &task.notices {
        printer.info(notice);
    }
    flags(sub, &task)
}

/// The command line parsed with `task`'s flags (`words`) in front; where its GPUs came from.
fn parse_with_task(
    argv: &[OsString],
    var: &dyn Fn(&OsStr) -> Option<OsString>,
    sub: &str,
    words: &[OsString],
    task: &TaskFile,
) -> Result<Cli, UsageError> {
    let mut cli = parse_with_inserted(argv, var, sub, words).map_err(|e| {
        let text = e.to_string();
        UsageError::new(format!(
            "with task file `{}`: {}",
            task.path.display(),
            text.lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
        ))
    })?;
    note_gpu_origin(&mut cli, task);
    super::file_mounts::judged(cli, task)
}

/// `envs:`/`secrets:` keys without a value must be typed (`--env KEY`, `--secret KEY`).
fn check_needed_env(
    task: &TaskFile,
    typed_env: &[String],
    typed_secrets: &[String],
) -> Result<(), UsageError> {
    for (field, line) in &task.needed_env {
        // `secrets.KEY` is given by a `--secret` alone, so that its value is never shown.
        let (flag, typed) = match field.split_once('.') {
            Some(("secrets", _)) => ("--secret", typed_secrets),
            _ => ("--env", typed_env),
        };
        let key = field.split_once('.').map_or(field.as_str(), |(_, k)| k);
        if !typed
            .iter()
            .any(|e| e.split_once('=').map_or(e.as_str(), |(k, _)| k) == key)
        {
            return Err(Refusal::new(
                field,
                *line,
                format!(
                    "has no value: give it with `{flag} {key}` (its value in this shell) or `{flag} {key}=VALUE`"
                ),
            )
            .into_error(&task.path));
        }
    }
    Ok(())
}

/// Where the GPUs `cli` asks for came from, when the file gave them (the command line did
/// not override them): what a refusal of their name at submission names.
fn note_gpu_origin(cli: &mut Cli, task: &TaskFile) {
    let Some(given) = task.given.iter().find(|g| g.long == "num-gpus") else {
        return;
    };
    let Value::Values(values) = &given.value else {
        return;
    };
    let job = match &mut cli.command {
        Command::Launch(args) => &mut args.job,
        Command::Up(args) => &mut args.job,
        _ => return,
    };
    let from_file = values.last().and_then(|v| v.parse::<GpuAsk>().ok());
    if from_file.as_ref() == Some(&job.num_gpus) {
        job.num_gpus_from = Some(format!(
            "{}:{}: {}",
            task.path.display(),
            given.line,
            given.field
        ));
    }
}

/// Whether `exec CLUSTER WORD` names a task file: a file that exists, or a name ending in
/// `.yaml`/`.yml` (which is then reported missing). Any other word is a command typed without
/// the `--` before it (`exec CLUSTER nvidia-smi`).
fn names_a_task_file(path: &Path) -> bool {
    path.exists() || path.extension().is_some_and(|e| e == "yaml" || e == "yml")
}

/// The file's flags as words of `sub`, each checked.
fn flags(sub: &str, task: &TaskFile) -> Result<Vec<OsString>, UsageError> {
    let mut all = Vec::new();
    let mut spot = None;
    let mut site = Vec::new();
    for given in &task.given {
        if launch_only(sub, given) {
            continue;
        }
        let refused = |r: Refusal| r.into_error(&task.path);
        match given.long.as_str() {
            USE_SPOT => {
                if spot.is_none() {
                    spot = Some(Spot::from_config().map_err(refused)?);
                }
                if let Some(spot) = &spot {
                    let infra = task
                        .given
                        .iter()
                        .find(|g| g.field == "resources.infra" && g.long == "partition");
                    site.extend(spot.flags(given, infra).map_err(refused)?);
                }
                continue;
            }
            SLURM_CLUSTER => {
                if let Value::Values(names) = &given.value {
                    for name in names {
                        check_cluster(given, name).map_err(refused)?;
                    }
                }
                continue;
            }
            _ => {}
        }
        site.push(given.clone());
    }
    for given in &site {
        let given = &for_command(sub, given)
            .map_err(|why| Refusal::new(&given.field, given.line, why).into_error(&task.path))?;
        let words = words_of(sub, given)
            .map_err(|why| Refusal::new(&given.field, given.line, why).into_error(&task.path))?;
        check_option(sub, &task.path.to_string_lossy(), &words)
            .and_then(|()| resolves(sub, &words))
            .map_err(|why| Refusal::new(&given.field, given.line, why).into_error(&task.path))?;
        all.extend(words);
    }
    Ok(all)
}

/// Whether `given` is a flag the file gives `launch` alone (its own section's flags go to
/// every command, and are refused where they mean nothing). `up` names the cluster itself and
/// runs no command: its jobs come with `exec`, in the cluster's image (`resources.image_id`
/// means nothing to `exec`). Neither starts its nodes in an empty directory
/// when the file names no workdir: a cluster, and each of its jobs, runs in the directory it
/// is given (an `exec` job with `workdir:` in its snapshot of it, docs/task-files.md).
fn launch_only(sub: &str, given: &Given) -> bool {
    if given.field.starts_with("rayslurm.") {
        return false;
    }
    let long = given.long.as_str();
    match sub {
        // A cluster of `up` is never requeued.
        "up" => ["exp-name", "command", "per-node", EMPTY_WORKDIR, "requeue"].contains(&long),
        // A cluster's jobs run in its own image, on its nodes, as it was placed.
        "exec" => {
            [
                EMPTY_WORKDIR,
                "container-image",
                "exclusive",
                "requeue",
                USE_SPOT,
            ]
            .contains(&long)
                || given.field == "resources.infra"
        }
        // A cluster's idle timeout: a job ends with its command.
        _ => long == "idle-timeout",
    }
}

/// A SkyPilot field's flag as `sub` names it: `exec` asks Ray (per rank with `--per-node`)
/// where `launch` asks Slurm (per node), under other names.
fn for_command(sub: &str, given: &Given) -> Result<Given, String> {
    let mut given = given.clone();
    if given.field.starts_with("rayslurm.") {
        return Ok(given);
    }
    if given.long == "workdir" && sub == "up" {
        // `up` takes no snapshot: a cluster runs in the directory itself (an `exec` job
        // gets its own `--workdir` snapshot).
        let Value::Values(dirs) = &given.value else {
            return Ok(given);
        };
        given.long = "sbatch-arg".to_owned();
        given.value = Value::Values(dirs.iter().map(|d| format!("--chdir={d}")).collect());
        return Ok(given);
    }
    if sub != "exec" {
        return Ok(given);
    }
    given.long = match given.long.as_str() {
        "exp-name" => "name",
        "cpus-per-task" => "num-cpus",
        "mem" => "memory",
        "num-gpus" => {
            // The GPUs' type is the cluster's: Ray counts GPUs, not types.
            // Of candidates, the first's count.
            if let Value::Values(values) = &mut given.value {
                for v in values {
                    if let Ok(ask) = v.parse::<GpuAsk>() {
                        *v = ask.first().per_node.to_string();
                    }
                }
            }
            "num-gpus"
        }
        "sbatch-arg" => {
            return Err(
                "not read by `exec` yet: `cd` to the directory at the start of `run`".into(),
            );
        }
        other => other,
    }
    .to_owned();
    Ok(given)
}

/// Whether `words` alone resolve (the checks of values that clap leaves to resolution, such as
/// a time's form): why not, if they do not.
fn resolves(sub: &str, words: &[OsString]) -> Result<(), String> {
    if sub != "launch" {
        return Ok(());
    }
    let argv: Vec<OsString> = ["rayslurm", "launch", "--exp-name=x", "--command=true"]
        .into_iter()
        .map(OsString::from)
        .collect();
    let Ok(Cli {
        command: Command::Launch(mut args),
        ..
    }) = parse_with_inserted(&argv, &|_| None, sub, words)
    else {
        return Ok(());
    };
    let src = Sources {
        cwd: std::env::current_dir().unwrap_or_default(),
        ..Sources::default()
    };
    // A container flag means something only beside the image (and the runtime): each alone is
    // checked here, all of them together when the command line resolves (file mounts too).
    super::container::check_each(&args.container, &src.cwd).map_err(|e| e.to_string())?;
    (args.container, args.snapshot.file_mount) = (ContainerArgs::default(), Vec::new());
    super::launch::resolve(&args, &src)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// One flag's words (`--long=value` each), or why it cannot be one.
fn words_of(sub: &str, given: &Given) -> Result<Vec<OsString>, String> {
    let Some(takes_value) = option_takes_value(sub, &given.long) else {
        return Err(format!("`{sub}` has no option `--{}`", given.long));
    };
    match (&given.value, takes_value) {
        (Value::Switch(true), false) => Ok(vec![format!("--{}", given.long).into()]),
        // `false` of a switch whose default is on (`exclusive`) is its `--no-` twin.
        (Value::Switch(false), false) => {
            let no = format!("no-{}", given.long);
            Ok(match option_takes_value(sub, &no) {
                Some(false) => vec![format!("--{no}").into()],
                _ => Vec::new(),
            })
        }
        (Value::Switch(_), true) => {
            Err(format!("`--{}` takes a value, not true/false", given.long))
        }
        (Value::Values(_), false) => Err(format!(
            "`--{}` is a switch: give true or false",
            given.long
        )),
        (Value::Values(values), true) => Ok(values
            .iter()
            .map(|v| format!("--{}={v}", given.long).into())
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands (of `launch`, `up`, `exec`) whose flags from the task file `yaml` hold
    /// `flag`.
    fn given_to(yaml: &str, flag: &str) -> Vec<&'static str> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.yaml"), yaml).unwrap();
        let task = task_file::read(Path::new("t.yaml"), dir.path()).unwrap();
        ["launch", "up", "exec"]
            .into_iter()
            .filter(|sub| flags(sub, &task).unwrap().contains(&OsString::from(flag)))
            .collect()
    }

    /// A file without `workdir:` starts `launch`'s nodes in an empty directory each; `up` and
    /// `exec` run where they are given, as they always have.
    #[test]
    fn only_launch_starts_the_nodes_in_an_empty_directory() {
        let yaml = "num_nodes: 2\nsetup: make\nrun: ls\n";
        assert_eq!(given_to(yaml, "--empty-workdir"), ["launch"]);
    }

    /// `resources.image_id` is the image of `launch`'s run and of `up`'s cluster; an `exec`
    /// job runs in its cluster's image, so the field gives `exec` nothing.
    /// A task asking for part of a node shares it under `launch` and `up`; an `exec` job
    /// runs on its cluster's nodes, as they were placed (and is never requeued).
    #[test]
    fn part_of_a_node_is_shared_by_launch_and_up_and_means_nothing_to_exec() {
        let yaml =
            "run: ls\nresources:\n  cpus: 1\n  job_recovery: FAILOVER\n  infra: slurm/*/gpu\n";
        assert_eq!(given_to(yaml, "--no-exclusive"), ["launch", "up"]);
        assert_eq!(given_to(yaml, "--requeue"), ["launch"]);
        assert_eq!(given_to(yaml, "--partition=gpu"), ["launch", "up"]);
    }

    #[test]
    fn the_image_is_launchs_and_ups_and_never_execs() {
        let yaml = "run: ls\nresources:\n  image_id: docker:ubuntu:24.04\n";
        assert_eq!(
            given_to(yaml, "--container-image=docker://ubuntu:24.04"),
            ["launch", "up"]
        );
    }

    /// `exec` asks Ray for a count: of candidates, the first's; `launch` and `up` keep them
    /// all, for the site's names at submission.
    #[test]
    fn exec_takes_the_count_of_the_first_candidate() {
        let yaml = "run: ls\nresources:\n  accelerators: {H100:8, L4:2}\n";
        assert_eq!(given_to(yaml, "--num-gpus=8"), ["exec"]);
        assert_eq!(given_to(yaml, "--num-gpus={H100:8,L4:2}"), ["launch", "up"]);
    }

    /// `exec CLUSTER WORD`: a file that exists, or a `.yaml`/`.yml` name (then reported
    /// missing), is a task file; any other word is a command.
    #[test]
    fn a_task_file_is_a_file_or_a_yaml_name() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("task");
        std::fs::write(&plain, "run: true\n").unwrap();
        assert!(names_a_task_file(&plain));
        assert!(names_a_task_file(&dir.path().join("missing.yaml")));
        assert!(names_a_task_file(&dir.path().join("missing.yml")));
        assert!(!names_a_task_file(Path::new("nvidia-smi")));
        assert!(!names_a_task_file(&dir.path().join("missing.json")));
    }
}
