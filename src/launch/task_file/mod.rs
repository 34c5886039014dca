//! Task files: `rayslurm launch FILE.yaml` reads SkyPilot's task format, for the fields that
//! mean something on Slurm, and a `rayslurm:` section that carries any `launch` option by its
//! own name (docs/task-files.md). Reading a file gives flags ([`Given`]), each with the field and
//! line it came from; `commands/` puts them before the command line's own, which override them.
//!
//! A field that cannot be honoured here is refused as `FILE:LINE: FIELD: why` and nothing is
//! submitted; one that needs nothing on a shared filesystem gets one notice.

use std::path::{Path, PathBuf};

use crate::error::UsageError;

mod accelerators;
mod fields;
pub(crate) mod given;
mod mounts;
pub(crate) mod node;
mod pipeline;
mod resources;
mod worker_types;

pub(crate) use fields::EMPTY_WORKDIR;
pub(crate) use given::{Given, Value};
pub(crate) use mounts::check_destinations;
pub(crate) use resources::{SLURM_CLUSTER, USE_SPOT};

/// A task file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskFile {
    /// As the user named it.
    pub(crate) path: PathBuf,
    /// Its flags in order: SkyPilot's fields, then the `rayslurm:` section's.
    pub(crate) given: Vec<Given>,
    /// `envs:`/`secrets:` keys without a value (as `envs.KEY`, `secrets.KEY`), which the
    /// command line must give with `--env` or `--secret` (as SkyPilot's), and their lines.
    pub(crate) needed_env: Vec<(String, u32)>,
    /// One line for each field that needs nothing here.
    pub(crate) notices: Vec<String>,
    /// `resources.ports`: the ports the task serves on its head node (`8080`, `10052-10100`),
    /// to be forwarded to the login node.
    pub(crate) ports: Vec<String>,
    /// The pipeline this file is a stage of (a file of several YAML documents), by its name.
    pub(crate) pipeline: Option<String>,
    /// In a pipeline that is a graph, the runs this stage waits for; `None`: the stage before.
    pub(crate) waits_for: Option<Vec<String>>,
}

/// A field refused: its name, line and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// Empty for the file as a whole (YAML that does not parse).
    pub(crate) field: String,
    pub(crate) line: u32,
    /// 0 where only the line is known.
    pub(crate) column: u32,
    pub(crate) why: String,
}

impl Refusal {
    pub(crate) fn new(field: &str, line: u32, why: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            line,
            column: 0,
            why: why.into(),
        }
    }

    /// YAML that does not parse, where the parser stopped.
    pub(crate) fn syntax(err: node::SyntaxError) -> Self {
        Self {
            field: String::new(),
            line: err.line,
            column: err.column,
            why: format!("not valid YAML: {}", err.message),
        }
    }

    /// `FILE:LINE: FIELD: why` (`FILE:LINE:COLUMN: why` for the file's syntax), as a usage
    /// error.
    pub(crate) fn into_error(self, path: &Path) -> UsageError {
        let mut place = path.display().to_string();
        for n in [self.line, self.column] {
            if n == 0 {
                break;
            }
            place.push_str(&format!(":{n}"));
        }
        if self.field.is_empty() {
            return UsageError::new(format!("{place}: {}", self.why))
                .hint("fix the YAML there; nothing was submitted");
        }
        UsageError::new(format!("{place}: {}: {}", self.field, self.why))
        .hint("fix or remove the field (docs/task-files.md lists what each field becomes); nothing was submitted")
    }
}

/// The file as it is read: what it gives so far.
#[derive(Debug, Default)]
pub(crate) struct Reading {
    pub(crate) given: Vec<Given>,
    pub(crate) needed_env: Vec<(String, u32)>,
    pub(crate) notices: Vec<String>,
    pub(crate) ports: Vec<String>,
    /// The directory relative `workdir`s are taken from.
    pub(crate) cwd: PathBuf,
    /// `--env` as typed on the command line, for `$VAR` in `file_mounts`.
    pub(crate) typed_env: Vec<String>,
}

impl Reading {
    fn notice(&mut self, field: &str, why: &str) {
        self.notices
            .push(format!("`{field}` needs nothing here: {why}"));
    }
}

/// A program named where a task file goes (`rayslurm launch train.py`): a script by its name
/// (`.py`, `.sh`, `.bash`) or its `#!` line is the command, not a task file.
fn refuse_a_program(path: &Path, text: &str) -> Result<(), UsageError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    let run = match ext {
        "py" => "python",
        "sh" | "bash" => "bash",
        _ if text.starts_with("#!") => "",
        _ => return Ok(()),
    };
    let command = format!("{run} {}", path.display()).trim().to_owned();
    Err(UsageError::new(format!(
        "`{}` is a program, not a task file (SkyPilot's YAML format)",
        path.display()
    ))
    .hint(format!(
        "give it as the command: `--command \"{command}\"`, or after `--`: `rayslurm launch --exp-name NAME -- {command}`"
    )))
}

