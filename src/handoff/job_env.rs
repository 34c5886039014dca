//! The environment variables rayslurm sets inside jobs, for the user's command and Ray's
//! processes: the documented contract (README, "Inside the job") plus the run's own marks.

/// Set for the user command (and Ray's processes) inside the allocation.
pub(crate) const RAY_ADDRESS: &str = "RAY_ADDRESS";
pub(crate) const NODE_RANK: &str = "RAYSLURM_NODE_RANK";
pub(crate) const NODE_IPS: &str = "RAYSLURM_NODE_IPS";
pub(crate) const NUM_NODES: &str = "RAYSLURM_NUM_NODES";
pub(crate) const NUM_GPUS_PER_NODE: &str = "RAYSLURM_NUM_GPUS_PER_NODE";
pub(crate) const HEAD_IP: &str = "RAYSLURM_HEAD_IP";
/// How many times the run was put back in the queue before this attempt (0 on the first;
/// Slurm leaves its own `SLURM_RESTART_COUNT` unset then).
pub(crate) const RESTART_COUNT: &str = "RAYSLURM_RESTART_COUNT";
/// The run's private directory on the shared filesystem, the same for every attempt (and for
/// the runs of a chain, `--after`): where a program keeps its checkpoints.
pub(crate) const RUN_DIR: &str = "RAYSLURM_RUN_DIR";
pub(crate) const PYTHONUNBUFFERED: &str = "PYTHONUNBUFFERED";
/// Marks every process a bootstrap starts, so that it stops exactly those and no others.
pub(crate) const RUN_MARK: &str = "RAYSLURM_RUN_MARK";
/// Marks every program run in the run's pyxis container on a node (and the `srun` that runs
/// it): the node's last task out removes the container.
pub(crate) const IN_CONTAINER: &str = "RAYSLURM_IN_CONTAINER";
/// Ray's temp root (Ray reads it in place of /tmp).
pub(crate) const RAY_TMPDIR: &str = "RAY_TMPDIR";
/// The temp dir of Ray's processes too: what they leave there (Python multiprocessing's
/// `pymp-*` dirs, say) goes when the temp root goes.
pub(crate) const TMPDIR: &str = "TMPDIR";
/// Ray's token authentication: `token` on every cluster rayslurm starts (`disabled` with
/// `--no-ray-auth`), for every node's `ray start` and for the command.
pub(crate) const RAY_AUTH_MODE: &str = "RAY_AUTH_MODE";
/// The file holding the run's token (mode 0600, in the run's private directory): Ray and the
/// command read it there, so the token is never on a command line or in the environment.
pub(crate) const RAY_AUTH_TOKEN_PATH: &str = "RAY_AUTH_TOKEN_PATH";
/// A token by value, which Ray would prefer to the file: removed from what the job inherits.
pub(crate) const RAY_AUTH_TOKEN: &str = "RAY_AUTH_TOKEN";

