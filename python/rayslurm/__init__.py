"""Launch and follow rayslurm runs from Python.

A thin layer over the ``rayslurm`` program that this package installs: each function runs
the program with ``--json`` and returns what it printed, parsed. Keyword arguments become
the program's flags, so everything ``rayslurm launch --help`` lists works here too. A run
executes a shell command line, as on the command line; no Python function is pickled.

    >>> import rayslurm
    >>> run = rayslurm.launch(exp_name="sweep", command="python train.py", num_nodes=3)
    >>> rayslurm.wait(run)["exit_code"]
    0

On a persistent cluster (``rayslurm up sweep``), :func:`exec` submits a job and
:func:`queue` shows the cluster's jobs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "ENDED_STATES",
    "RayslurmError",
    "exec",
    "find_bin",
    "is_ended",
    "launch",
    "queue",
    "status",
    "wait",
]

_NAME = "rayslurm"

#: States after which a run will not change any more, as ``status`` reports them: Slurm's
#: final job states, ``STOPPED`` (scancel, time limit or SIGTERM, from the run's final state
#: file) and ``ENDED`` (the job left Slurm and nothing said how). ``UNKNOWN`` (Slurm could
#: not be asked) and ``COMPLETING`` are not final.
ENDED_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "ENDED",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "STOPPED",
        "TIMEOUT",
    }
)

#: Flags `launch` sets itself or that would make it print something other than one result.
_NOT_FOR_LAUNCH = {
    "json": "launch() always passes --json",
    "follow": "launch() returns once the job is submitted; call wait() on its result to follow it",
    "cancel_on_interrupt": "only goes with --follow; call wait() on launch()'s result instead",
    "quiet": "launch() returns the result and keeps rayslurm's progress messages out of the way",
}

#: Flags `exec` sets itself or that would make it print something other than one result.
_NOT_FOR_EXEC = {
    "json": "exec() always passes --json",
    "detach": "exec() always returns once the job is submitted (-d); queue() shows how it goes",
    "quiet": "exec() returns the result and keeps rayslurm's progress messages out of the way",
    "args": "give the command as exec()'s second argument, as a list of words",
}

Target = Union[str, int, Mapping[str, Any]]


class RayslurmError(RuntimeError):
    """The rayslurm program failed: it exited with a non-zero code or printed no JSON.

    ``returncode`` is 2 for input rayslurm refused before submitting anything, 1 for a
    failure of Slurm or of the job. ``stderr`` holds rayslurm's own explanation.

    ``env`` values are secrets (API keys, tokens): ``argv`` shows them as ``KEY=***``, and
    any that ``stderr`` or ``stdout`` repeats is replaced by ``***`` too, so that neither the
    message nor a log of the exception ever holds one.
    """

    def __init__(
        self, argv: Sequence[str], returncode: int, stderr: str, stdout: str = ""
    ) -> None:
        self.argv, secrets = _masked(argv)
        self.returncode = returncode
        self.stderr = _without(stderr, secrets)
        self.stdout = _without(stdout, secrets)
        said = self.stderr.strip() or "(nothing on stderr)"
        super().__init__(f"`{shlex.join(self.argv)}` exited with code {returncode}:\n{said}")


#: The flags whose ``KEY=VALUE`` values are masked wherever the package shows a command line.
_SECRET_FLAGS = ("--env",)


def _masked(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """``argv`` with every ``--env KEY=VALUE`` (or ``--env=KEY=VALUE``) as ``KEY=***``, and
    the values masked."""
    shown: List[str] = []
    secrets: List[str] = []
    after_flag = False
    for arg in map(str, argv):
        flag, eq, rest = arg.partition("=")
        if after_flag or (eq and flag in _SECRET_FLAGS):
            pair = arg if after_flag else rest
            key, has_value, value = pair.partition("=")
            if has_value:
                if value:
                    secrets.append(value)
                pair = f"{key}=***"
            elif pair:
                # No `=`: which part is the value cannot be told, so all of it is hidden.
                secrets.append(pair)
                pair = "***"
            arg = pair if after_flag else f"{flag}={pair}"
        shown.append(arg)
        after_flag = arg in _SECRET_FLAGS
    return shown, secrets


def _without(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``***`` (longest first)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _search_dirs() -> List[Path]:
    """Where an installed wheel puts the binary, most specific first."""
    package = Path(__file__).resolve().parent
    dirs = [
        package,
        # pip install --target DIR: the package is DIR/rayslurm, the binary DIR/bin/rayslurm.
        package.parent / "bin",
    ]
    scripts = [sysconfig.get_path("scripts")]
    try:
        scripts.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:
        pass
    dirs.extend(Path(d) for d in scripts if d)
    return dirs


def find_bin() -> str:
    """Returns the path of the rayslurm binary.

    Looks beside this package, in the scripts directory of the interpreter's installation
    (a venv's ``bin``, then the user's ``~/.local/bin``), then on ``PATH``.

    Raises:
        FileNotFoundError: no executable rayslurm was found in any of those places.
    """
    dirs = _search_dirs()
    for directory in dirs:
        candidate = directory / _NAME
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which(_NAME)
    if on_path:
        return on_path
    looked = ", ".join(str(d) for d in dirs)
    raise FileNotFoundError(
        f"the rayslurm binary was not found (looked in {looked} and on PATH); "
        "reinstall the rayslurm wheel or put a rayslurm binary on PATH"
    )


def _flag_value(key: str, value: Any, shown: bool = True) -> str:
    if isinstance(value, (str, int, float, os.PathLike)) and not isinstance(value, bool):
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    what = f"{value!r}" if shown else f"a {type(value).__name__}"
    raise TypeError(f"{key}={what}: a flag value must be a str, a number or a path")


def _flags(options: Mapping[str, Any]) -> List[str]:
    """Turns keyword arguments into flags: ``exp_name="x"`` -> ``--exp-name=x``.

    ``True`` gives the bare flag, ``False`` and ``None`` nothing, a list or tuple the flag once
    per item, and a mapping the flag once per ``KEY=VALUE`` (for ``env``). Values are joined
    with ``=``, so a value that starts with ``-`` is never read as another flag.
    """
    flags: List[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            flags.append(flag)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                # `env` values are secrets: an error names the key, never the value.
                flags.append(f"{flag}={k}={_flag_value(f'{key}[{k!r}]', v, shown=False)}")
        elif isinstance(value, (list, tuple)):
            flags.extend(f"{flag}={_flag_value(key, item)}" for item in value)
        else:
            flags.append(f"{flag}={_flag_value(key, value)}")
    return flags


def _run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    argv = [find_bin(), *args]
    return subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        check=False,
    )


def _parsed(proc: subprocess.CompletedProcess[str]) -> Any:
    """The JSON a successful run printed."""
    if proc.returncode != 0:
        raise RayslurmError(proc.args, proc.returncode, proc.stderr, proc.stdout)
    try:
        return json.loads(proc.stdout)
    except ValueError:
        said = f"printed no JSON: {proc.stdout!r}\n{proc.stderr}"
        raise RayslurmError(proc.args, proc.returncode, said, proc.stdout) from None


def launch(exp_name: str, command: str, **options: Any) -> Dict[str, Any]:
    """Writes an sbatch script for ``command`` and submits it (``rayslurm launch --json``).

    Args:
        exp_name: names the job and its files (letters, digits, ``_ - . +``).
        command: the shell command the head node runs, as typed into bash there.
        **options: any other ``rayslurm launch`` flag, by its long name with ``_`` for ``-``:
            ``num_nodes=3``, ``partition="gpu"``, ``dry_run=True``, ``no_ray=True``,
            ``env={"SEED": 1}`` or ``env=["SEED=1"]``, ``sbatch_arg=["--mail-type=END"]``,
            ``log_dir="/shared/logs"``. Secrets go best in a file, ``env_file="secrets.env"``
            (``KEY=VALUE`` lines): ``env`` values are on rayslurm's command line, which ``ps``
            shows to every user of the machine.

    Returns:
        ``{"job_id", "exp_name", "script", "log", "submitted"}``; ``job_id`` is ``None`` and
        ``submitted`` ``False`` for a dry run. Pass it to :func:`wait` to wait for the run.

    Raises:
        RayslurmError: rayslurm refused the input (``returncode`` 2, nothing submitted) or
            sbatch failed (1); the message carries rayslurm's explanation.
        ValueError: a flag that launch() cannot pass (``follow``, ``json``, ...).
        FileNotFoundError: the rayslurm binary is missing.
    """
    for key in options:
        if key in _NOT_FOR_LAUNCH:
            raise ValueError(f"launch(): `{key}` is not accepted: {_NOT_FOR_LAUNCH[key]}")
    args = ["launch", *_flags({"exp_name": exp_name, "command": command, **options}), "--json"]
    result = _parsed(_run(args))
    if not isinstance(result, dict):
        raise RayslurmError(args, 0, f"printed JSON that is not an object: {result!r}")
    return result


def _status_args(target: Optional[Target], all_runs: bool) -> List[str]:
    args = ["status", "--json"]
    if all_runs:
        args.append("--all")
    if target is not None:
        args += ["--", _target_name(target)]
    return args


def status(target: Optional[Target] = None, *, all_runs: bool = False) -> List[Dict[str, Any]]:
    """The recorded runs and their states, newest first (``rayslurm status --json``).

    Args:
        target: a job id, an experiment name (its runs) or a :func:`launch` result; ``None``
            for every recent run.
        all_runs: include runs older than the recent ones (``--all``).

    Returns:
        One dict per run, with ``exp_name, job_id, state, reason, nodes, nodelist,
        elapsed_seconds, exit_code, log, script, state_file, submitted_at, workdir, command,
        source, message``.

    Raises:
        RayslurmError: an unknown target (``returncode`` 2) or Slurm could not be asked.
    """
    result = _parsed(_run(_status_args(target, all_runs)))
    if not isinstance(result, list):
        raise RayslurmError(["status"], 0, f"printed JSON that is not a list: {result!r}")
    return result


def _target_name(target: Target) -> str:
    if isinstance(target, Mapping):
        job_id = target.get("job_id")
        if job_id is None:
            raise ValueError("a dry run's launch() result has no job id: no job to follow")
        return str(job_id)
    return str(target)


def is_ended(run: Mapping[str, Any]) -> bool:
    """Whether a :func:`status` record's state is final (see :data:`ENDED_STATES`)."""
    words = str(run.get("state") or "").split()
    return bool(words) and words[0].rstrip("+").upper() in ENDED_STATES


