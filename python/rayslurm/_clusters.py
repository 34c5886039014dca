"""The persistent clusters: :func:`up` one, :func:`exec` jobs onto it, :func:`queue`,
:func:`scale`, :func:`down` (``rayslurm up``, ``exec``, ``queue``, ``scale``, ``down``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Union

from . import _cli, _options
from ._cli import Command, PathLike
from ._jobs import Cluster, ExecJob
from ._options import Env, EnvFiles, UpOptions

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: A cluster: its name, a :class:`Cluster`, or an :class:`ExecJob` (the cluster it ran on).
ClusterRef = Union[str, Cluster, ExecJob, Mapping[str, Any]]


@_options.takes(UpOptions, _options.UP)
def up(
    name: str,
    task: Optional[PathLike] = None,
    *,
    host: Optional[str] = None,
    **options: Unpack[UpOptions],
) -> Cluster:
    """Starts a persistent cluster (``rayslurm up NAME --json``) and, unless ``detach``,
    waits until Ray is up on it.

    The parameters are ``launch``'s (see :func:`launch`), with ``idle_timeout``: release
    the allocation after this long without a job (``"30m"``, ``"2h"``; a number is minutes).
    ``host``: start it on this login node over SSH (``--host``); the :class:`Cluster`
    remembers it. ``task``: a task file (``rayslurm up NAME TASK.yaml``) giving the cluster's nodes,
    resources, envs and setup (its ``run`` is not run: its jobs come with :func:`exec`); the
    other parameters override it.

    ``max_nodes``: an elastic cluster, which grows with worker jobs (one node each) up to this
    many nodes in all, the head's included, when Ray has work it cannot place, and gives each
    back after ``worker_idle_timeout`` seconds idle (300); ``max_pending_workers`` (2) worker
    jobs wait in Slurm's queue at once; ``replace_failed`` replaces one that a node failure or
    a preemption ended. ``worker_type``: kinds of worker job, each ``"NAME: OPTIONS"`` with
    ``launch``'s long options on top of the cluster's (``["gpu: -p gpu --num-gpus 1
    --max-workers 2"]``); the head grows the type that can hold each piece of Ray's pending
    work (``--worker-type``, docs/clusters.md). See :func:`scale`.

    Raises:
        RayslurmError: refused input or a name in use (``returncode`` 2), or the cluster's
            job ended before Ray was up (1, with the bootstrap's message).
    """
    args = ["up", *_cli.flags(_options.given(up, options)), "--json", "--", name]
    if task is not None:
        args.append(os.fspath(task))
    with _cli.on_host(host):
        result = _cli.call_json(args, dict)
        job_id = result.get("job_id")
        return Cluster(
            name,
            None if job_id is None else str(job_id),
            result.get("log"),
            result.get("script"),
            bool(result.get("submitted", job_id is not None)),
        )


def cluster_name(cluster: ClusterRef) -> str:
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
    secret: Optional[Env] = None,
    host: Optional[str] = None,
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
        secret: as ``env``, each a ``--secret``: the job's shell reads it from a file only you
            can read, so it never reaches Ray's job table or logs (an ``env`` value does).
        host: the login node of the cluster, over SSH (``--host``); a :class:`Cluster` of
            ``up(host=...)`` knows its own.

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
        "secret": secret,
    }
    args = ["exec", cluster_name(cluster), *_cli.flags(options), "-d", "--json"]
    if isinstance(command, str):
        args.append(f"--command={command}")
    else:
        args += ["--", *_cli.command_words(command, "exec()")]
    with _cli.on_host(_cli.host_for(host, cluster)):
        return ExecJob(_cli.call_json(args, dict), per_node=per_node)


def queue(cluster: ClusterRef, *, host: Optional[str] = None) -> Dict[str, Any]:
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
    with _cli.on_host(_cli.host_for(host, cluster)):
        found: Dict[str, Any] = _cli.call_json(
            ["queue", "--json", "--", cluster_name(cluster)], dict
        )
    return found


def scale(
    cluster: ClusterRef,
    change: str,
    *,
    timeout: Optional[int] = None,
    worker_type: Optional[str] = None,
    host: Optional[str] = None,
) -> Dict[str, Any]:
    """Grows or shrinks an elastic cluster (``rayslurm scale CLUSTER CHANGE --json``).

    Args:
        cluster: the cluster's name or the :class:`Cluster` of :func:`up` with ``max_nodes``.
        change: ``"+N"`` (N worker jobs more), ``"-N"`` (N fewer: pending ones first, then the
            idlest) or ``"=N"`` (N nodes in all, the head's own allocation included).
        timeout: seconds to wait for the cluster's head to take the request (default 30).
        worker_type: with ``"+N"`` or ``"=N"``, the worker type to grow (``up(...,
            worker_type=[...])``; default: the first).

    Returns:
        The cluster's jobs as its head reports them once it took the request: ``{"max_nodes",
        "paused", "updated_at", "jobs"}``; each of ``jobs`` (the head's first) is ``{"job_id",
        "role", "worker_type", "node", "state", "since", "idle_s"}``, as ``status()`` has them under
        ``"elastic"``.

    Raises:
        RayslurmError: no such cluster, not an elastic one, not up, or a change beyond its
            bounds (``returncode`` 2); the head did not take the request in time (1: it was
            withdrawn).
        TypeError: ``change`` is not a str.
    """
    with _cli.on_host(_cli.host_for(host, cluster)):
        return _cli.scale(cluster_name(cluster), change, timeout, worker_type)


def down(cluster: ClusterRef, *, host: Optional[str] = None) -> None:
    """Stops a persistent cluster and releases its allocation (``rayslurm down``)."""
    with _cli.on_host(_cli.host_for(host, cluster)):
        _cli.call_text(["down", "--", cluster_name(cluster)])
