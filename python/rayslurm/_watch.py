"""Many runs watched at once: :func:`as_completed` and :func:`wait_all` ask ``rayslurm status``
once a poll for all the runs not yet ended (one ``squeue``, and one ``sacct`` at most, whatever
their number), and ``rayslurm queue`` once a poll for each cluster whose jobs are among them,
never once a job.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, TypeVar, Union

from . import _board, _cli
from ._calls import FunctionJob
from ._jobs import EXEC_ENDED_STATES, ExecJob, Job

J = TypeVar("J", bound=Union[Job, ExecJob])

#: The shortest pause between two polls: Slurm's controller is shared.
MIN_POLL = 1.0


def _final(job: Job) -> Optional[Dict[str, Any]]:
    """A job's final record if this process knows it already (no call)."""
    return job._final if isinstance(job, FunctionJob) else None


def _ended(
    job: Union[Job, ExecJob], by_id: Dict[Tuple[Optional[str], str], Dict[str, Any]]
) -> bool:
    if isinstance(job, ExecJob):
        with _cli.on_host(job.host):
            row = _board.row(job.cluster, job.job)
        return row is not None and row.get("status") in EXEC_ENDED_STATES
    record = _final(job) or by_id.get((job.host, str(job.job_id)))
    if record is not None and _cli.is_ended(record):
        if isinstance(job, FunctionJob):
            job._ended(record)
        return True
    return False


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
        runs = [job for job in pending if isinstance(job, Job) and _final(job) is None]
        by_id: Dict[Tuple[Optional[str], str], Dict[str, Any]] = {}
        # One call a login node (most often the one: this machine, or `host=`).
        for host in sorted({job.host or "" for job in pending}):
            with _cli.on_host(host or None):
                targets = [job._target() for job in runs if (job.host or "") == host]
                if targets:
                    for found in _board.ask(targets):
                        by_id[(host or None, str(found.get("job_id")))] = found
                _board.queues(
                    job.cluster
                    for job in pending
                    if isinstance(job, ExecJob) and (job.host or "") == host
                )
        still = []
        for job in pending:
            if _ended(job, by_id):
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
