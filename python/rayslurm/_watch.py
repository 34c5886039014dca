"""Many runs watched at once: :func:`as_completed` and :func:`wait_all` ask ``rayslurm status``
once a poll for all the runs not yet ended (one ``squeue``, and one ``sacct`` at most, whatever
their number), never once a run.
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, TypeVar

from . import _cli
from ._calls import FunctionJob
from ._cli import RayslurmError
from ._jobs import Job

J = TypeVar("J", bound=Job)

#: The shortest pause between two polls: Slurm's controller is shared.
MIN_POLL = 1.0


def records(targets: Sequence[str]) -> List[Dict[str, Any]]:
    """``rayslurm status --json --all -- TARGET...``: the runs' records, in one call. A Slurm
    that did not answer gives the runs as ``UNKNOWN`` (rayslurm prints them and exits 1)."""
    proc = _cli.status_of(targets)
    try:
        found = _cli.parsed(proc)
    except RayslurmError:
        if proc.returncode != 1 or not proc.stdout.lstrip().startswith("["):
            raise
        found = json.loads(proc.stdout)
    if not isinstance(found, list):
        said = f"printed JSON that is not a list: {found!r}"
        raise RayslurmError(proc.args, proc.returncode, said)
    return found


def _final(job: Job) -> Optional[Dict[str, Any]]:
    """A job's final record if this process knows it already (no call)."""
    return job._final if isinstance(job, FunctionJob) else None


def as_completed(
    jobs: Iterable[J], timeout: Optional[float] = None, poll: float = 5.0
) -> Iterator[J]:
    """Yields each job as its run ends, in the order they end.

    Each poll is one ``rayslurm status`` for all the jobs not yet ended, ``poll`` seconds apart
    (``MIN_POLL`` at least). A :class:`FunctionJob` keeps its final record, so that its
    ``result()`` then asks Slurm nothing more.

    Raises:
        TimeoutError: some had not ended after ``timeout`` seconds (they go on).
        ValueError: ``poll`` is shorter than ``MIN_POLL``, or a job is a dry run.
    """
    if poll < MIN_POLL:
        raise ValueError(f"poll={poll!r}: at least {MIN_POLL} s between two asks of Slurm")
    pending = list(jobs)
    deadline = None if timeout is None else time.monotonic() + timeout
    while pending:
        asked = [job for job in pending if _final(job) is None]
        by_id: Dict[str, Dict[str, Any]] = {}
        if asked:
            for found in records([job._target() for job in asked]):
                by_id[str(found.get("job_id"))] = found
        still = []
        for job in pending:
            record = _final(job) or by_id.get(str(job.job_id))
            if record is not None and _cli.is_ended(record):
                if isinstance(job, FunctionJob):
                    job._ended(record)
                yield job
            else:
                still.append(job)
        pending = still
        if not pending:
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"{len(pending)} of the jobs had not ended after {timeout} s")
        left = None if deadline is None else deadline - time.monotonic()
        time.sleep(poll if left is None else max(0.0, min(poll, left)))


def wait_all(jobs: Iterable[J], timeout: Optional[float] = None, poll: float = 5.0) -> List[J]:
    """Waits until every job's run has ended, polling as :func:`as_completed`; returns the
    jobs in the order given."""
    given = list(jobs)
    for _ in as_completed(given, timeout, poll):
        pass
    return given
