"""The objects the package's functions return: a run of ``launch`` (:class:`Job`), a job on a
persistent cluster (:class:`ExecJob`), the cluster itself (:class:`Cluster`), a forwarded
dashboard (:class:`Dashboard`) and forwarded ports (:class:`Forward`). What they are asked
about a run or a cluster's job comes from ``_board``: one ``rayslurm status`` for every run this
process follows, one ``rayslurm queue`` for every job of a cluster, at most one every few
seconds; only what cannot change any more is kept for good.
"""

from __future__ import annotations

import os
import signal as signals
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Literal, Mapping, Optional
from typing import TypeVar, Union, overload

from . import _board, _cli
from ._cli import RayslurmError

if TYPE_CHECKING:
    from typing_extensions import ParamSpec

    from ._calls import ClusterFunctionJob

    P = ParamSpec("P")

R = TypeVar("R")

#: What Ray reports for a job of a cluster that will not change any more.
EXEC_ENDED_STATES = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


def _check_poll(poll: float) -> None:
    if poll <= 0:
        raise ValueError(f"poll must be positive, not {poll!r}")


def _pause(poll: float, deadline: Optional[float]) -> None:
    time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))


class Job:
    """One run of ``rayslurm launch``: a Slurm job, followed through ``rayslurm status``.

    Attributes that never change: ``name`` (the experiment name), ``job_id`` (Slurm's; ``None``
    for a dry run), ``script`` and ``log`` (paths), ``submitted`` (``False`` for a dry run).
    Properties asked of rayslurm (see ``_board``): ``state``, ``exit_code``, ``run_dir``.
    """

    #: Whether the board asks for this run with the others (not for a run of this process).
    _on_board = True

    def __init__(
        self,
        name: str,
        job_id: Optional[str],
        script: Optional[str] = None,
        log: Optional[str] = None,
        submitted: bool = True,
    ) -> None:
        self.name = name
        self.job_id = job_id
        self.script = Path(script) if script else None
        self.log = Path(log) if log else None
        self.submitted = submitted
        #: The login node the run is on (``host=``), ``None`` for this machine's.
        self.host = _cli.current_host()
        if submitted and job_id is not None and self._on_board:
            _board.follow(self)

    @classmethod
    def from_launch(cls, result: Mapping[str, Any]) -> "Job":
        """A job from what ``rayslurm launch --json`` printed."""
        job_id = result.get("job_id")
        return cls(
            str(result["exp_name"]),
            None if job_id is None else str(job_id),
            result.get("script"),
            result.get("log"),
            bool(result.get("submitted", job_id is not None)),
        )

    @classmethod
    def from_name(cls, run: Union[str, int], *, host: Optional[str] = None) -> "Job":
        """The job of a recorded run: an experiment name (its newest run) or a job id (on
        the login node ``host``, over SSH, if given).

        Raises:
            RayslurmError: no run matches (``returncode`` 2).
        """
        with _cli.on_host(host):
            record = _board.alone(str(run))
            return cls(
                record["exp_name"], str(record["job_id"]), record["script"], record["log"]
            )

    def __repr__(self) -> str:
        if not self.submitted:
            return f"Job(name={self.name!r}, dry run, script={str(self.script)!r})"
        return f"Job(name={self.name!r}, job_id={self.job_id!r})"

    def _target(self) -> str:
        if self.job_id is None:
            raise ValueError(f"{self!r} was a dry run: it has no Slurm job to ask about")
        return self.job_id

    @property
    def script_text(self) -> str:
        """The sbatch script rayslurm wrote (for a dry run too)."""
        if self.script is None:
            raise ValueError(f"{self!r} names no script")
        return self.script.read_text()

    @_cli.hosted
    def status(self) -> Dict[str, Any]:
        """The run's ``rayslurm status --json`` record (``state``, ``exit_code``, ``nodelist``,
        ``elapsed_seconds``, ``run_dir``, ``message``, ...): asked with every other run this
        process follows, unless heard less than ``_board.FRESH`` seconds ago."""
        return _board.record(self._target())

    @property
    @_cli.hosted
    def state(self) -> str:
        """The run's state: ``PENDING``, ``RUNNING``, then one of :data:`ENDED_STATES`."""
        return str(self.status()["state"])

    @_cli.hosted
    def done(self) -> bool:
        """Whether the run has ended (its state is one of :data:`ENDED_STATES`)."""
        return _cli.is_ended(self.status())

    @property
    @_cli.hosted
    def exit_code(self) -> Optional[int]:
        """The command's exit code once the run has ended and it is known, else ``None``."""
        code = self.status().get("exit_code")
        return None if code is None else int(code)

    @property
    @_cli.hosted
    def run_dir(self) -> Optional[Path]:
        """The run's private directory (``RAYSLURM_RUN_DIR`` inside the job)."""
        found = self.status().get("run_dir")
        return Path(found) if found else None

    @_cli.hosted
    def wait(self, timeout: Optional[float] = None, poll: float = 5.0) -> Dict[str, Any]:
        """Waits until the run has ended and returns its final :meth:`status` record.

        Raises:
            TimeoutError: the run had not ended after ``timeout`` seconds (it goes on).
        """
        return wait_for_run(self._target(), timeout, poll)

    @_cli.hosted
    def cancel(self, signal: Optional[Union[str, int]] = None) -> None:
        """Cancels the run (``rayslurm cancel``): Ray and the command are stopped, the
        allocation released. With ``signal`` (``"USR1"``, ``"TERM"``, or a number), sends that
        signal to the run's command instead, and the run goes on."""
        options = {"signal": _cli.signal_name(signal)}
        _cli.call_text(["cancel", *_cli.flags(options), "--", self._target()])
        _board.forget(self._target())

    @overload
    def logs(self, *, tail: Optional[int] = None) -> str: ...

    @overload
    def logs(self, *, follow: Literal[True], tail: Optional[int] = None) -> Iterator[str]: ...

    @_cli.hosted
    def logs(self, *, follow: bool = False, tail: Optional[int] = None) -> Any:
        """The run's log as text (``tail``: only its last lines); with ``follow=True``, an
        iterator over its lines as they come, ending when the run ends."""
        args = _cli.logs_args(self._target(), None, tail, follow)
        return _cli.stream(args) if follow else _cli.call_text(args)


