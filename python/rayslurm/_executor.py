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
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional, TypeVar

from . import _cli, _options
from ._calls import ClusterFunctionJob, FunctionJob, LocalJob, pickler, versions
from ._cli import PathLike
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


@contextlib.contextmanager
def staged(
    fn: Callable[..., Any], args: Any, kwargs: Any, *, chdir: bool, beside: bool
) -> Iterator[Path]:
    """A new private directory (0700, removed after) holding the pickled call, the versions
    it was pickled with, and the runner (``_call.py``): what a run gets as its call.
    ``chdir``: the call runs in this process's directory; ``beside``: its outcome is written
    beside it (a persistent cluster's job), not in the run's private directory."""
    module, name = pickler()
    with tempfile.TemporaryDirectory(prefix="rayslurm-call-") as tmp:
        call = Path(tmp) / "call"
        call.mkdir(mode=0o700)
        (call / "call.pickle").write_bytes(module.dumps((fn, args, kwargs)))
        facts: Dict[str, Any] = versions(name, module)
        facts["chdir"] = os.getcwd() if chdir else None
        facts["result_beside"] = beside
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
        **options: "Unpack[ExecutorOptions]",
    ) -> None:
        if cluster not in (None, "local"):
            raise ValueError(f"cluster={cluster!r}: None (Slurm) or 'local' (this process)")
        self.cluster = cluster
        self.python = python
        self._options: Dict[str, Any] = {}
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
        """
        _options.given(Executor.update_parameters, options)
        self._options.update(options)

    @property
    def parameters(self) -> Dict[str, Any]:
        """The options set so far."""
        return dict(self._options)

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
        folder = self._options.get("log_dir")
        if folder is not None:
            # submitit's folder is made when missing; `launch --log-dir` wants one that is.
            Path(folder).mkdir(parents=True, exist_ok=True)
        own = any(self._options.get(key) for key in _OWN_WORKDIR)
        with staged(fn, args, kwargs, chdir=not own, beside=False) as call:
            return self._launch(fn, call)

    def _launch(self, fn: Callable[..., Any], call: Path) -> FunctionJob[Any]:
        options = dict(self._options)
        runner = shlex.join([self.python, f"{CALL_DIR}/_call.py"])
        flags = {
            "exp_name": options.pop("exp_name", None) or _exp_name(fn),
            "command": runner,
            **options,
            "file_mount": [f"{CALL_DIR}={call}"],
        }
        if isinstance(flags.get("after"), Job):
            flags["after"] = flags["after"]._target()
        result = _cli.call_json(["launch", *_cli.flags(flags), "--json"], dict)
        job: FunctionJob[Any] = FunctionJob(
            str(result["exp_name"]), str(result["job_id"]), result.get("script"), result.get("log")
        )
        return job


def submit_to_cluster(
    cluster: str, fn: Callable[..., Any], args: Any, kwargs: Any
) -> ClusterFunctionJob[Any]:
    """``exec CLUSTER --snapshot --workdir CALL -d --json``: the call as a job of a persistent
    cluster, run with the cluster's Python (its ``load_env``) in this process's directory,
    its outcome written beside the call in the copy ``exec`` made of it."""
    with staged(fn, args, kwargs, chdir=True, beside=True) as call:
        flags = {
            "name": _exp_name(fn),
            "snapshot": True,
            "workdir": call,
            "command": shlex.join(["python", "_call.py"]),
        }
        result = _cli.call_json(["exec", cluster, *_cli.flags(flags), "-d", "--json"], dict)
        job: ClusterFunctionJob[Any] = ClusterFunctionJob(result)
        return job
