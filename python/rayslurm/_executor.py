"""The :class:`Executor`: ``launch``'s options set once, then functions submitted as runs.

``submit(fn, *args, **kwargs)`` pickles the call (``_calls.pickler``) with this side's
versions and ``_call.py`` into a private temporary directory, and launches
``python .rayslurm-call/_call.py`` with that directory as a ``--file-mount``: ``launch``
copies it at submission into the run's private directory, and every node gets it in its
workdir. The temporary directory is gone when ``submit`` returns.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional
from typing import Sequence, Tuple, TypeVar

from . import _cli, _options
from ._calls import BatchJob, ClusterFunctionJob, FunctionJob, LocalJob, pickler, versions
from ._cli import PathLike, RayslurmError
from ._jobs import Job
from ._options import EXECUTOR, ExecutorOptions

if TYPE_CHECKING:
    from typing_extensions import ParamSpec, Unpack

    P = ParamSpec("P")

R = TypeVar("R")

#: Where the call is on each node: a directory in the node's workdir.
CALL_DIR = ".rayslurm-call"
#: The options that give the run a workdir of its own: the call then runs there, not in the
#: directory it was submitted from (or in an empty one, as asked).
_OWN_WORKDIR = ("snapshot", "workdir", "empty_workdir")


Call = Tuple[Callable[..., Any], Any, Any]


@contextlib.contextmanager
def staged(calls: Sequence[Call], *, chdir: bool, beside: bool, array: bool = False) -> Iterator[Path]:
    """A new private directory (0700, removed after) holding the pickled calls, the versions
    they were pickled with, and the runner (``_call.py``): what a run gets as its call.
    ``chdir``: the call runs in this process's directory; ``beside``: its outcome is written
    beside it (a persistent cluster's job), not in the run's private directory; ``array``: the
    calls of a job array's tasks, ``call-N.pickle`` for task N (else the one ``call.pickle``)."""
    module, name = pickler()
    with tempfile.TemporaryDirectory(prefix="rayslurm-call-") as tmp:
        call = Path(tmp) / "call"
        call.mkdir(mode=0o700)
        for task, (fn, args, kwargs) in enumerate(calls):
            pickled = f"call-{task}.pickle" if array else "call.pickle"
            (call / pickled).write_bytes(module.dumps((fn, args, kwargs)))
        facts: Dict[str, Any] = versions(name, module)
        facts["chdir"] = os.getcwd() if chdir else None
        facts["result_beside"] = beside
        facts["array"] = array
        (call / "versions.json").write_text(json.dumps(facts))
        shutil.copyfile(Path(__file__).with_name("_call.py"), call / "_call.py")
        yield call


def _exp_name(fn: Callable[..., Any]) -> str:
    """A run's name from a function's: what ``--exp-name`` takes (letters, digits, ``_-.+``)."""
    name = re.sub(r"[^A-Za-z0-9_.+-]", "-", getattr(fn, "__name__", "call")).lstrip("-.")
    return (name or "call")[:100].replace("..", ".")


class Executor:
    """Runs Python functions as rayslurm runs (``launch``), submitit's way::

        executor = rayslurm.Executor("logs", num_nodes=2, time=30)
        job = executor.submit(train, lr=0.1)
        print(job.result())

    Args:
        folder: the log directory (``log_dir``, ``--log-dir``), made at the first
            submission when missing.
        cluster: ``None`` for Slurm; ``"local"`` runs each call in this process at
            submission, for debugging (Ray's own auto-start gives a function that uses Ray a
            local Ray).
        python: the Python the nodes run the call with (on ``PATH`` once ``load_env`` ran).
        host: submit to this login node over SSH, from this machine (``--host``,
            docs/laptop.md): the calls are sent along, ``folder`` is a directory there, and
            each call runs in the run's directory there (this one is not there).
        options: ``launch``'s options by their long names (``num_nodes=2``,
            ``partition="gpu"``, ``load_env=...``, ``exp_name=`` for the runs' name, by
            default the function's), checked as given (:meth:`update_parameters`).
    """

    def __init__(
        self,
        folder: Optional[PathLike] = None,
        *,
        cluster: Optional[str] = None,
        python: str = "python",
        host: Optional[str] = None,
        **options: "Unpack[ExecutorOptions]",
    ) -> None:
        if cluster not in (None, "local"):
            raise ValueError(f"cluster={cluster!r}: None (Slurm) or 'local' (this process)")
        self.cluster = cluster
        self.python = python
        with _cli.on_host(host):  # checked here, not at the first submission
            #: The login node the runs go to, over SSH (``--host``), ``None`` for this one.
            self.host = _cli.current_host()
        self._options: Dict[str, Any] = {}
        self._batch: Optional[List[Tuple[BatchJob[Any], Call]]] = None
        if folder is not None:
            self.update_parameters(log_dir=folder)
        self.update_parameters(**options)

    def __repr__(self) -> str:
        where = "" if self.cluster is None else f", cluster={self.cluster!r}"
        return f"Executor({self._options!r}{where})"

    @_options.takes(ExecutorOptions, EXECUTOR)
    def update_parameters(self, **options: "Unpack[ExecutorOptions]") -> None:
        """Sets options for the next submissions (those given replace the same earlier ones).

        Raises:
            TypeError: an option ``launch`` does not have, or a value not of its type
                (``num_nodes="2"``), naming the option and the type it takes.
            ValueError: ``array_parallelism`` below 1.
        """
        _options.given(Executor.update_parameters, options)
        at_once = options.get("array_parallelism")
        if at_once is not None and at_once < 1:
            raise ValueError(
                f"array_parallelism={at_once!r}: at least 1 task at once (None: no limit)"
            )
        self._options.update(options)

    @property
    def parameters(self) -> Dict[str, Any]:
        """The options set so far."""
        return dict(self._options)

    @_cli.hosted
    def submit(self, fn: "Callable[P, R]", *args: "P.args", **kwargs: "P.kwargs") -> FunctionJob[R]:
        """Runs ``fn(*args, **kwargs)`` as a new run, on the head with Ray connected (unless
        ``no_ray``), from the directory of this process (or in the run's snapshot with
        ``snapshot``/``workdir``), and returns its job at once.

        Raises:
            ImportError: neither cloudpickle nor Ray is installed here.
            RayslurmError: rayslurm refused the options (``returncode`` 2) or Slurm the job.
        """
        if self.cluster == "local":
            return LocalJob(fn, args, kwargs)
        if self._batch is not None:
            job: BatchJob[R] = BatchJob(_exp_name(fn))
            self._batch.append((job, (fn, args, kwargs)))
            return job
        with staged([(fn, args, kwargs)], chdir=self._chdir(), beside=False) as call:
            result = self._launch(_exp_name(fn), call, None)
        return FunctionJob(
            str(result["exp_name"]), str(result["job_id"]), result.get("script"), result.get("log")
        )

    @_cli.hosted
    def map_array(self, fn: Callable[..., R], *iterables: Iterable[Any]) -> List[FunctionJob[R]]:
        """Runs ``fn`` on each element (``fn(a, b)`` for each pair of ``zip(*iterables)``, as
        :func:`map`) as ONE Slurm job array (``launch --array 0-N``, ``%P`` with the
        ``array_parallelism`` option: at most P tasks at once), each task a run of its own
        (its nodes, its Ray unless ``no_ray``, its log and record). Returns one job per
        element, in order, each its task's (``job_id`` ``JOBID_N``): its ``result()``,
        ``cancel()`` (that task alone) and state are its own. Nothing is submitted for no
        elements.

        Raises:
            RuntimeError: called inside :meth:`batch` (whose ``submit`` calls are an array).
            RayslurmError: rayslurm refused the options (``returncode`` 2; an array goes
                without ``requeue``, ``restarts_on_error`` and ``after``) or Slurm the job.
        """
        calls: List[Call] = [(fn, args, {}) for args in zip(*iterables)]
        if self.cluster == "local":
            return [LocalJob(fn, args, {}) for _, args, _ in calls]
        if self._batch is not None:
            raise RuntimeError(
                "map_array() inside `with executor.batch():`: submit() each call there instead"
            )
        return self._array(_exp_name(fn), calls) if calls else []

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Gathers the :meth:`submit` calls of a ``with`` block into one job array, submitted
        at the block's end (each task a run of its own, ``array_parallelism`` at once, and
        each call its own function)::

            with executor.batch():
                jobs = [executor.submit(train, lr) for lr in (0.1, 0.01)]

        The jobs have no ``job_id`` (nor state, result, ...) before the block's end: reading
        it raises ``RuntimeError``. A block that raises submits nothing.
        """
        if self._batch is not None:
            raise RuntimeError("`with executor.batch():` inside another: one at a time")
        pending: List[Tuple[BatchJob[Any], Call]] = []
        self._batch = pending
        try:
            yield
        except BaseException:
            for job, _ in pending:
                job._never = "its `with executor.batch():` block raised: nothing was submitted"
            raise
        finally:
            self._batch = None
        if not pending:
            return
        names = {job.name for job, _ in pending}
        name = names.pop() if len(names) == 1 else "batch"
        try:
            submitted = self._array(name, [call for _, call in pending])
        except BaseException as error:
            for job, _ in pending:
                job._never = f"submitting its batch failed: {error}"
            raise
        for (job, _), task in zip(pending, submitted):
            job._submitted_as(task)

    def _chdir(self) -> bool:
        """Whether the call runs in this process's directory (the run has no workdir of its
        own); ``log_dir`` made as submitit makes its folder."""
        if self.host is not None:
            # This process's directory and `log_dir` are not on the login node.
            return False
        folder = self._options.get("log_dir")
        if folder is not None:
            # submitit's folder is made when missing; `launch --log-dir` wants one that is.
            Path(folder).mkdir(parents=True, exist_ok=True)
        return not any(self._options.get(key) for key in _OWN_WORKDIR)

    @_cli.hosted
    def _array(self, name: str, calls: Sequence[Call]) -> List[FunctionJob[Any]]:
        """The ``calls`` as one job array, task N running call N: one job a task, in order."""
        spec = f"0-{len(calls) - 1}" if len(calls) > 1 else "0"
        at_once = self._options.get("array_parallelism")
        if at_once is not None:
            spec += f"%{at_once}"
        with staged(calls, chdir=self._chdir(), beside=False, array=True) as call:
            result = self._launch(name, call, spec)
        tasks = {int(task["task"]): task for task in result.get("tasks") or []}
        if sorted(tasks) != list(range(len(calls))):
            said = f"printed the tasks {sorted(tasks)}, not 0 to {len(calls) - 1} (one a call)"
            raise RayslurmError(["launch", "--array", spec, "--json"], 0, said)
        return [
            FunctionJob(
                str(result["exp_name"]),
                str(tasks[n]["job_id"]),
                result.get("script"),
                tasks[n].get("log"),
            )
            for n in range(len(calls))
        ]

    def _launch(self, name: str, call: Path, array: Optional[str]) -> Dict[str, Any]:
        """``launch --json`` of the staged ``call`` (an array of them with ``array``)."""
        options = dict(self._options)
        options.pop("array_parallelism", None)
        runner = shlex.join([self.python, f"{CALL_DIR}/_call.py"])
        flags = {
            "exp_name": options.pop("exp_name", None) or name,
            "command": runner,
            **options,
            "array": array,
            "file_mount": [f"{CALL_DIR}={call}"],
        }
        if isinstance(flags.get("after"), Job):
            flags["after"] = flags["after"]._target()
        result: Dict[str, Any] = _cli.call_json(["launch", *_cli.flags(flags), "--json"], dict)
        return result


def submit_to_cluster(
    cluster: str, fn: Callable[..., Any], args: Any, kwargs: Any
) -> ClusterFunctionJob[Any]:
    """``exec CLUSTER --snapshot --workdir CALL -d --json``: the call as a job of a persistent
    cluster, run with the cluster's Python (its ``load_env``) in this process's directory,
    its outcome written beside the call in the copy ``exec`` made of it."""
    here = _cli.current_host() is None  # from a laptop, this directory is not there
    with staged([(fn, args, kwargs)], chdir=here, beside=True) as call:
        flags = {
            "name": _exp_name(fn),
            "snapshot": True,
            "workdir": call,
            "command": shlex.join(["python", "_call.py"]),
        }
        result = _cli.call_json(["exec", cluster, *_cli.flags(flags), "-d", "--json"], dict)
        job: ClusterFunctionJob[Any] = ClusterFunctionJob(result)
        return job