def wait_for_run(target: str, timeout: Optional[float], poll: float) -> Dict[str, Any]:
    """Asks for the run every ``poll`` seconds (through ``_board``: with the other runs
    followed, at most one call every ``_board.FRESH`` seconds) until it has ended. A Slurm that
    did not answer (a controller restart) gives the run as ``UNKNOWN``: asked again later."""
    _check_poll(poll)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        run = _board.record(target)
        if _cli.is_ended(run):
            return run
        if deadline is not None and time.monotonic() >= deadline:
            state = run.get("state")
            raise TimeoutError(f"run `{target}` has not ended after {timeout} s: it is {state}")
        _pause(poll, deadline)


class ExecJob:
    """One job of ``rayslurm exec`` on a persistent cluster, followed through Ray's queue.

    ``cluster`` and ``job`` (its short id on the cluster) name it; ``name``, ``command``,
    ``log``, ``submission_id`` (Ray's id), ``per_node`` are as submitted. ``state`` is Ray's
    (``PENDING``, ``RUNNING``, ``SUCCEEDED``, ``FAILED``, ``STOPPED``).
    """

    def __init__(self, result: Mapping[str, Any], per_node: bool = False) -> None:
        self.cluster = str(result["cluster"])
        self.job = int(result["job"])
        self.name = result.get("name")
        self.command = result.get("command")
        self.submission_id = result.get("submission_id")
        self.workdir = result.get("workdir")
        self.log = Path(result["log"]) if result.get("log") else None
        self.submitted_at = result.get("submitted_at")
        self.per_node = per_node
        #: The login node the cluster is on (``host=``), ``None`` for this machine's.
        self.host = _cli.current_host()

    def __repr__(self) -> str:
        return f"ExecJob(cluster={self.cluster!r}, job={self.job}, name={self.name!r})"

    @_cli.hosted
    def status(self) -> Dict[str, Any]:
        """The job's row of ``rayslurm queue --json`` (``status``, ``exit_code``, ...): one
        ``queue`` for all the cluster's jobs, unless heard less than ``_board.FRESH`` seconds
        ago."""
        row = _board.row(self.cluster, self.job)
        if row is not None:
            return row
        said = f"cluster `{self.cluster}` lists no job {self.job}"
        raise RayslurmError(["queue", self.cluster], 1, said)

    @property
    @_cli.hosted
    def state(self) -> str:
        """Ray's status of the job."""
        return str(self.status()["status"])

    @_cli.hosted
    def done(self) -> bool:
        """Whether the job has ended (``SUCCEEDED``, ``FAILED`` or ``STOPPED``)."""
        return self.state in EXEC_ENDED_STATES

    @property
    @_cli.hosted
    def exit_code(self) -> Optional[int]:
        """The command's exit code once known, else ``None``."""
        code = self.status().get("exit_code")
        return None if code is None else int(code)

    @_cli.hosted
    def wait(self, timeout: Optional[float] = None, poll: float = 2.0) -> Dict[str, Any]:
        """Waits until the job has ended and returns its final :meth:`status` row.

        Raises:
            TimeoutError: the job had not ended after ``timeout`` seconds (it goes on).
        """
        _check_poll(poll)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            row = self.status()
            if row.get("status") in EXEC_ENDED_STATES:
                return row
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{self!r} has not ended after {timeout} s: it is {row.get('status')}"
                )
            _pause(poll, deadline)

    @_cli.hosted
    def cancel(self) -> None:
        """Stops the job (``rayslurm cancel CLUSTER JOB``); the cluster stays up."""
        _cli.call_text(["cancel", "--", self.cluster, str(self.job)])
        _board.forget_cluster(self.cluster)

    @overload
    def logs(self, *, tail: Optional[int] = None) -> str: ...

    @overload
    def logs(self, *, follow: Literal[True], tail: Optional[int] = None) -> Iterator[str]: ...

    @_cli.hosted
    def logs(self, *, follow: bool = False, tail: Optional[int] = None) -> Any:
        """The job's output as text; with ``follow=True``, an iterator over its lines until
        the job ends."""
        args = _cli.logs_args(self.cluster, self.job, tail, follow)
        return _cli.stream(args) if follow else _cli.call_text(args)