def wait(target: Target, poll: float = 5.0, timeout: Optional[float] = None) -> Dict[str, Any]:
    """Waits until a run has ended and returns its final :func:`status` record.

    Args:
        target: a :func:`launch` result, a job id, or an experiment name (its newest run).
        poll: seconds between two looks; each is one ``rayslurm status`` (one ``squeue``).
        timeout: give up after this many seconds (``None``: wait as long as it takes).

    Returns:
        The run's record; ``state`` is one of :data:`ENDED_STATES` and ``exit_code`` the
        command's own exit code when it is known.

    Raises:
        TimeoutError: the run had not ended after ``timeout`` seconds.
        RayslurmError: an unknown target, or rayslurm failed otherwise.
    """
    if poll <= 0:
        raise ValueError(f"poll must be positive, not {poll!r}")
    name = _target_name(target)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        proc = _run(_status_args(name, all_runs=False))
        try:
            runs = _parsed(proc)
        except RayslurmError:
            # squeue did not answer (a controller restart): rayslurm still prints every run,
            # as UNKNOWN, and exits 1. Ask again later; anything else is an error.
            if proc.returncode != 1 or not proc.stdout.lstrip().startswith("["):
                raise
            runs = json.loads(proc.stdout)
        if not runs:
            said = f"no run matches `{name}`"
            raise RayslurmError(proc.args, proc.returncode, said, proc.stdout)
        run = runs[0]
        if is_ended(run):
            return run
        if deadline is not None and time.monotonic() >= deadline:
            state = run.get("state")
            raise TimeoutError(f"run `{name}` has not ended after {timeout} s: it is {state}")
        pause = poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic()))
        time.sleep(pause)


