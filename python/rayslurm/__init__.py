"""Launch and follow rayslurm runs from Python.

Each function runs the ``rayslurm`` program that this package installs, with ``--json`` where
it prints a result, and returns that result as an object: :func:`launch` a :class:`Job`,
:func:`up` a :class:`Cluster`, :func:`exec` an :class:`ExecJob`. Parameters are the
program's flags by their long names (``num_nodes`` for ``--num-nodes``); a misspelt one, or a
value not of its type (``num_nodes="2"``), is a ``TypeError``, and a value rayslurm refuses raises :class:`RayslurmError` with its message
and exit code (2: nothing was written or submitted). A run executes a shell command line, as
on the command line; or, through an :class:`Executor`, a Python function, pickled:

    >>> executor = rayslurm.Executor("logs", num_nodes=2, time=30)
    >>> job = executor.submit(sum, [1, 2, 3])
    >>> job.result()
    6

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
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Union
from typing import overload

from . import _cli, _options
from ._cli import ENDED_STATES, Command, PathLike, RayslurmError, find_bin, is_ended
from ._calls import BatchJob, CallLoadError, ClusterFunctionJob, FunctionJob, JobFailed, JobPaths
from ._calls import LocalJob, RemoteError, RemoteTraceback
from ._clusters import ClusterRef, cluster_name, down, exec, queue, scale, up
from ._executor import Executor
from ._jobs import EXEC_ENDED_STATES, Cluster, Dashboard, ExecJob, Forward, Job, wait_for_run
from ._options import Env, EnvFiles, ExecutorOptions, LaunchOptions, UpOptions
from ._watch import as_completed, wait_all

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "ENDED_STATES",
    "EXEC_ENDED_STATES",
    "CallLoadError",
    "Cluster",
    "BatchJob",
    "ClusterFunctionJob",
    "Dashboard",
    "ExecJob",
    "Executor",
    "Forward",
    "FunctionJob",
    "Job",
    "JobFailed",
    "JobPaths",
    "LocalJob",
    "RayslurmError",
    "RemoteError",
    "RemoteTraceback",
    "as_completed",
    "cancel",
    "dashboard",
    "down",
    "exec",
    "find_bin",
    "forward",
    "is_ended",
    "launch",
    "logs",
    "queue",
    "scale",
    "status",
    "up",
    "wait",
    "wait_all",
]

#: A run: a :class:`Job`, a job id, an experiment name, or a ``launch --json`` result.
Target = Union[Job, str, int, Mapping[str, Any]]


@_options.takes(LaunchOptions, _options.LAUNCH)
def launch(
    exp_name: Optional[str] = None,
    command: Optional[Command] = None,
    *,
    host: Optional[str] = None,
    **options: Unpack[LaunchOptions],
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
            masked in errors); ``env_file``: a path or a list of paths, for secrets;
            ``secret``: as ``env``, one ``--secret`` each (a dry run shows ``***``).
        sbatch_arg: extra sbatch options, one ``--sbatch-arg`` each.
        host: run it on this login node over SSH (``--host``; docs/laptop.md): the paths
            (``workdir``, ``task``, ...) are this machine's, sent along. The job remembers
            it. Without it, ``RAYSLURM_HOST`` of the environment, if set.
        dry_run: write the script and submit nothing: the job has ``submitted == False``,
            ``job_id is None``, and ``job.script_text`` is the script. Slurm is asked
            whether it would take it (``sbatch --test-only``); ``check=True`` raises when it
            would not, or cannot be asked (and implies ``dry_run``).
        Every other parameter is the flag of the same name (``_`` for ``-``): see
        ``rayslurm launch --help``; ``False`` and ``None`` leave a flag out.

    Raises:
        RayslurmError: rayslurm refused the input (``returncode`` 2, nothing written or
            submitted), or sbatch failed (1).
        TypeError: a parameter that does not exist, or a value not of its type.
        FileNotFoundError: the rayslurm binary is missing.
    """
    with _cli.on_host(host):
        return _launch(exp_name, command, _options.given(launch, options))


def _launch(exp_name: Optional[str], command: Optional[Command], options: Dict[str, Any]) -> Job:
    flags = {"exp_name": exp_name, "command": command, **options}
    task = flags.pop("task")
    if task is None and flags["again"] is None and (exp_name is None or command is None):
        raise TypeError("launch() needs exp_name and command, a task file (task=), or again=")
    if command is not None:
        flags["command"] = _cli.command_line(command, "launch()")
    for key in ("after", "again"):
        if isinstance(flags[key], Job):
            flags[key] = flags[key]._target()
    args = ["launch", *_cli.flags(flags), "--json"]
    if task is not None:
        # Never read as a flag (`--` is for the command's words): `./-x.yaml`, not `-x.yaml`.
        task = os.fspath(task)
        args.append(os.path.join(".", task) if task.startswith("-") else task)
    return Job.from_launch(_cli.call_json(args, dict))


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