/// [`read_with_env`] with no `--env` typed (the tests' reading).
#[cfg(test)]
pub(crate) fn read(path: &Path, cwd: &Path) -> Result<TaskFile, UsageError> {
    read_with_env(path, cwd, &[])
}

/// Reads the task file at `path` (relative to `cwd`): one task, with `--env` as typed on the
/// command line (`typed_env`, for `$VAR` in the file). A pipeline (several YAML documents) is
/// refused: only `launch` runs one ([`read_stages_with_env`]).
pub(crate) fn read_with_env(
    path: &Path,
    cwd: &Path,
    typed_env: &[String],
) -> Result<TaskFile, UsageError> {
    let mut stages = read_stages_with_env(path, cwd, typed_env)?;
    if stages.len() > 1 || stages[0].pipeline.is_some() {
        return Err(UsageError::new(format!(
            "`{}` is a pipeline ({} stages, one a YAML document): only `launch` runs a pipeline",
            path.display(),
            stages.len()
        ))
        .hint("run it with `rayslurm launch FILE`, or give this command a file of one task"));
    }
    Ok(stages.remove(0))
}

/// [`read_stages_with_env`] with no `--env` typed (the tests' reading).
#[cfg(test)]
pub(crate) fn read_stages(path: &Path, cwd: &Path) -> Result<Vec<TaskFile>, UsageError> {
    read_stages_with_env(path, cwd, &[])
}

/// Reads the task file at `path` (relative to `cwd`): its one task, or each stage of a
/// pipeline in order, with `--env` as typed on the command line (`typed_env`, for `$VAR` in
/// the file).
pub(crate) fn read_stages_with_env(
    path: &Path,
    cwd: &Path,
    typed_env: &[String],
) -> Result<Vec<TaskFile>, UsageError> {
    let full = cwd.join(path);
    let text = std::fs::read_to_string(&full).map_err(|e| {
        UsageError::new(format!("cannot read task file `{}`: {e}", path.display()))
            .hint("name a task file (YAML) that exists, e.g. `rayslurm launch task.yaml`")
    })?;
    refuse_a_program(path, &text)?;
    let stem = full
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let documents = node::parse_all(&text).map_err(|e| Refusal::syntax(e).into_error(path))?;
    let stages = pipeline::split(documents, &stem).map_err(|r| r.into_error(path))?;
    stages
        .into_iter()
        .map(|stage| read_stage(path, cwd, typed_env, stage))
        .collect()
}

/// One stage (or the file's one task) into a [`TaskFile`].
fn read_stage(
    path: &Path,
    cwd: &Path,
    typed_env: &[String],
    stage: pipeline::Stage,
) -> Result<TaskFile, UsageError> {
    let mut reading = Reading {
        cwd: cwd.to_owned(),
        typed_env: typed_env.to_vec(),
        ..Reading::default()
    };
    fields::read_document(&mut reading, stage.document, &stage.default_name)
        .and_then(|()| pipeline::name_stage(&mut reading.given, stage.pipeline.as_deref()))
        .map_err(|r| r.into_error(path))?;
    let Reading {
        given,
        needed_env,
        notices,
        ports,
        ..
    } = reading;
    let notices = notices
        .into_iter()
        .map(|n| format!("{}: {n}", path.display()))
        .collect();
    Ok(TaskFile {
        path: path.to_owned(),
        given,
        needed_env,
        notices,
        ports,
        pipeline: stage.pipeline,
        waits_for: stage.waits_for,
    })
}

