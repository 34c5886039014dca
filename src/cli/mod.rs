//! The command-line surface: clap derive structs only, no I/O, one file a group of commands
//! ([`launch`]: `launch` and the job flags `up` shares; [`runs`]; [`clusters`]; [`utility`]).
//!
//! Values are checked for form here (counts are numbers); everything that needs the
//! environment, config files or cross-checks happens when `commands/` resolves them into each
//! command's settings. Only `main.rs` and `commands/` use this module.

use clap::{CommandFactory, Parser, Subcommand};

use crate::handoff::bootstrap_args::BootstrapArgs;

mod clusters;
mod container;
pub(crate) mod given_words;
mod heading;
mod launch;
pub(crate) mod parse;
#[cfg(test)]
mod python_api;
mod ray_cluster;
mod runs;
mod utility;
mod values;
#[cfg(test)]
mod variables;
pub(crate) mod view;
pub(crate) mod worker_type;

pub(crate) use clusters::{
    DashboardArgs, DownArgs, ElasticArgs, ExecArgs, ForwardArgs, QueueArgs, ScaleArgs, UpArgs,
};
pub(crate) use container::ContainerArgs;
pub(crate) use launch::{ClusterArgs, JobArgs, LaunchArgs, LongRunArgs, SnapshotArgs};
pub(crate) use ray_cluster::{AttachArgs, RsyncUpArgs, SubmitArgs};
pub(crate) use runs::{CancelArgs, LogsArgs, StatusArgs};
pub(crate) use utility::{CompletionsArgs, GpusArgs, ManArgs, PortsArgs, RelayArgs, TrustArgs};

/// `rayslurm --version`: the version, the commit and the target it was built for.
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("RAYSLURM_BUILD_COMMIT"),
    " ",
    env!("RAYSLURM_BUILD_TARGET"),
    ")"
);

const ABOUT: &str = "Run Ray (and other multi-node programs) on a Slurm cluster with one command";