def status(
    target: Optional[Target] = None, *, all_runs: bool = False, host: Optional[str] = None
) -> List[Dict[str, Any]]:
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
    with _cli.on_host(_cli.host_for(host, target)):
        proc = _cli.status_records(name, all_runs)
    result = _cli.parsed(proc)
    if not isinstance(result, list):
        raise RayslurmError(proc.args, 0, f"printed JSON that is not a list: {result!r}")
    return result


def wait(
    target: Target,
    poll: float = 5.0,
    timeout: Optional[float] = None,
    *,
    host: Optional[str] = None,
) -> Dict[str, Any]:
    """Waits until a run has ended and returns its final :func:`status` record.

    Args:
        target: a :class:`Job`, a job id, or an experiment name (its newest run).
        poll: seconds between two looks; each is one ``rayslurm status`` (one ``squeue``).
        timeout: give up after this many seconds (``None``: wait as long as it takes).

    Raises:
        TimeoutError: the run had not ended after ``timeout`` seconds.
        RayslurmError: an unknown target, or rayslurm failed otherwise.
    """
    with _cli.on_host(_cli.host_for(host, target)):
        return wait_for_run(_target_name(target), timeout, poll)



def cancel(
    target: Union[Target, Cluster],
    job: Optional[Union[int, ExecJob]] = None,
    *,
    signal: Optional[Union[str, int]] = None,
    all_jobs: bool = False,
    host: Optional[str] = None,
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
    with _cli.on_host(_cli.host_for(host, target)):
        _cli.call_text(args)


@overload
def logs(
    target: Union[Target, ClusterRef],
    job: Optional[int] = None,
    *,
    tail: Optional[int] = None,
    host: Optional[str] = None,
) -> str: ...


@overload
def logs(
    target: Union[Target, ClusterRef],
    job: Optional[int] = None,
    *,
    follow: Literal[True],
    tail: Optional[int] = None,
    host: Optional[str] = None,
) -> Iterator[str]: ...


def logs(
    target: Union[Target, ClusterRef],
    job: Optional[int] = None,
    *,
    follow: bool = False,
    tail: Optional[int] = None,
    host: Optional[str] = None,
) -> Any:
    """A run's log (``rayslurm logs``), or with ``job`` that of a cluster's job.

    Returns the text; with ``follow=True``, an iterator over its lines as they come, which
    ends when the run (job) ends. ``tail``: only the last lines.
    """
    if isinstance(target, (Cluster, ExecJob)):
        if isinstance(target, ExecJob) and job is None:
            job = target.job
        name = cluster_name(target)
    else:
        name = _target_name(target)
    args = _cli.logs_args(name, job, tail, follow)
    with _cli.on_host(_cli.host_for(host, target)):
        return _cli.stream(args) if follow else _cli.call_text(args)


def _head_of(target: Union[str, Cluster, Job]) -> str:
    """The name of the cluster or run whose head node ``dashboard`` and ``forward`` reach."""
    if isinstance(target, Cluster):
        return target.name
    if isinstance(target, Job):
        return target._target()
    return str(target)


def dashboard(
    target: Union[str, Cluster, Job], *, port: Optional[int] = None, host: Optional[str] = None
) -> Dashboard:
    """Forwards the Ray dashboard of a cluster or of a running ``launch`` run to this machine
    (``rayslurm dashboard``) until the :class:`Dashboard` is closed.

    ``dashboard.url`` is ``http://localhost:PORT``; use it as a context manager::

        with rayslurm.dashboard("lab") as board:
            print(board.url)

    Raises:
        RayslurmError: no such cluster or run, or it has no dashboard (yet).
    """
    with _cli.on_host(_cli.host_for(host, target)):
        return Dashboard(_head_of(target), port)


def forward(
    target: Union[str, Cluster, Job],
    ports: Sequence[Union[int, str]],
    *,
    host: Optional[str] = None,
) -> Forward:
    """Forwards ports of the head node of a cluster or of a running ``launch`` run (with Ray or
    without) to this machine (``rayslurm forward``) until the :class:`Forward` is closed.

    ``ports``: each ``PORT`` (to the same port here, or to a free one where it is taken),
    ``"PORT:LOCAL"``, or a range ``"9000-9002"`` (``"9000-9002:19000-19002"``).
    ``fwd.urls`` are ``http://localhost:PORT``, one a port, in order::

        with rayslurm.forward(job, [8080]) as fwd:
            print(fwd.urls[0])

    Raises:
        RayslurmError: no such cluster or run, it is not running, or a port is not one.
    """
    if isinstance(ports, (str, int)):
        raise TypeError("ports is a list: [8080], not 8080")
    with _cli.on_host(_cli.host_for(host, target)):
        return Forward(_head_of(target), [str(p) for p in ports])


def main() -> None:
    """Runs the rayslurm binary with this process's arguments (``python -m rayslurm ...``)."""
    binary = find_bin()
    os.execv(binary, [binary, *sys.argv[1:]])