/// The rank environment of every node (and task) of a run: the documented contract (README,
/// "The rank environment"). Ranks come from Slurm (`SLURM_PROCID`, `SLURM_LOCALID`, the node's
/// place in the job's node list), never from matching IPs.
pub(crate) const RANK: &str = "RANK";
pub(crate) const WORLD_SIZE: &str = "WORLD_SIZE";
pub(crate) const LOCAL_RANK: &str = "LOCAL_RANK";
pub(crate) const MASTER_ADDR: &str = "MASTER_ADDR";
pub(crate) const MASTER_PORT: &str = "MASTER_PORT";
/// SkyPilot's names for the same, so that a SkyPilot `run:` section works unchanged.
pub(crate) const SKYPILOT_NODE_RANK: &str = "SKYPILOT_NODE_RANK";
pub(crate) const SKYPILOT_NODE_IPS: &str = "SKYPILOT_NODE_IPS";
pub(crate) const SKYPILOT_NUM_NODES: &str = "SKYPILOT_NUM_NODES";
pub(crate) const SKYPILOT_NUM_GPUS_PER_NODE: &str = "SKYPILOT_NUM_GPUS_PER_NODE";
/// SkyPilot's task variables (`bootstrap::user_code::skypilot`): the task's ID, the cluster's
/// description (JSON) and the user, in setup and run.
pub(crate) const SKYPILOT_TASK_ID: &str = "SKYPILOT_TASK_ID";
pub(crate) const SKYPILOT_CLUSTER_INFO: &str = "SKYPILOT_CLUSTER_INFO";
pub(crate) const SKYPILOT_USER: &str = "SKYPILOT_USER";
/// SkyPilot's names in `setup` for three of the rank variables: (run name, setup name).
pub(crate) const SKYPILOT_SETUP_NAMES: &[(&str, &str)] = &[
    (SKYPILOT_NODE_RANK, "SKYPILOT_SETUP_NODE_RANK"),
    (SKYPILOT_NODE_IPS, "SKYPILOT_SETUP_NODE_IPS"),
    (
        SKYPILOT_NUM_GPUS_PER_NODE,
        "SKYPILOT_SETUP_NUM_GPUS_PER_NODE",
    ),
];
/// Read by the head's dashboard agent: how long a job may wait in Ray's queue before Ray fails
/// it (15 min by default). A persistent cluster's jobs wait as long as the allocation lives.
pub(crate) const RAY_JOB_START_TIMEOUT_SECONDS: &str = "RAY_JOB_START_TIMEOUT_SECONDS";
/// Ray's config switch for its metrics: `false` keeps the dashboard agent from serving its
/// Prometheus port, which takes no token (rayslurm's default; `--ray-metrics` serves it).
pub(crate) const RAY_ENABLE_METRICS_COLLECTION: &str = "RAY_enable_metrics_collection";
/// Read when Ray stops a job: seconds from SIGTERM to SIGKILL (3 by default); a persistent
/// cluster gives its jobs the stop grace.
pub(crate) const RAY_JOB_STOP_WAIT_TIME_S: &str = "RAY_JOB_STOP_WAIT_TIME_S";
/// Read by `ray start`: how long it waits for the node's raylet to register (30 s by default),
/// after which it fails "The current node timed out during startup".
pub(crate) const RAY_RAYLET_START_WAIT_TIME_S: &str = "RAY_raylet_start_wait_time_s";
/// Read by the raylet: how long it waits for its node's dashboard agent to register (30 s by
/// default), after which it exits; an agent's Python imports on a loaded node take longer.
pub(crate) const RAY_AGENT_REGISTER_TIMEOUT_MS: &str = "RAY_agent_register_timeout_ms";

/// What a variable of the rank environment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RankValue {
    /// The node's place among the run's nodes (0: the head, or an exec job's first rank).
    NodeRank,
    NumNodes,
    /// Every node's IP, one a line, in node-rank order.
    NodeIps,
    /// The run's head (Ray's head in a launch; an exec job's ranks keep their cluster's).
    HeadIp,
    GpusPerNode,
    /// The first node's IP and a free port on it, for frameworks' rendezvous.
    MasterAddr,
    MasterPort,
    /// The task's rank among all tasks, their number, and its rank on its node.
    Rank,
    WorldSize,
    LocalRank,
    /// `1`.
    Unbuffered,
}

/// The rank environment, variable by variable: the one list the bootstrap's ranks and a
/// cluster's `exec --per-node` ranks are both given.
pub(crate) const RANK_VARIABLES: &[(&str, RankValue)] = &[
    (NODE_RANK, RankValue::NodeRank),
    (NUM_NODES, RankValue::NumNodes),
    (NODE_IPS, RankValue::NodeIps),
    (HEAD_IP, RankValue::HeadIp),
    (NUM_GPUS_PER_NODE, RankValue::GpusPerNode),
    (MASTER_ADDR, RankValue::MasterAddr),
    (MASTER_PORT, RankValue::MasterPort),
    (RANK, RankValue::Rank),
    (WORLD_SIZE, RankValue::WorldSize),
    (LOCAL_RANK, RankValue::LocalRank),
    (SKYPILOT_NODE_RANK, RankValue::NodeRank),
    (SKYPILOT_NODE_IPS, RankValue::NodeIps),
    (SKYPILOT_NUM_NODES, RankValue::NumNodes),
    (SKYPILOT_NUM_GPUS_PER_NODE, RankValue::GpusPerNode),
    (PYTHONUNBUFFERED, RankValue::Unbuffered),
];