#[derive(Debug, Parser)]
#[command(
    name = "rayslurm",
    version = VERSION,
    about = ABOUT,
    propagate_version = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,

    /// Print only results (job id, JSON), no progress.
    #[arg(long, short, global = true, help_heading = view::GLOBAL_HEADING)]
    pub(crate) quiet: bool,

    /// Echo each command run (sbatch, squeue, srun, ...) on stderr, ready to paste, and each
    /// request to a cluster's Jobs API.
    #[arg(long, short, global = true, conflicts_with = "quiet", help_heading = view::GLOBAL_HEADING)]
    pub(crate) verbose: bool,

    /// Reach a cluster's head through the allocation (an srun step), not directly
    ///
    /// Requests that carry a cluster's token always go this way unless the head is this host
    /// (whose listeners rayslurm can check); the flag also sends an open cluster's
    /// (`--no-ray-auth`) requests this way (`RAYSLURM_RELAY=always` is the same; `never`
    /// forbids the relay, and is refused where the token would go unchecked).
    #[arg(long, global = true, help_heading = view::GLOBAL_HEADING)]
    pub(crate) via_allocation: bool,

    /// Run the command on this login node over SSH, from this machine (a laptop)
    ///
    /// `[USER@]HOST`, or an alias of ~/.ssh/config. One SSH connection is opened (your keys,
    /// agent, ProxyJump and prompts as ssh has them) and kept for 10 minutes; rayslurm copies
    /// itself to your private state directory there on first use, and your workdir, task
    /// file and file mounts go through the same connection. See docs/laptop.md.
    /// `RAYSLURM_HOST`, or `host` in ~/.config/rayslurm/config.toml, gives it too.
    #[arg(long, global = true, value_name = "[USER@]HOST", help_heading = view::GLOBAL_HEADING)]
    pub(crate) host: Option<String>,

    /// The options whose value came from their variable (id, variable), for errors that name
    /// where a value came from (filled by [`parse::parse`]).
    #[arg(skip)]
    pub(crate) from_variables: Vec<(String, String)>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Render an sbatch script and submit it.
    #[command(
        override_usage = "rayslurm launch [OPTIONS] --exp-name <NAME> --command <CMD>\n       rayslurm launch --again <RUN> [--follow] [--json] [--dry-run] [--log-dir <DIR>]"
    )]
    Launch(Box<LaunchArgs>),
    /// Print the built-in sbatch template, to start a custom one from it.
    Template,
    /// Print (or follow) the log of a run.
    Logs(LogsArgs),
    /// Show runs and their states, newest first.
    Status(StatusArgs),
    /// Cancel a run, or a job of a cluster.
    Cancel(CancelArgs),
    /// Start a persistent Ray cluster: wait in the queue once, then `exec` many jobs onto it.
    Up(Box<UpArgs>),
    /// Run a command on a cluster as a Ray job (queued by Ray until resources are free).
    Exec(Box<ExecArgs>),
    /// Run a script on a cluster, as `ray submit` does: copied there, run as a job, followed.
    ///
    /// The script is copied into the cluster's private directory (readable by you alone) and
    /// runs there as a job of the cluster (`python SCRIPT ARGS`, `bash` for a `.sh`), queued by
    /// Ray as `exec` jobs are; `submit` follows its output and exits with its exit code.
    Submit(Box<SubmitArgs>),
    /// Copy a file or directory into the cluster's files directory, which every node sees.
    ///
    /// As `ray rsync_up`: DST is relative to the cluster's files directory, in its private
    /// directory on the shared filesystem; jobs of the cluster find it as
    /// `$RAYSLURM_CLUSTER_FILES/DST`.
    RsyncUp(RsyncUpArgs),
    /// A shell on the cluster's head node, inside its allocation (or one command: `-- CMD`).
    ///
    /// `srun --overlap` into the cluster's job on its head node, with a terminal when this is
    /// one (`--pty`), without one otherwise, so that a script can pipe commands into it.
    Attach(AttachArgs),
    /// Show a cluster's jobs, nodes, free resources and time left.
    Queue(QueueArgs),
    /// Show the site's GPUs: partitions, GPU types, nodes, total and free (one sinfo call).
    ///
    /// The types are the names `--num-gpus TYPE:N` and a task file's `accelerators` are
    /// matched to (SkyPilot's `A100-80GB` is a site's `a100_80gb`). FREE counts the GPUs not in
    /// use on nodes that take jobs now (idle or mixed).
    Gpus(GpusArgs),
    /// Grow or shrink an elastic cluster (`up --max-nodes`): +N, -N or =N nodes.
    ///
    /// Asks the cluster's head for N worker jobs more (`+N`), N fewer (`-N`: pending ones first,
    /// then the idlest), or for N nodes in all (`=N`, the head's own allocation included), and
    /// waits until the head has taken the request; then prints the cluster's jobs as the head
    /// reports them. The head still keeps within --max-nodes and --max-pending-workers, and
    /// gives back a worker job that stays idle for --worker-idle-timeout.
    Scale(ScaleArgs),
    /// Stop a cluster: its running jobs, Ray, and its allocation.
    Down(DownArgs),
    /// Forward a cluster's (or a run's) Ray dashboard to a port on this machine.
    Dashboard(DashboardArgs),
    /// Forward ports of a run's (or a cluster's) head node to ports on this machine.
    ///
    /// For what a run serves itself (a task file's `ports`, a web app, TensorBoard), with Ray
    /// or without (`--no-ray`, `--per-node`). Each local port serves only your own
    /// connections, and each connection goes through the run's allocation to the head node,
    /// where it is made only to a port that no other user listens on. Forwards until Ctrl-C.
    Forward(ForwardArgs),
    /// Trust a project file's settings that run code as you (`load_env`, `template`, ...).
    ///
    /// A `./rayslurm.toml` in the working directory gives its site settings (partition,
    /// account, time, ...) to every run from there, whoever wrote it. Its settings that run
    /// code as you or weaken a run's security (`load_env`, `template`, `ray_args`,
    /// `ray_head_args`, `ray_auth`, `log_dir`, `container_image`, `container_mounts`,
    /// `container_workdir`) are used only when no one else could have
    /// written the file, or once you trusted it with this command. It shows each of those
    /// settings with its value and the file's SHA-256, and asks; what is recorded (in your
    /// state directory) is the SHA-256 of exactly what it showed: a file changed since, even
    /// while you read, needs trusting again. `--digest` trusts without asking, only the file
    /// whose SHA-256 is the one given.
    Trust(TrustArgs),
    /// End the SSH connection `--host` keeps open to a login node.
    Disconnect,
    /// Print a shell completion script (bash, zsh, fish, ...).
    Completions(CompletionsArgs),
    /// Print the manual page (roff), of rayslurm or of one of its commands.
    Man(ManArgs),
    /// On a cluster's head: relay bytes between stdin/stdout and a local port.
    #[command(hide = true)]
    Relay(RelayArgs),
    /// On a node: choose the ports of many runs at once, hold them all and print them (a test).
    #[command(hide = true)]
    Ports(PortsArgs),
    /// A submitted Python call's outcome, as its bytes (the Python API, from a laptop).
    #[command(hide = true)]
    CallOutcome {
        /// The run (its job id).
        #[arg(required_unless_present = "dir")]
        run: Option<String>,
        /// The directory the outcome is in, instead (a cluster job's copy of its call).
        #[arg(long, conflicts_with = "run")]
        dir: Option<std::path::PathBuf>,
    },
    /// Inside the allocation: start Ray on every node, run the command, stop Ray.
    #[command(hide = true)]
    Bootstrap(Box<BootstrapArgs>),
    /// On a node: run a program in a private view of the node's filesystem with more in it.
    #[command(hide = true)]
    RootView(crate::handoff::root_view::RootViewArgs),
}

