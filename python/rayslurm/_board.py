"""What this process last heard of its runs and clusters' jobs, shared by every object that
asks: ``job.state`` (or ``done()``, ``wait()``, ``result()``) of any number of runs is one
``rayslurm status`` for all the runs this process follows that have not ended (one ``squeue``,
one ``sacct`` at most), at most one every :data:`FRESH` seconds; an :class:`ExecJob`'s is one
``rayslurm queue`` for all the jobs of its cluster. A record that is final is kept for good
(it cannot change); any other is asked again once it is :data:`FRESH` seconds old, or at once
after this process cancelled the run. Runs on different login nodes (``host=``) are asked for
apart, each on its own node.
"""

from __future__ import annotations

import json
import time
import weakref
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, NamedTuple, Optional, Sequence
from typing import Tuple

from . import _cli
from ._cli import RayslurmError

if TYPE_CHECKING:
    from ._jobs import Job

#: How long a record of a run not yet ended answers for it, in seconds.
FRESH = 2.0


class _Heard(NamedTuple):
    at: float
    record: Dict[str, Any]


#: The runs this process follows (a run is let go with the last object that names it).
_followed: "weakref.WeakSet[Job]" = weakref.WeakSet()
#: The last record heard of each run, by login node (``host=``, or ``None``) and job id.
_runs: Dict[Tuple[Optional[str], str], _Heard] = {}
#: The last ``queue`` answer of each cluster, by login node and name.
_clusters: Dict[Tuple[Optional[str], str], _Heard] = {}


def follow(job: "Job") -> None:
    """Asks for ``job`` with the others from now on."""
    _followed.add(job)


def forget(target: str) -> None:
    """Drops what was heard of ``target`` (this process just cancelled it)."""
    _runs.pop((_cli.current_host(), target), None)


def _current(target: str, now: float) -> bool:
    """Whether what was heard of ``target`` still answers for it."""
    heard = _runs.get((_cli.current_host(), target))
    return heard is not None and (_cli.is_ended(heard.record) or now - heard.at < FRESH)


def record(target: str) -> Dict[str, Any]:
    """The run's record: the one heard if still current, else one call for it and every
    followed run whose record is not.

    Raises:
        RayslurmError: no run matches ``target`` (``returncode`` 2), or Slurm could not be
            asked.
    """
    now = time.monotonic()
    host = _cli.current_host()
    if _current(target, now):
        return _runs[(host, target)].record
    others = {
        job.job_id
        for job in list(_followed)
        if job.submitted and job.job_id and getattr(job, "host", None) == host
    }
    stale = [t for t in sorted(others - {target}) if not _current(t, now)]
    try:
        ask([target, *stale])
    except RayslurmError as error:
        if error.returncode != 2 or not stale:
            raise
        ask([target])  # one of the others is no longer recorded: this one alone
    heard = _runs.get((host, target))
    if heard is None:
        # Not a job id of its own record (an experiment name, a whole array): as the CLI
        # tells it, newest first.
        return alone(target)
    return heard.record


def ask(targets: Sequence[str]) -> List[Dict[str, Any]]:
    """One call for ``targets``; keeps what it heard, by job id."""
    found = records(targets)
    now = time.monotonic()
    host = _cli.current_host()
    heard = set()
    for run in found:
        # Newest first: a job id Slurm gave again (its controller's state was reset, or its
        # ids wrapped) names the newest run.
        key = (host, str(run.get("job_id")))
        if key not in heard:
            heard.add(key)
            _runs[key] = _Heard(now, run)
    return found


def records(targets: Sequence[str]) -> List[Dict[str, Any]]:
    """``rayslurm status --json --all -- TARGET...``: the runs' records, in one call. A Slurm
    that did not answer gives the runs as ``UNKNOWN`` (rayslurm prints them and exits 1)."""
    proc = _cli.status_of(targets)
    found = _answer(proc)
    if not isinstance(found, list):
        said = f"printed JSON that is not a list: {found!r}"
        raise RayslurmError(proc.args, proc.returncode, said)
    return found


def alone(target: str) -> Dict[str, Any]:
    """The newest run ``target`` names, asked alone (not kept: a name's newest run changes)."""
    proc = _cli.status_records(target, all_runs=False)
    found = _answer(proc)
    if not isinstance(found, list) or not found:
        raise RayslurmError(proc.args, proc.returncode, f"no run matches `{target}`", proc.stdout)
    run: Dict[str, Any] = found[0]
    return run


def _answer(proc: Any) -> Any:
    """The JSON ``status`` printed; with exit code 1 and a list (Slurm did not answer: the
    runs as ``UNKNOWN``), that list."""
    try:
        return _cli.parsed(proc)
    except RayslurmError:
        if proc.returncode != 1 or not proc.stdout.lstrip().startswith("["):
            raise
        return json.loads(proc.stdout)


def queue(cluster: str, fresh: bool = False) -> Dict[str, Any]:
    """The cluster's ``rayslurm queue --json``: the one heard if younger than :data:`FRESH`
    seconds (unless ``fresh``), else one call."""
    key = (_cli.current_host(), cluster)
    heard = _clusters.get(key)
    if not fresh and heard is not None and time.monotonic() - heard.at < FRESH:
        return heard.record
    found: Dict[str, Any] = _cli.call_json(["queue", "--json", "--", cluster], dict)
    _clusters[key] = _Heard(time.monotonic(), found)
    return found


def row(cluster: str, job: int) -> Optional[Dict[str, Any]]:
    """The job's row in the cluster's :func:`queue` (asked again at once if the answer heard
    does not list it yet: a job this process just submitted)."""
    for fresh in (False, True):
        for found in queue(cluster, fresh).get("jobs", []):
            if int(found.get("id", -1)) == job:
                return dict(found)
    return None


def queues(clusters: Iterable[str]) -> None:
    """One ``queue`` call for each cluster named (a poll of :func:`as_completed`)."""
    for cluster in sorted(set(clusters)):
        queue(cluster, fresh=True)


def forget_cluster(cluster: str) -> None:
    """Drops the cluster's last ``queue`` answer (this process just changed its jobs)."""
    _clusters.pop((_cli.current_host(), cluster), None)


def clear() -> None:
    """Forgets every run and cluster (a fresh start: tests of the package)."""
    _followed.clear()
    _runs.clear()
    _clusters.clear()