class Cluster:
    """A persistent cluster of ``rayslurm up``: a Slurm allocation running Ray, for jobs of
    :func:`rayslurm.exec`. ``name`` names it, ``job_id`` is its allocation's Slurm job
    (``None`` for a dry run, whose ``script_text`` is the script)."""

    def __init__(
        self,
        name: str,
        job_id: Optional[str] = None,
        log: Optional[str] = None,
        script: Optional[str] = None,
        submitted: bool = True,
        *,
        host: Optional[str] = None,
    ) -> None:
        self.name = name
        self.job_id = job_id
        self.log = Path(log) if log else None
        self.script = Path(script) if script else None
        self.submitted = submitted
        #: The login node the cluster is on (``host=``, else the one of the call that made
        #: this object), ``None`` for this machine's.
        self.host = _cli.host_for(host, None) or _cli.current_host()

    @property
    def script_text(self) -> str:
        """The sbatch script rayslurm wrote."""
        if self.script is None:
            raise ValueError(f"{self!r} names no script")
        return self.script.read_text()

    def __repr__(self) -> str:
        return f"Cluster(name={self.name!r}, job_id={self.job_id!r})"

    @_cli.hosted
    def queue(self) -> Dict[str, Any]:
        """The cluster's jobs and resources (``rayslurm queue --json``)."""
        found: Dict[str, Any] = _cli.call_json(["queue", "--json", "--", self.name], dict)
        return found

    @_cli.hosted
    def scale(
        self, change: str, *, timeout: Optional[int] = None, worker_type: Optional[str] = None
    ) -> Dict[str, Any]:
        """Grows or shrinks an elastic cluster (``up(..., max_nodes=N)``; ``rayslurm scale``).

        ``change`` is ``"+N"`` (N worker jobs more), ``"-N"`` (N fewer) or ``"=N"`` (N nodes
        in all, the head's own included). Returns once the cluster's head has taken the request
        (within ``timeout`` seconds, 30 by default): the cluster's jobs as the head then reports
        them, ``{"max_nodes", "paused", "updated_at", "jobs"}``, each job ``{"job_id", "role",
        "node", "state", "since", "idle_s"}``. A cluster that is not elastic, or a change beyond
        its bounds, raises :class:`RayslurmError` (``returncode`` 2); a request the head did not
        take in time is withdrawn and raises it with ``returncode`` 1. ``worker_type``: the
        type ``"+N"`` and ``"=N"`` grow (default: the first).
        """
        return _cli.scale(self.name, change, timeout, worker_type)

    @_cli.hosted
    def submit(
        self, fn: "Callable[P, R]", *args: "P.args", **kwargs: "P.kwargs"
    ) -> "ClusterFunctionJob[R]":
        """Runs ``fn(*args, **kwargs)`` as a job of this cluster (``rayslurm exec``), in
        seconds: on a node of the cluster, with its Ray connected, in this process's
        directory. Returns its job at once; ``job.result()`` waits for the value (or raises
        as :meth:`FunctionJob.result`). ``rayslurm.Cluster(name)`` names a cluster that is up.
        """
        from ._executor import submit_to_cluster

        job: "ClusterFunctionJob[R]" = submit_to_cluster(self.name, fn, args, kwargs)
        return job

    @_cli.hosted
    def down(self) -> None:
        """Stops the cluster and releases its allocation (``rayslurm down``)."""
        _cli.call_text(["down", "--", self.name])