/// `workdir:` as `launch --workdir`: a snapshot made at submission, copied to each node's own
/// disk, where setup and run work (as SkyPilot's `~/sky_workdir`); as `exec --workdir`, a
/// snapshot the job starts in; `up` runs in the directory itself (see
/// `commands::settings::task_file`). Without it, `launch` gets `--empty-workdir`.
fn apply_workdir(field: &str, line: u32, dir: &Path) -> Given {
    Given::one(field, line, "workdir", dir.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::read;

    /// A task file in `dir`, named `task.yaml`, holding `text`.
    fn task(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
        let path = dir.join("task.yaml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `workdir:` is taken from the directory the launch names, whatever this process's own.
    #[test]
    fn a_relative_workdir_is_taken_from_the_launchs_directory() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("data")).unwrap();
        task(tmp.path(), "run: python x.py\nworkdir: data\n");
        let read = read(std::path::Path::new("task.yaml"), tmp.path()).unwrap();
        let want = tmp.path().join("data").canonicalize().unwrap();
        let given = format!("{:?}", read.given);
        assert!(
            given.contains(&format!("{:?}", want.display().to_string())),
            "{given}"
        );
    }

    /// `workdir: ~/code` is under your home directory, as a shell and SkyPilot read it.
    #[test]
    fn a_workdir_from_tilde_is_under_the_home_directory() {
        let home = std::env::home_dir().unwrap();
        let code = tempfile::tempdir_in(&home).unwrap();
        let name = code.path().file_name().unwrap().to_str().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let path = task(tmp.path(), &format!("run: x\nworkdir: ~/{name}\n"));
        let given = format!("{:?}", read(&path, tmp.path()).unwrap().given);
        let want = code.path().canonicalize().unwrap();
        assert!(
            given.contains(&format!("{:?}", want.display().to_string())),
            "{given}"
        );
        // `~user` is not expanded: a path of that name is looked for here.
        let path = task(tmp.path(), "run: x\nworkdir: ~nobody/x\n");
        let err = read(&path, tmp.path()).unwrap_err();
        assert!(err.message.contains("~nobody/x"), "{}", err.message);
    }

    /// `num_nodes:` is a whole number of at least 1.
    #[test]
    fn num_nodes_below_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = task(tmp.path(), "run: x\nnum_nodes: 1\n");
        let given = format!("{:?}", read(&path, tmp.path()).unwrap().given);
        assert!(given.contains("num-nodes"), "{given}");
        let path = task(tmp.path(), "run: x\nnum_nodes: 0\n");
        let err = read(&path, tmp.path()).unwrap_err();
        assert!(err.message.contains("at least 1"), "{}", err.message);
    }

    /// `run` goes to every node, as SkyPilot runs it, unless the file asks for a Ray job.
    #[test]
    fn run_is_per_node_unless_a_ray_job_is_asked_for() {
        let tmp = tempfile::tempdir().unwrap();
        let per_node = |text: &str| {
            let path = task(tmp.path(), text);
            let read = read(&path, tmp.path()).unwrap();
            read.given.iter().any(|g| g.long == "per-node")
        };
        assert!(per_node("run: x\n"));
        assert!(!per_node("run: x\nrayslurm:\n  ray_job: true\n"));
        assert!(per_node("run: x\nrayslurm:\n  ray_job: false\n"));
    }

    /// `resources:` as the task file gives them: what is taken, what is refused.
    #[test]
    fn resources_are_taken_or_refused_by_their_values() {
        let tmp = tempfile::tempdir().unwrap();
        let outcome = |resources: &str| {
            let path = task(tmp.path(), &format!("run: x\nresources:\n  {resources}\n"));
            read(&path, tmp.path())
                .map(|t| format!("{:?}", t.given))
                .map_err(|e| e.message)
        };
        let taken = |r: &str| outcome(r).unwrap_or_else(|e| panic!("{r}: {e}"));
        let refused = |r: &str, why: &str| {
            let e = outcome(r).expect_err(r);
            assert!(e.contains(why), "{r}: {e}");
        };
        taken("use_spot: false");
        assert!(taken("use_spot: true").contains("use-spot"));
        refused("use_spot: maybe", "give true or false");
        // A cloud's placement is not followed, and says so.
        let path = task(
            tmp.path(),
            "run: x\nresources:\n  cloud: aws\n  region: us-east-1\n  network_tier: best\n",
        );
        let notices = read(&path, tmp.path()).unwrap().notices.join("\n");
        for said in [
            "`resources.cloud: aws` is not followed: launched with rayslurm, the task runs on this Slurm cluster",
            "`resources.region: us-east-1` is not followed",
            "`resources.network_tier` needs nothing here",
        ] {
            assert!(notices.contains(said), "{said}: {notices}");
        }
        assert!(taken("accelerators: {A100: 2}").contains("A100:2"));
        assert!(taken("accelerators: {A100: 2, H100: 8}").contains("{A100:2,H100:8}"));
        assert!(taken("cpus: 4+").contains("cpus"));
        refused("cpus: 0", "cpus");
        refused("cpus: \"inf\"", "cpus");
        assert!(taken("image_id: docker:ubuntu").contains("docker://ubuntu"));
        refused("image_id: \"docker:\"", "docker:IMAGE");
        // A key that needs nothing here gets its own reason.
        let path = task(tmp.path(), "run: x\nresources:\n  labels: {a: b}\n");
        let notices = read(&path, tmp.path()).unwrap().notices;
        assert!(
            notices
                .iter()
                .any(|n| n
                    .contains("`resources.labels` needs nothing here: Slurm jobs carry no labels")),
            "{notices:?}"
        );
    }

    /// A bucket SkyPilot makes (`{name: NAME}`) is a `--storage`, `$VAR`s from `envs:` (read
    /// after them, wherever they are) or `--env`; its cloud store is a notice; a local source
    /// is copied, its name noted as not kept; one with neither, or a var without a value, is
    /// refused by line.
    #[test]
    fn named_storages_are_flags_with_the_tasks_values() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("data")).unwrap();
        let text = "run: x\nfile_mounts:\n  ${ROOT}/ckpt:\n    name: $BUCKET\n    store: gcs\n    mode: MOUNT\n  /copy:\n    name: kept\n    source: ./data\n    mode: COPY\nenvs:\n  ROOT: /out\n  BUCKET:\n";
        let path = task(tmp.path(), text);
        let read = super::read_with_env(&path, tmp.path(), &["BUCKET=sky-ckpt".into()]).unwrap();
        let values = |long: &str| -> Vec<String> {
            read.given
                .iter()
                .filter(|g| g.long == long)
                .flat_map(|g| match &g.value {
                    super::Value::Values(v) => v.clone(),
                    super::Value::Switch(_) => Vec::new(),
                })
                .collect()
        };
        assert_eq!(values("storage"), ["/out/ckpt=sky-ckpt"]);
        let copied = format!("/copy={}", tmp.path().join("./data").display());
        assert_eq!(values("file-mount"), [copied]);
        let notices = read.notices.join("\n");
        assert!(notices.contains("not in `gcs`"), "{notices}");
        assert!(
            notices.contains("the storage `kept` is not kept"),
            "{notices}"
        );
        let err = |text: &str| {
            super::read(&task(tmp.path(), text), tmp.path())
                .unwrap_err()
                .message
        };
        let e = err(text);
        assert!(
            e.contains("task.yaml:3: file_mounts.${ROOT}/ckpt: `$BUCKET` has no value"),
            "{e}"
        );
        let e = err("run: x\nfile_mounts:\n  /o:\n    mode: MOUNT\n");
        assert!(
            e.contains("task.yaml:3: file_mounts./o: give the storage a `name:`"),
            "{e}"
        );
        let e = err("run: x\nfile_mounts:\n  /o:\n    name: a/b\n");
        assert!(e.contains("is not a name"), "{e}");
        let e = err("run: x\nfile_mounts:\n  /o:\n    name: a\n    mode: FAST\n");
        assert!(e.contains("`FAST` is not MOUNT"), "{e}");
    }

    /// Local `file_mounts:` become `--file-mount DEST=SRC` (SRC from the launch's directory);
    /// a source that is not there, or a bucket, is refused by name.
    #[test]
    fn local_file_mounts_are_flags_and_buckets_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("data")).unwrap();
        let path = task(tmp.path(), "run: x\nfile_mounts:\n  /inputs: ./data\n");
        let read = read(&path, tmp.path()).unwrap();
        let want = format!("/inputs={}", tmp.path().join("./data").display());
        assert!(
            read.given
                .iter()
                .any(|g| g.long == "file-mount"
                    && g.value == super::Value::Values(vec![want.clone()])),
            "{:?}",
            read.given
        );
        let path = task(tmp.path(), "run: x\nfile_mounts:\n  /inputs: ./missing\n");
        let err = super::read(&path, tmp.path()).unwrap_err();
        assert!(
            err.message
                .contains("task.yaml:3: file_mounts./inputs: the source"),
            "{}",
            err.message
        );
        let path = task(
            tmp.path(),
            "run: x\nfile_mounts:\n  /inputs: s3://bucket/data\n",
        );
        let err = super::read(&path, tmp.path()).unwrap_err();
        assert!(
            err.message.contains("file_mounts./inputs"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains("buckets and URLs are not mounted"),
            "{}",
            err.message
        );
    }

    /// `workdir: {url:, ref:}` is `--git-workdir URL --git-ref REF`; without `url:` refused.
    #[test]
    fn a_git_workdir_is_its_url_and_ref() {
        let tmp = tempfile::tempdir().unwrap();
        let path = task(
            tmp.path(),
            "run: x\nworkdir:\n  url: file:///r.git\n  ref: v1\n",
        );
        let given = read(&path, tmp.path()).unwrap().given;
        let longs: Vec<&str> = given.iter().map(|g| g.long.as_str()).collect();
        assert!(
            longs.contains(&"git-workdir") && longs.contains(&"git-ref"),
            "{longs:?}"
        );
        assert!(!longs.contains(&"empty-workdir"), "{longs:?}");
        let path = task(tmp.path(), "run: x\nworkdir:\n  ref: v1\n");
        let err = read(&path, tmp.path()).unwrap_err();
        assert!(err.message.contains("needs `url:`"), "{}", err.message);
    }
}