/// The command line users see: without the hidden commands (`bootstrap`, `relay`, `ports`, `root-view`, `call-outcome`), which
/// completion scripts would otherwise offer.
pub(crate) fn public_command() -> clap::Command {
    let full = view::shaped(Cli::command());
    clap::Command::new("rayslurm")
        .version(VERSION)
        .about(ABOUT)
        .propagate_version(true)
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env_vars;
    use crate::handoff::cluster::ClusterOptions;

    /// Every configuration variable, with a value that would change what it configures.
    const EVERY_VARIABLE: &[(&str, &str)] = &[
        (env_vars::PARTITION, "env-partition"),
        (env_vars::ACCOUNT, "env-account"),
        (env_vars::QOS, "env-qos"),
        (env_vars::CONSTRAINT, "env-constraint"),
        (env_vars::TIME, "7:00"),
        (env_vars::LOG_DIR, "/env/logs"),
        (env_vars::LOAD_ENV, "source env"),
        (env_vars::TEMPLATE, "/env/t.tera"),
        (env_vars::GPU_DIRECTIVE, "gres"),
        (env_vars::INTERFACE, "envif0"),
        (env_vars::IP_FAMILY, "6"),
        (env_vars::OBJECT_STORE_MEMORY, "12345"),
        (env_vars::RAY_ARGS, "--env-args=1"),
        (env_vars::RAY_HEAD_ARGS, "--env-head=1"),
        (env_vars::READY_TIMEOUT, "77"),
        (env_vars::STOP_GRACE, "33"),
        (env_vars::NO_RAY_AUTH, "true"),
        (env_vars::IDLE_TIMEOUT, "9m"),
        (env_vars::CONTAINER_IMAGE, "/env/image.sqsh"),
        (env_vars::CONTAINER_MOUNTS, "/env/a,/env/b:/b:ro"),
        (env_vars::CONTAINER_WORKDIR, "/env/w"),
        (env_vars::CONTAINER_RUNTIME, "apptainer"),
    ];

    /// In a child process (this test binary again, the one safe way to set variables for a
    /// test) with every configuration variable set: the bootstrap's command line, as the
    /// script writes it, parses to exactly what it says, while `launch` does take the
    /// variables (so they were live).
    #[test]
    fn configuration_variables_never_change_what_the_bootstrap_parses() {
        const CHILD: &str = "RAYSLURM_UNIT_TEST_CHILD";
        let head = BootstrapArgs::head("/logs/x.state.json".into(), "/logs/x.d".into(), 2, {
            let mut cluster = ClusterOptions::default();
            (cluster.nodes.ready_timeout, cluster.nodes.stop_grace) = (5, 6);
            cluster
        });
        if std::env::var_os(CHILD).is_some() {
            for (name, value) in EVERY_VARIABLE {
                assert_eq!(std::env::var(name).as_deref(), Ok(*value), "{name}");
            }
            let mut argv = vec!["rayslurm".to_owned(), "bootstrap".to_owned()];
            argv.extend(head.to_words());
            let Command::Bootstrap(parsed) = Cli::try_parse_from(&argv).unwrap().command else {
                panic!("not the bootstrap");
            };
            assert_eq!(*parsed, head);
            let launch = ["rayslurm", "launch", "--exp-name", "x", "--command", "y"];
            let Command::Launch(launch) = Cli::try_parse_from(launch).unwrap().command else {
                panic!("not launch");
            };
            assert_eq!(launch.cluster.interface.as_deref(), Some("envif0"));
            assert!(launch.cluster.no_ray_auth);
            assert_eq!(launch.cluster.ready_timeout, Some(77));
            let container = &launch.container;
            assert_eq!(
                container.container_image.as_deref(),
                Some("/env/image.sqsh")
            );
            assert_eq!(container.container_mounts.len(), 2);
            assert!(container.container_runtime.is_some());
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "cli::tests::configuration_variables_never_change_what_the_bootstrap_parses",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .envs(EVERY_VARIABLE.iter().copied())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{said}");
        assert!(said.contains("1 passed"), "the child ran no test: {said}");
    }

    #[test]
    fn the_public_command_has_every_visible_command_and_no_hidden_one() {
        let public: Vec<String> = public_command()
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        let full = Cli::command();
        let visible: Vec<String> = full
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name().to_owned())
            .collect();
        assert_eq!(public, visible);
        assert!(!public.contains(&"bootstrap".to_owned()));
        assert_eq!(
            public_command().get_arguments().count(),
            full.get_arguments().count()
        );
    }
}