_Self = TypeVar("_Self", bound="_Forwarding")


class _Forwarding:
    """A running forward of the rayslurm program (``dashboard``, ``forward``): ``args``, which
    prints ``count`` URLs, one a line, then forwards until Ctrl-C."""

    def __init__(self, args: List[str], count: int) -> None:
        self.argv = [_cli.find_bin(), *args]
        # stderr to a file: the program says what it forwards and then nothing, but a pipe
        # nobody reads could still fill.
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen(
            self.argv,
            env=_cli.environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            universal_newlines=True,
        )
        assert self._proc.stdout is not None
        self.urls: List[str] = []
        for _ in range(count):
            line = self._proc.stdout.readline().strip()
            if not line.startswith("http"):
                code = self._proc.wait()
                self._proc.stdout.close()
                self._stderr.seek(0)
                said = self._stderr.read()
                self._stderr.close()
                raise RayslurmError(self.argv, code, said, line)
            self.urls.append(line)

    def close(self) -> None:
        """Stops forwarding (Ctrl-C to the program, as on a terminal)."""
        if self._proc.poll() is None:
            os.kill(self._proc.pid, signals.SIGINT)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc.stdout:
            self._proc.stdout.close()
        self._stderr.close()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Dashboard(_Forwarding):
    """A running ``rayslurm dashboard``: the Ray dashboard forwarded to ``url`` on this
    machine until :meth:`close` (or the end of a ``with`` block)."""

    def __init__(self, target: str, port: Optional[int] = None) -> None:
        super().__init__(["dashboard", *_cli.flags({"port": port}), "--", target], 1)
        self.url: str = self.urls[0]

    def __repr__(self) -> str:
        return f"Dashboard(url={self.url!r})"


def _forwards(spec: str) -> int:
    """How many ports ``PORT[:LOCAL]`` forwards (``9000-9002``: 3); the program checks it."""
    first, _, last = spec.split(":")[0].partition("-")
    try:
        return int(last) - int(first) + 1 if last else 1
    except ValueError:
        return 1


class Forward(_Forwarding):
    """A running ``rayslurm forward``: ports of a run's head node forwarded to ``urls`` on this
    machine (one a port, in the order given) until :meth:`close` (or the end of a ``with``
    block)."""

    def __init__(self, target: str, ports: List[str]) -> None:
        count = sum(max(_forwards(p), 1) for p in ports)
        super().__init__(["forward", "--", target, *ports], count)

    def __repr__(self) -> str:
        return f"Forward(urls={self.urls!r})"
