"""The job of a submitted function (:class:`FunctionJob`), what its failures raise
(:class:`JobFailed`, :class:`CallLoadError`, :class:`RemoteError`), and the pickling of a call.

The call is pickled with ``cloudpickle`` (or, where only Ray is installed, Ray's copy of it,
``ray.cloudpickle``), imported only when a function is submitted. ``_call.py`` runs it on the
head and writes its outcome into the run's private directory (``RAYSLURM_RUN_DIR``):
:meth:`FunctionJob.result` waits for the run's end (one ``rayslurm status`` a poll) and reads
it from there.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import pickle
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Generic, Mapping, NamedTuple, Optional, Sequence
from typing import Tuple
from typing import TypeVar

from . import _board, _cli
from ._cli import RayslurmError
from ._jobs import ExecJob, Job, wait_for_run

R = TypeVar("R")

#: Where ``_call.py`` writes the outcome, in the run's private directory.
RESULT = Path("rayslurm-call") / "result.pickle"
#: How many of the log's last lines a :class:`JobFailed` shows.
TAIL = 20


def pickler() -> Tuple[Any, str]:
    """The pickler module and its import name: ``cloudpickle``, else ``ray.cloudpickle``."""
    for name in ("cloudpickle", "ray.cloudpickle"):
        try:
            return importlib.import_module(name), name
        except ImportError:
            continue
    raise ImportError(
        "submitting a function needs cloudpickle (`pip install cloudpickle`; Ray's own copy, "
        "ray.cloudpickle, serves too where Ray is installed)"
    )


def versions(name: str, module: Any) -> Dict[str, str]:
    """This side's Python and pickler versions, written next to the pickled call."""
    return {
        "python": platform.python_version(),
        "pickler": name,
        "pickler_version": str(getattr(module, "__version__", "unknown")),
    }


class RemoteTraceback(Exception):
    """The traceback of an exception raised in the job, as its ``__cause__``."""

    def __init__(self, text: str, host: str) -> None:
        super().__init__(text)
        self.text = text
        self.host = host

    def __str__(self) -> str:
        return f"the traceback on {self.host}:\n\"\"\"\n{self.text.rstrip()}\n\"\"\""


