"""Launch and follow rayslurm runs from Python.

Each function runs the ``rayslurm`` program that this package installs, with ``--json`` where
it prints a result, and returns that result as an object: :func:`launch` a :class:`Job`,
:func:`up` a :class:`Cluster`, :func:`exec` an :class:`ExecJob`. Parameters are the
program's flags by their long names (``num_nodes`` for ``--num-nodes``); a misspelt one is a
``TypeError``, and a value rayslurm refuses raises :class:`RayslurmError` with its message
and exit code (2: nothing was written or submitted). A run executes a shell command line, as
on the command line; no Python function is pickled.

    >>> import rayslurm
    >>> job = rayslurm.launch("sweep", ["python", "train.py", "--lr", "0.1"], num_nodes=3)
    >>> job.wait()["state"], job.exit_code
    ('COMPLETED', 0)
    >>> print(job.logs(tail=5))

On a persistent cluster: ``cluster = rayslurm.up("lab", num_nodes=2)``, then
``rayslurm.exec(cluster, "python trial.py").wait()``, and ``cluster.down()``; one started with
``max_nodes=8`` grows by itself, or with ``cluster.scale("+2")``.
docs/python.md has more.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Union
from typing import overload

from . import _cli
from ._cli import ENDED_STATES, Command, PathLike, RayslurmError, find_bin, is_ended
from ._jobs import EXEC_ENDED_STATES, Cluster, Dashboard, ExecJob, Job, wait_for_run

__all__ = [
    "ENDED_STATES",
    "EXEC_ENDED_STATES",
    "Cluster",
    "Dashboard",
    "ExecJob",
    "Job",
    "RayslurmError",
    "cancel",
    "dashboard",
    "down",
    "exec",
    "find_bin",
    "is_ended",
    "launch",
    "logs",
    "queue",
    "scale",
    "status",
    "up",
    "wait",
]

#: A run: a :class:`Job`, a job id, an experiment name, or a ``launch --json`` result.
Target = Union[Job, str, int, Mapping[str, Any]]
#: A cluster: its name, a :class:`Cluster`, or an :class:`ExecJob` (the cluster it ran on).
ClusterRef = Union[str, Cluster, ExecJob, Mapping[str, Any]]
Env = Union[Mapping[str, Any], Sequence[str]]
EnvFiles = Union[PathLike, Sequence[PathLike]]


def launch(
    exp_name: Optional[str] = None,
    command: Optional[Command] = None,
    *,
    task: Optional[PathLike] = None,
    again: Optional[Union[str, int, Job]] = None,
    partition: Optional[str] = None,
    account: Optional[str] = None,
    qos: Optional[str] = None,
    time: Optional[Union[str, int]] = None,
    sbatch_arg: Optional[Sequence[str]] = None,
    log_dir: Optional[PathLike] = None,
    template: Optional[PathLike] = None,
    num_nodes: Optional[int] = None,
    tasks_per_node: Optional[int] = None,
    cpus_per_task: Optional[int] = None,
    num_gpus: Optional[Union[int, str]] = None,
    gpu_directive: Optional[str] = None,
    mem: Optional[str] = None,
    mem_per_cpu: Optional[str] = None,
    node: Optional[str] = None,
    constraint: Optional[str] = None,
    exclusive: Optional[bool] = None,
    load_env: Optional[str] = None,
    env: Optional[Env] = None,
    env_file: Optional[EnvFiles] = None,
    setup: Optional[str] = None,
    setup_timeout: Optional[int] = None,
    snapshot: bool = False,
    workdir: Optional[PathLike] = None,
    snapshot_max_size: Optional[Union[str, int]] = None,
    no_ray: bool = False,
    per_node: bool = False,
    no_prefix: bool = False,
    interface: Optional[str] = None,
    ip_family: Optional[Union[str, int]] = None,
    ready_timeout: Optional[int] = None,
    stop_grace: Optional[int] = None,
    port_base: Optional[int] = None,
    min_nodes: Optional[int] = None,
    object_store_memory: Optional[int] = None,
    ray_args: Optional[str] = None,
    ray_head_args: Optional[str] = None,
    no_ray_auth: bool = False,
    ray_metrics: bool = False,
    signal: Optional[str] = None,
    requeue: bool = False,
    max_requeues: Optional[int] = None,
    after: Optional[Union[str, int, Job]] = None,
    singleton: bool = False,
    dry_run: bool = False,
) -> Job:
    """Writes an sbatch script for ``command`` and submits it (``rayslurm launch --json``).

    Returns once the job is submitted; the :class:`Job` follows it (``job.wait()``,
    ``job.state``, ``job.logs()``, ``job.cancel()``).

    Args:
        exp_name: the experiment's name (``--exp-name``).
        command: a shell command line, or a list of words, each quoted as it is
            (``["python", "train.py", "--lr", "0.1"]``). ``exp_name`` and ``command`` are
            needed unless ``task`` or ``again`` gives them.
        task: a task file (SkyPilot's YAML, ``rayslurm launch TASK.yaml``); the other
            parameters override what it says (docs/task-files.md).
        again: a recorded run (a :class:`Job`, job id or experiment name) to run again as a
            new run, rendered from its record (``--again``); goes with ``dry_run`` and
            ``log_dir`` only.
        num_gpus: GPUs per node, a count or ``"TYPE:N"`` (``"a100:4"``).
        setup_timeout: seconds the ``setup`` may take on the nodes (default: no limit).
        snapshot, workdir, snapshot_max_size: copy the working directory (or ``workdir``,
            which implies ``snapshot``) at submission; each node runs ``setup`` and the
            command in its own copy. ``snapshot_max_size``: ``"500M"``, ``"2G"``.
        exclusive: ``True`` for ``--exclusive``, ``False`` for ``--no-exclusive``, ``None``
            for rayslurm's default (exclusive).
        env: ``{"KEY": value}`` or ``["KEY=VALUE", ...]``, one ``--env`` each (values are
            masked in errors); ``env_file``: a path or a list of paths, for secrets.
        sbatch_arg: extra sbatch options, one ``--sbatch-arg`` each.
        dry_run: write the script and submit nothing: the job has ``submitted == False``,
            ``job_id is None``, and ``job.script_text`` is the script.
        Every other parameter is the flag of the same name (``_`` for ``-``): see
        ``rayslurm launch --help``; ``False`` and ``None`` leave a flag out.

    Raises:
        RayslurmError: rayslurm refused the input (``returncode`` 2, nothing written or
            submitted), or sbatch failed (1).
        TypeError: a parameter that does not exist, or a value that is not text or a number.
        FileNotFoundError: the rayslurm binary is missing.
    """
    options = dict(locals())
    del options["task"]
    if task is None and again is None and (exp_name is None or command is None):
        raise TypeError("launch() needs exp_name and command, a task file (task=), or again=")
    if command is not None:
        options["command"] = _cli.command_line(command, "launch()")
    for key in ("after", "again"):
        if isinstance(options[key], Job):
            options[key] = options[key]._target()
    args = ["launch", *_cli.flags(options), "--json"]
    if task is not None:
        args += ["--", os.fspath(task)]
    return Job.from_launch(_cli.call_json(args, dict))


def up(
    name: str,
    task: Optional[PathLike] = None,
    *,
    idle_timeout: Optional[Union[str, int]] = None,
    partition: Optional[str] = None,
    account: Optional[str] = None,
    qos: Optional[str] = None,
    time: Optional[Union[str, int]] = None,
    sbatch_arg: Optional[Sequence[str]] = None,
    log_dir: Optional[PathLike] = None,
    template: Optional[PathLike] = None,
    num_nodes: Optional[int] = None,
    tasks_per_node: Optional[int] = None,
    cpus_per_task: Optional[int] = None,
    num_gpus: Optional[Union[int, str]] = None,
    gpu_directive: Optional[str] = None,
    mem: Optional[str] = None,
    mem_per_cpu: Optional[str] = None,
    node: Optional[str] = None,
    constraint: Optional[str] = None,
    exclusive: Optional[bool] = None,
    load_env: Optional[str] = None,
    env: Optional[Env] = None,
    env_file: Optional[EnvFiles] = None,
    setup: Optional[str] = None,
    setup_timeout: Optional[int] = None,
    interface: Optional[str] = None,
    ip_family: Optional[Union[str, int]] = None,
    ready_timeout: Optional[int] = None,
    stop_grace: Optional[int] = None,
    port_base: Optional[int] = None,
    min_nodes: Optional[int] = None,
    object_store_memory: Optional[int] = None,
    ray_args: Optional[str] = None,
    ray_head_args: Optional[str] = None,
    no_ray_auth: bool = False,
    ray_metrics: bool = False,
    max_nodes: Optional[int] = None,
    worker_idle_timeout: Optional[int] = None,
    max_pending_workers: Optional[int] = None,
    replace_failed: bool = False,
    detach: bool = False,
    dry_run: bool = False,
) -> Cluster:
    """Starts a persistent cluster (``rayslurm up NAME --json``) and, unless ``detach``,
    waits until Ray is up on it.

    The parameters are ``launch``'s (see :func:`launch`), with ``idle_timeout``: release
    the allocation after this long without a job (``"30m"``, ``"2h"``; a number is minutes).
    ``task``: a task file (``rayslurm up NAME TASK.yaml``) giving the cluster's nodes,
    resources, envs and setup (its ``run`` is not run: its jobs come with :func:`exec`); the
    other parameters override it.

    ``max_nodes``: an elastic cluster, which grows with worker jobs (one node each) up to this
    many nodes in all, the head's included, when Ray has work it cannot place, and gives each
    back after ``worker_idle_timeout`` seconds idle (300); ``max_pending_workers`` (2) worker
    jobs wait in Slurm's queue at once; ``replace_failed`` replaces one that a node failure or
    a preemption ended. See :func:`scale`.

    Raises:
        RayslurmError: refused input or a name in use (``returncode`` 2), or the cluster's
            job ended before Ray was up (1, with the bootstrap's message).
    """
    options = dict(locals())
    del options["name"], options["task"]
    args = ["up", *_cli.flags(options), "--json", "--", name]
    if task is not None:
        args.append(os.fspath(task))
    result = _cli.call_json(args, dict)
    job_id = result.get("job_id")
    return Cluster(
        name,
        None if job_id is None else str(job_id),
        result.get("log"),
        result.get("script"),
        bool(result.get("submitted", job_id is not None)),
    )


def _cluster_name(cluster: ClusterRef) -> str:
    if isinstance(cluster, Cluster):
        return cluster.name
    if isinstance(cluster, ExecJob):
        return cluster.cluster
    if isinstance(cluster, Mapping):
        name = cluster.get("cluster")
        if not isinstance(name, str):
            raise ValueError(f"not an exec() result (no cluster): {dict(cluster)!r}")
        return name
    if not isinstance(cluster, str):
        raise TypeError(f"a cluster is named by a str or a Cluster, not {cluster!r}")
    return cluster


def exec(  # noqa: A001 (named after rayslurm's command)
    cluster: ClusterRef,
    command: Command,
    *,
    name: Optional[str] = None,
    num_cpus: Optional[float] = None,
    num_gpus: Optional[float] = None,
    memory: Optional[str] = None,
    per_node: bool = False,
    num_nodes: Optional[int] = None,
    setup: Optional[str] = None,
    env: Optional[Env] = None,
    env_file: Optional[EnvFiles] = None,
) -> ExecJob:
    """Submits ``command`` to a persistent cluster as a Ray job (``rayslurm exec -d --json``).

    Returns as soon as the job is submitted: it waits in Ray's queue until its resources are
    free; the :class:`ExecJob` follows it (``wait()``, ``state``, ``logs()``, ``cancel()``).

    Args:
        cluster: the cluster's name (``rayslurm up NAME``) or the :class:`Cluster` of :func:`up`.
        command: a shell command line (run through bash), or a list of words, each passed as
            it is (``["python", "train.py", "--lr", "0.1"]``).
        num_cpus, num_gpus, memory: what the job (with ``per_node``: each rank) needs.
        per_node: run the command once on each of ``num_nodes`` distinct nodes (every node
            of the cluster by default), with the rank variables; ``setup`` runs first on each.
        env, env_file: as for :func:`launch`.

    Raises:
        RayslurmError: refused input or the cluster is not up (``returncode`` 2), or the job
            could not be submitted (1).
    """
    options = {
        "name": name,
        "num_cpus": num_cpus,
        "num_gpus": num_gpus,
        "memory": memory,
        "per_node": per_node,
        "num_nodes": num_nodes,
        "setup": setup,
        "env": env,
        "env_file": env_file,
    }
    args = ["exec", _cluster_name(cluster), *_cli.flags(options), "-d", "--json"]
    if isinstance(command, str):
        args.append(f"--command={command}")
    else:
        args += ["--", *_cli.command_words(command, "exec()")]
    return ExecJob(_cli.call_json(args, dict), per_node=per_node)


def queue(cluster: ClusterRef) -> Dict[str, Any]:
    """A cluster's jobs and resources (``rayslurm queue CLUSTER --json``).

    Returns:
        ``{"name", "job_id", "nodes", "cpus", "cpus_free", "gpus", "gpus_free", "time_left",
        "jobs"}``; each of ``jobs`` is ``{"id", "name", "status", "submitted_at",
        "started_at", "duration_seconds", "exit_code", "command", "log"}``, ``status`` as Ray
        says it (``PENDING``, ``RUNNING``, ``SUCCEEDED``, ``FAILED``, ``STOPPED``).

    Raises:
        RayslurmError: no such cluster or it is not up (``returncode`` 2), or Ray could not
            be asked (1).
    """
    return _cli.call_json(["queue", "--json", "--", _cluster_name(cluster)], dict)


def scale(cluster: ClusterRef, change: str, *, timeout: Optional[int] = None) -> Dict[str, Any]:
    """Grows or shrinks an elastic cluster (``rayslurm scale CLUSTER CHANGE --json``).

    Args:
        cluster: the cluster's name or the :class:`Cluster` of :func:`up` with ``max_nodes``.
        change: ``"+N"`` (N worker jobs more), ``"-N"`` (N fewer: pending ones first, then the
            idlest) or ``"=N"`` (N nodes in all, the head's own allocation included).
        timeout: seconds to wait for the cluster's head to take the request (default 30).

    Returns:
        The cluster's jobs as its head reports them once it took the request: ``{"max_nodes",
        "paused", "updated_at", "jobs"}``; each of ``jobs`` (the head's first) is ``{"job_id",
        "role", "node", "state", "since", "idle_s"}``, as ``status()`` has them under
        ``"elastic"``.

    Raises:
        RayslurmError: no such cluster, not an elastic one, not up, or a change beyond its
            bounds (``returncode`` 2); the head did not take the request in time (1: it was
            withdrawn).
        TypeError: ``change`` is not a str.
    """
    return _cli.scale(_cluster_name(cluster), change, timeout)


def down(cluster: ClusterRef) -> None:
    """Stops a persistent cluster and releases its allocation (``rayslurm down``)."""
    _cli.call_text(["down", "--", _cluster_name(cluster)])


def _target_name(target: Target) -> str:
    if isinstance(target, Job):
        return target._target()
    if isinstance(target, Mapping):
        job_id = target.get("job_id")
        if job_id is None:
            raise ValueError("a dry run's launch() result has no job id: no job to follow")
        return str(job_id)
    if isinstance(target, bool) or not isinstance(target, (str, int)):
        raise TypeError(f"a run is a Job, a job id or an experiment name, not {target!r}")
    return str(target)


def status(target: Optional[Target] = None, *, all_runs: bool = False) -> List[Dict[str, Any]]:
    """The recorded runs and their states, newest first (``rayslurm status --json``).

    Args:
        target: a :class:`Job`, a job id or an experiment name (its runs); ``None`` for
            every recent run.
        all_runs: include runs older than the recent ones (``--all``).

    Returns:
        One dict per run, with ``exp_name, job_id, state, reason, nodes, nodelist,
        elapsed_seconds, exit_code, log, script, state_file, run_dir, submitted_at, workdir,
        command, cluster, source, message, attempts``; an elastic cluster's has ``elastic``
        too (its Slurm jobs, as :func:`scale` returns them).

    Raises:
        RayslurmError: an unknown target (``returncode`` 2) or Slurm could not be asked.
    """
    name = None if target is None else _target_name(target)
    proc = _cli.status_records(name, all_runs)
    result = _cli.parsed(proc)
    if not isinstance(result, list):
        raise RayslurmError(proc.args, 0, f"printed JSON that is not a list: {result!r}")
    return result


def wait(target: Target, poll: float = 5.0, timeout: Optional[float] = None) -> Dict[str, Any]:
    """Waits until a run has ended and returns its final :func:`status` record.

    Args:
        target: a :class:`Job`, a job id, or an experiment name (its newest run).
        poll: seconds between two looks; each is one ``rayslurm status`` (one ``squeue``).
        timeout: give up after this many seconds (``None``: wait as long as it takes).

    Raises:
        TimeoutError: the run had not ended after ``timeout`` seconds.
        RayslurmError: an unknown target, or rayslurm failed otherwise.
    """
    return wait_for_run(_target_name(target), timeout, poll)


def cancel(
    target: Union[Target, Cluster],
    job: Optional[Union[int, ExecJob]] = None,
    *,
    signal: Optional[Union[str, int]] = None,
    all_jobs: bool = False,
) -> None:
    """Cancels a run, or jobs of a cluster (``rayslurm cancel``).

    Args:
        target: a run (:class:`Job`, job id, experiment name) or a cluster (its name or
            :class:`Cluster`: then the cluster itself, unless ``job`` or ``all_jobs``).
        job: with a cluster, the id of one of its jobs (or the :class:`ExecJob`).
        signal: send this signal to the run's command instead (``"USR1"``, a number or a
            ``signal.Signals``); the run goes on.
        all_jobs: with a cluster, cancel every running and pending job (``--all``).
    """
    name = target.name if isinstance(target, Cluster) else _target_name(target)
    options = {"signal": _cli.signal_name(signal), "all": all_jobs}
    args = ["cancel", *_cli.flags(options), "--", name]
    if isinstance(job, ExecJob):
        job = job.job
    if job is not None:
        args.append(str(job))
    _cli.call_text(args)


@overload
def logs(
    target: Union[Target, ClusterRef], job: Optional[int] = None, *, tail: Optional[int] = None
) -> str: ...


@overload
def logs(
    target: Union[Target, ClusterRef],
    job: Optional[int] = None,
    *,
    follow: Literal[True],
    tail: Optional[int] = None,
) -> Iterator[str]: ...


def logs(
    target: Union[Target, ClusterRef],
    job: Optional[int] = None,
    *,
    follow: bool = False,
    tail: Optional[int] = None,
) -> Any:
    """A run's log (``rayslurm logs``), or with ``job`` that of a cluster's job.

    Returns the text; with ``follow=True``, an iterator over its lines as they come, which
    ends when the run (job) ends. ``tail``: only the last lines.
    """
    if isinstance(target, (Cluster, ExecJob)):
        if isinstance(target, ExecJob) and job is None:
            job = target.job
        name = _cluster_name(target)
    else:
        name = _target_name(target)
    args = _cli.logs_args(name, job, tail, follow)
    return _cli.stream(args) if follow else _cli.call_text(args)


def dashboard(target: Union[str, Cluster, Job], *, port: Optional[int] = None) -> Dashboard:
    """Forwards the Ray dashboard of a cluster or of a running ``launch`` run to this machine
    (``rayslurm dashboard``) until the :class:`Dashboard` is closed.

    ``dashboard.url`` is ``http://localhost:PORT``; use it as a context manager::

        with rayslurm.dashboard("lab") as board:
            print(board.url)

    Raises:
        RayslurmError: no such cluster or run, or it has no dashboard (yet).
    """
    if isinstance(target, Cluster):
        name = target.name
    elif isinstance(target, Job):
        name = target._target()
    else:
        name = str(target)
    return Dashboard(name, port)


def main() -> None:
    """Runs the rayslurm binary with this process's arguments (``python -m rayslurm ...``)."""
    binary = find_bin()
    os.execv(binary, [binary, *sys.argv[1:]])
