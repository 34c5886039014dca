"""Runs one call of :meth:`rayslurm.Executor.submit` inside the allocation, on the head.

This file is copied next to the pickled call (``--file-mount``), and the run's command is
``python .rayslurm-call/_call.py``: the nodes' Python (the one ``--load-env`` gives) needs
neither rayslurm nor anything but the standard library and the pickler that made the call
(``cloudpickle``, or Ray's copy of it, ``ray.cloudpickle``). So it imports nothing of the
package and keeps to Python 3.8.

It connects Ray when the run has one (``RAY_ADDRESS`` is set for the command), loads the call,
runs it, and writes what came of it to ``$RAYSLURM_RUN_DIR/rayslurm-call/result.pickle`` (on a
persistent cluster, ``rayslurm-call/result.pickle`` beside this file): a
plain pickle of a dict of text and bytes that any Python reads, with the value or the
exception pickled inside it (by the call's pickler) and the exception's formatted traceback as
text. The calls of a job array (``Executor.map_array``, ``Executor.batch``) are
``call-N.pickle`` side by side: each task runs the one of its ``SLURM_ARRAY_TASK_ID``, and
writes into its own ``$RAYSLURM_RUN_DIR`` (each task is a run of its own). A call that cannot be loaded (another Python, another cloudpickle) is written as a
``load_error`` naming both sides' versions. Exit code: 0 when the call returned, 1 otherwise.
"""

import importlib
import json
import os
import pickle
import platform
import sys
import traceback
from typing import Any, Dict

#: The directory of the call, as the submitter named it (relative: in the node's workdir).
HERE = os.path.dirname(os.path.abspath(__file__))
RESULT_DIR = "rayslurm-call"
RESULT = "result.pickle"


def import_pickler(name: str) -> Any:
    """The pickler module ``name``. A call pickled with ``cloudpickle`` on a machine that has
    it, run on nodes whose Python has only Ray's copy of it (Ray vendors it, and depends on no
    ``cloudpickle``): that copy stands for it, under the names the call's pickle refers to."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if name != "cloudpickle":
            raise
        ray_copy = importlib.import_module("ray.cloudpickle")
        sys.modules["cloudpickle"] = ray_copy
        for sub in ("cloudpickle", "cloudpickle_fast"):
            try:
                sys.modules["cloudpickle." + sub] = importlib.import_module("ray.cloudpickle." + sub)
            except ImportError:
                pass
        return ray_copy


def pickler_version(name: str) -> str:
    """The version of the pickler module ``name`` here (Ray's copy standing for it, said so),
    or why there is none."""
    try:
        module = import_pickler(name)
    except Exception as error:  # noqa: BLE001 - any failure to import is the answer
        return "not importable ({}: {})".format(type(error).__name__, error)
    version = str(getattr(module, "__version__", "unknown"))
    return version if module.__name__ == name else "{} (Ray's copy)".format(version)


def write(outcome: Dict[str, Any], beside: bool) -> None:
    """Writes ``outcome`` where the submitter reads it, atomically: in the run's private
    directory, or (``beside``: a job of a persistent cluster, whose call is in a private copy
    of its own) beside the call."""
    run_dir = HERE if beside else os.environ.get("RAYSLURM_RUN_DIR")
    if not run_dir:
        sys.stderr.write("rayslurm-call: RAYSLURM_RUN_DIR is not set: the result is lost\n")
        return
    directory = os.path.join(run_dir, RESULT_DIR)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    final = os.path.join(directory, RESULT)
    partial = final + ".part"
    with open(partial, "wb") as out:
        pickle.dump(outcome, out, protocol=4)
    os.replace(partial, final)


def failure(error: BaseException, pickler: Any) -> Dict[str, Any]:
    """An exception as an outcome: pickled if it can be, its type, text and traceback always."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        dumped = pickler.dumps(error)
        pickle.loads(dumped)
    except Exception:  # noqa: BLE001 - an exception that does not pickle is sent as text
        dumped = None
    return {
        "ok": False,
        "exception": dumped,
        "type": "{}.{}".format(type(error).__module__, type(error).__qualname__),
        "message": str(error),
        "traceback": text,
        "host": platform.node(),
    }


def call_file(there: Dict[str, Any]) -> str:
    """The pickled call this run runs: ``call.pickle``, or in an array the task's own."""
    if not there.get("array"):
        return os.path.join(HERE, "call.pickle")
    task = os.environ.get("SLURM_ARRAY_TASK_ID", "")
    if not task.isdigit():
        raise LookupError(
            "SLURM_ARRAY_TASK_ID={!r}: the calls of an array are run by its tasks".format(task)
        )
    return os.path.join(HERE, "call-{}.pickle".format(int(task)))


def main() -> int:
    with open(os.path.join(HERE, "versions.json")) as f:
        there = json.load(f)
    here = {
        "python": platform.python_version(),
        "pickler": there["pickler"],
        "pickler_version": pickler_version(there["pickler"]),
    }
    beside = bool(there.get("result_beside"))
    chdir = there.get("chdir")
    if chdir:
        try:
            os.chdir(chdir)
            # Last, not first: the call's own modules import from there, but a file planted
            # in a shared directory (`ray.py`) shadows nothing installed.
            sys.path.append(chdir)
        except OSError as error:
            sys.stderr.write("rayslurm-call: staying in {}: {}\n".format(os.getcwd(), error))
    try:
        pickler = import_pickler(there["pickler"])
        with open(call_file(there), "rb") as f:
            fn, args, kwargs = pickle.load(f)
    except Exception as error:  # noqa: BLE001 - whatever stops the load is reported
        write(
            {
                "ok": False,
                "load_error": "{}: {}".format(type(error).__name__, error),
                "traceback": traceback.format_exc(),
                "here": here,
                "there": there,
                "host": platform.node(),
            },
            beside,
        )
        return 1
    try:
        if os.environ.get("RAY_ADDRESS"):
            importlib.import_module("ray").init()
        value = fn(*args, **kwargs)
    except BaseException as error:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too
        write(failure(error, pickler), beside)
        return 1
    try:
        dumped = pickler.dumps(value)
    except Exception as error:  # noqa: BLE001 - a value that does not pickle is a failure
        write(failure(error, pickler), beside)
        return 1
    write({"ok": True, "value": dumped, "host": platform.node()}, beside)
    return 0


if __name__ == "__main__":
    sys.exit(main())