def _cluster_name(cluster: Union[str, Mapping[str, Any]]) -> str:
    """A cluster's name, or that of the cluster an :func:`exec` result ran on."""
    if isinstance(cluster, Mapping):
        name = cluster.get("cluster")
        if not isinstance(name, str):
            raise ValueError(f"not an exec() result (no cluster): {dict(cluster)!r}")
        return name
    if not isinstance(cluster, str):
        raise TypeError(f"a cluster is named by a str, not {cluster!r}")
    return cluster


def exec(  # noqa: A001 (named after rayslurm's command)
    cluster: str, command: Union[str, Sequence[str]], **options: Any
) -> Dict[str, Any]:
    """Submits ``command`` to a persistent cluster as a Ray job (``rayslurm exec -d --json``).

    Returns as soon as the job is submitted: it waits in Ray's queue until its resources are
    free, and :func:`queue` shows how it goes.

    Args:
        cluster: the cluster's name (from ``rayslurm up NAME``).
        command: a shell command line (run through bash), or a list of words, each passed as
            it is (``["python", "train.py", "--lr", "0.1"]``).
        **options: any other ``rayslurm exec`` flag, by its long name with ``_`` for ``-``:
            ``name="trial-3"``, ``num_cpus=2``, ``num_gpus=0.5``, ``memory="4G"``,
            ``env={"LR": 0.1}``, ``env_file="secrets.env"`` (for secrets: off the command line).

    Returns:
        ``{"cluster", "job", "name", "submission_id", "command", "workdir", "log",
        "submitted_at"}``; ``job`` is the job's short id on its cluster (``rayslurm logs
        CLUSTER JOB``, ``rayslurm cancel CLUSTER JOB``).

    Raises:
        RayslurmError: rayslurm refused the input or the cluster is not up (``returncode`` 2),
            or the job could not be submitted (1).
        ValueError: a flag that exec() cannot pass (``json``, ``detach``, ...).
        FileNotFoundError: the rayslurm binary is missing.
    """
    for key in options:
        if key in _NOT_FOR_EXEC:
            raise ValueError(f"exec(): `{key}` is not accepted: {_NOT_FOR_EXEC[key]}")
    args = ["exec", _cluster_name(cluster), *_flags(options), "-d", "--json"]
    if isinstance(command, str):
        args.append(f"--command={command}")
    else:
        words = [_flag_value("command", w) for w in command]
        if not words:
            raise ValueError("exec(): the command has no words")
        args += ["--", *words]
    result = _parsed(_run(args))
    if not isinstance(result, dict):
        raise RayslurmError(args, 0, f"printed JSON that is not an object: {result!r}")
    return result


def queue(cluster: Union[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """A cluster's jobs and resources (``rayslurm queue CLUSTER --json``).

    Args:
        cluster: the cluster's name, or an :func:`exec` result (its cluster).

    Returns:
        ``{"name", "job_id", "nodes", "cpus", "cpus_free", "gpus", "gpus_free", "time_left",
        "jobs"}``; each of ``jobs`` is ``{"id", "name", "status", "submitted_at",
        "started_at", "duration_seconds", "exit_code", "command", "log"}``, ``status`` as Ray
        says it (``PENDING``, ``RUNNING``, ``SUCCEEDED``, ``FAILED``, ``STOPPED``).

    Raises:
        RayslurmError: no such cluster or it is not up (``returncode`` 2), or Ray could not
            be asked (1).
    """
    args = ["queue", "--json", "--", _cluster_name(cluster)]
    result = _parsed(_run(args))
    if not isinstance(result, dict):
        raise RayslurmError(args, 0, f"printed JSON that is not an object: {result!r}")
    return result


def main() -> None:
    """Runs the rayslurm binary with this process's arguments (``python -m rayslurm ...``)."""
    binary = find_bin()
    os.execv(binary, [binary, *sys.argv[1:]])