class RemoteError(Exception):
    """An exception of the job's that could not be pickled back: its type and text."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name


class JobFailed(RuntimeError):
    """The run ended without a result: cancelled, timed out, killed, preempted for good, or
    failed before the function returned or raised.

    ``job_id``, ``state`` (Slurm's, as ``rayslurm status`` tells it), ``exit_code`` and
    ``log_tail`` (the log's last lines) say what happened.
    """

    def __init__(
        self,
        job_id: Optional[str],
        state: str,
        exit_code: Optional[int],
        log_tail: str,
        why: str = "without a result",
    ) -> None:
        self.job_id = job_id
        self.state = state
        self.exit_code = exit_code
        self.log_tail = log_tail
        code = "" if exit_code is None else f", exit code {exit_code}"
        super().__init__(
            f"job {job_id} ended {state}{code} {why}; the last lines of its log:\n{log_tail}"
        )


class CallLoadError(JobFailed):
    """The nodes' Python could not load the pickled call (another Python or pickler version,
    a module the function needs missing there). ``here`` and ``there`` are the versions:
    ``there`` the submitting side's (``python``, ``pickler``, ``pickler_version``)."""

    def __init__(self, ended: "Ended", outcome: Dict[str, Any]) -> None:
        self.here: Dict[str, str] = dict(outcome.get("here", {}))
        self.there: Dict[str, str] = dict(outcome.get("there", {}))
        nodes = _side(self.here)
        submitted = _side(self.there)
        why = (
            f"before the call: {outcome.get('host', 'the head')} ({nodes}) could not load the "
            f"call pickled here ({submitted}): {outcome.get('load_error')}"
        )
        super().__init__(ended.job_id, ended.state, ended.exit_code, ended.tail(), why)


def _side(versions: Dict[str, str]) -> str:
    return (
        f"Python {versions.get('python', '?')}, {versions.get('pickler', 'cloudpickle')} "
        f"{versions.get('pickler_version', '?')}"
    )


class Ended(NamedTuple):
    """How a call's job ended, for the errors: its id, state, exit code and log's tail."""

    job_id: Optional[str]
    state: str
    exit_code: Optional[int]
    tail: Callable[[], str]


def read_outcome(path: Optional[Path], fetch: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """What ``_call.py`` wrote at ``path``; ``{"ok": False, "missing": True}`` without it.
    With a login node (``host=``), the file is there: ``rayslurm call-outcome FETCH...`` gives
    its bytes over the SSH connection."""
    missing: Dict[str, Any] = {"ok": False, "missing": True}
    if _cli.current_host() is not None and fetch is not None:
        data = _cli.call_bytes(["call-outcome", *fetch])
        return missing if data is None else dict(pickle.loads(data))
    if path is None or not path.is_file():
        return missing
    with path.open("rb") as f:
        outcome: Dict[str, Any] = pickle.load(f)
    return outcome


def value_of(outcome: Dict[str, Any], ended: Callable[[], Ended]) -> Any:
    """The call's value, or what it raised, or :class:`JobFailed` (``ended`` says how)."""
    error = error_of(outcome, ended)
    if error is None:
        return pickle.loads(outcome["value"])
    raise error


def error_of(outcome: Dict[str, Any], ended: Callable[[], Ended]) -> Optional[BaseException]:
    """What :func:`value_of` would raise, ``None`` for a value."""
    if outcome.get("ok"):
        return None
    if "load_error" in outcome:
        return CallLoadError(ended(), outcome)
    if outcome.get("missing"):
        how = ended()
        return JobFailed(how.job_id, how.state, how.exit_code, how.tail())
    return raised(outcome)


def raised(outcome: Dict[str, Any]) -> BaseException:
    """The exception the function raised, its remote traceback as its ``__cause__``."""
    error: Any = None
    if outcome.get("exception") is not None:
        try:
            error = pickle.loads(outcome["exception"])
        except Exception:  # noqa: BLE001 - a class missing here: sent on as text
            error = None
    if not isinstance(error, BaseException):
        error = RemoteError(str(outcome.get("type")), str(outcome.get("message")))
    error.__cause__ = RemoteTraceback(str(outcome.get("traceback")), str(outcome.get("host")))
    found: BaseException = error
    return found


class JobPaths(NamedTuple):
    """The files of a run: ``script``, ``log``, ``run_dir`` (its private directory), and
    ``result`` (where the call's outcome is written, in ``run_dir``)."""

    script: Optional[Path]
    log: Optional[Path]
    run_dir: Optional[Path]
    result: Optional[Path]


class _Outcome(Generic[R]):
    """What a submitted call's job answers, wherever it ran: its value or exception, read from
    the outcome ``_call.py`` wrote, and its output. The job kinds give ``_outcome`` (wait, then
    read), ``_ended_how`` (how it ended, for :class:`JobFailed`) and ``logs``."""

    def _outcome(self, timeout: Optional[float], poll: float) -> Dict[str, Any]:
        raise NotImplementedError

    def _ended_how(self) -> Ended:
        raise NotImplementedError

    if TYPE_CHECKING:  # the job kind's own, found first

        def logs(self, *, tail: Optional[int] = None) -> str: ...

    def _answer(self, timeout: Optional[float], poll: float) -> R:
        value: R = value_of(self._outcome(timeout, poll), self._ended_how)
        return value

    def _error(self, timeout: Optional[float], poll: float) -> Optional[BaseException]:
        return error_of(self._outcome(timeout, poll), self._ended_how)

    def _tail(self) -> str:
        try:
            return self.logs(tail=TAIL)
        except RayslurmError as error:
            return f"(no log: {error.message})"

    def stdout(self) -> str:
        """The job's output: one log holds stdout and stderr together."""
        return self.logs()

    def stderr(self) -> str:
        """The job's output, as :meth:`stdout` (one log holds both streams)."""
        return self.logs()


class FunctionJob(Job, _Outcome[R]):
    """A function submitted with :meth:`Executor.submit`: a :class:`Job` (``job_id``,
    ``state``, ``done()``, ``cancel()``, ``logs()``, ``wait()``) whose :meth:`result` is the
    function's value. Once the run has ended its final record is kept (it cannot change), so
    that ``state``, ``done()`` and ``result()`` ask Slurm no more."""

    _final: Optional[Dict[str, Any]] = None

    def __repr__(self) -> str:
        return f"FunctionJob(name={self.name!r}, job_id={self.job_id!r})"

    @_cli.hosted
    def status(self) -> Dict[str, Any]:
        if self._final is not None:
            return self._final
        record = _board.record(self._target())
        self._ended(record)
        return record

    def _ended(self, record: Dict[str, Any]) -> bool:
        """Keeps ``record`` if it is final; whether it is."""
        if _cli.is_ended(record):
            self._final = record
            return True
        return False

    @_cli.hosted
    def wait(self, timeout: Optional[float] = None, poll: float = 5.0) -> Dict[str, Any]:
        if self._final is None:
            self._ended(wait_for_run(self._target(), timeout, poll))
        assert self._final is not None
        return self._final

    def result(self, timeout: Optional[float] = None, poll: float = 5.0) -> R:
        """Waits until the run has ended; returns the function's value, or raises its
        exception (with the remote traceback as ``__cause__``).

        Raises:
            JobFailed: the run ended without a result (:class:`CallLoadError`: the nodes could
                not load the call).
            TimeoutError: the run had not ended after ``timeout`` seconds (it goes on).
        """
        return self._answer(timeout, poll)

    def exception(
        self, timeout: Optional[float] = None, poll: float = 5.0
    ) -> Optional[BaseException]:
        """Waits as :meth:`result`; returns what it would raise (a :class:`JobFailed` too),
        or ``None`` when the function returned."""
        return self._error(timeout, poll)

    def _ended_how(self) -> Ended:
        record = self.wait()
        return Ended(self.job_id, str(record.get("state")), record.get("exit_code"), self._tail)

    @_cli.hosted
    def _outcome(self, timeout: Optional[float], poll: float) -> Dict[str, Any]:
        run_dir = self.wait(timeout, poll).get("run_dir")
        return read_outcome(Path(run_dir) / RESULT if run_dir else None, ["--", self._target()])

    @property
    def paths(self) -> JobPaths:
        """The run's files (asks rayslurm for ``run_dir`` until the run has ended)."""
        found = self.status().get("run_dir")
        run_dir = Path(found) if found else None
        return JobPaths(self.script, self.log, run_dir, run_dir / RESULT if run_dir else None)


class BatchJob(FunctionJob[R]):
    """A call submitted inside ``with executor.batch():``: submitted with the block's other
    calls as one job array at the block's end, where it becomes its task's job (``job_id``
    ``JOBID_N``). Before that it has no job id, and whatever needs one raises
    ``RuntimeError``."""

    _never: Optional[str] = None

    def __init__(self, name: str) -> None:
        self._job_id: Optional[str] = None
        super().__init__(name, None)

    @property
    def job_id(self) -> Optional[str]:
        """The task's Slurm job id (``JOBID_N``), known once the batch is submitted."""
        if self._job_id is None:
            why = self._never or (
                "it is submitted at the end of its `with executor.batch():` block, with the "
                "block's other calls as one job array"
            )
            raise RuntimeError(f"{self.name!r} has no job id: {why}")
        return self._job_id

    @job_id.setter
    def job_id(self, value: Optional[str]) -> None:
        self._job_id = value

    def __repr__(self) -> str:
        shown = self._job_id or ("never submitted" if self._never else "not submitted yet")
        return f"BatchJob(name={self.name!r}, job_id={shown!r})"

    def _submitted_as(self, task: FunctionJob[Any]) -> None:
        """Becomes the task ``task`` of the submitted array."""
        self.name, self.script, self.log = task.name, task.script, task.log
        self.job_id = task.job_id
        self.host = task.host
        _board.follow(self)


class ClusterFunctionJob(ExecJob, _Outcome[R]):
    """A function submitted to a persistent cluster (:meth:`Cluster.submit`): an
    :class:`ExecJob` (``state`` is Ray's: ``PENDING``, ``RUNNING``, ``SUCCEEDED``, ``FAILED``,
    ``STOPPED``) with :class:`FunctionJob`'s ``result()``, ``exception()``, ``stdout()``,
    ``stderr()`` and ``paths``. Its outcome is written beside its call, in the private copy
    ``exec --snapshot`` made of it (``copy``)."""

    def __init__(self, result: Mapping[str, Any]) -> None:
        super().__init__(result)
        snapshot = result.get("snapshot") or {}
        self.copy = Path(snapshot["path"]) if snapshot.get("path") else None

    def __repr__(self) -> str:
        return f"ClusterFunctionJob(cluster={self.cluster!r}, job={self.job}, name={self.name!r})"

    @property
    def job_id(self) -> str:
        """``CLUSTER:JOB``: the cluster's name and the job's id on it."""
        return f"{self.cluster}:{self.job}"

    def result(self, timeout: Optional[float] = None, poll: float = 2.0) -> R:
        """Waits until the job has ended; returns the function's value or raises its
        exception (the remote traceback as ``__cause__``), or :class:`JobFailed`."""
        return self._answer(timeout, poll)

    def exception(
        self, timeout: Optional[float] = None, poll: float = 2.0
    ) -> Optional[BaseException]:
        """What :meth:`result` would raise, or ``None``."""
        return self._error(timeout, poll)

    def _ended_how(self) -> Ended:
        row = self.status()
        return Ended(self.job_id, str(row.get("status")), row.get("exit_code"), self._tail)

    @_cli.hosted
    def _outcome(self, timeout: Optional[float], poll: float) -> Dict[str, Any]:
        self.wait(timeout, poll)
        copy = self.copy
        return read_outcome(self.paths.result, None if copy is None else [f"--dir={copy}"])

    @property
    def paths(self) -> JobPaths:
        """``log``, ``run_dir`` (the call's private copy) and ``result``; no script."""
        copy = self.copy
        return JobPaths(None, self.log, copy, copy / RESULT if copy else None)


class _Tee(io.TextIOBase):
    """Writes to a stream and keeps a copy."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return int(self.stream.write(text))

    def flush(self) -> None:
        self.stream.flush()


class LocalJob(FunctionJob[R]):
    """A function run in this process by ``Executor(cluster="local")``, at submission, for
    debugging: the interface of :class:`FunctionJob`, with ``state`` ``COMPLETED`` or
    ``FAILED``, and what it printed as :meth:`stdout` and :meth:`stderr` (still shown as it
    ran). It has no Slurm job: ``job_id`` is ``local-N``; ``cancel()`` does nothing."""

    _count = 0
    _on_board = False

    def __init__(self, fn: Callable[..., R], args: Any, kwargs: Dict[str, Any]) -> None:
        LocalJob._count += 1
        super().__init__(getattr(fn, "__name__", "call"), f"local-{LocalJob._count}")
        out, err = _Tee(sys.stdout), _Tee(sys.stderr)
        self._outcome_now: Dict[str, Any]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                self._outcome_now = {"ok": True, "value": fn(*args, **kwargs)}
            except Exception as error:  # noqa: BLE001 - the function's exception is its result
                self._outcome_now = {"ok": False, "error": error}
        self._out, self._err = out.copy.getvalue(), err.copy.getvalue()
        ok = self._outcome_now["ok"]
        self._final = {
            "job_id": self.job_id,
            "state": "COMPLETED" if ok else "FAILED",
            "exit_code": 0 if ok else 1,
        }

    def __repr__(self) -> str:
        return f"LocalJob(name={self.name!r}, job_id={self.job_id!r})"

    def result(self, timeout: Optional[float] = None, poll: float = 5.0) -> R:
        if self._outcome_now["ok"]:
            value: R = self._outcome_now["value"]
            return value
        raise self._outcome_now["error"]

    def exception(
        self, timeout: Optional[float] = None, poll: float = 5.0
    ) -> Optional[BaseException]:
        return None if self._outcome_now["ok"] else self._outcome_now["error"]

    def cancel(self, signal: Optional[Any] = None) -> None:
        """Nothing to cancel: the call ran at submission."""

    def logs(self, *, follow: bool = False, tail: Optional[int] = None) -> Any:
        text = self._out + self._err
        if tail is not None:
            text = "".join(text.splitlines(keepends=True)[-tail:])
        return iter(text.splitlines(keepends=True)) if follow else text

    def stdout(self) -> str:
        return self._out

    def stderr(self) -> str:
        return self._err

    @property
    def paths(self) -> JobPaths:
        return JobPaths(None, None, None, None)

