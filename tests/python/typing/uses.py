"""Typed use of the package, as a user writes it: `mypy --strict` must pass on this file
(tests/it/python_package.rs, the_package_and_its_use_pass_mypy_strict)."""

from __future__ import annotations

from typing import List, Optional

import rayslurm


def square(x: int) -> int:
    return x * x


def calls() -> List[int]:
    executor = rayslurm.Executor("logs", num_nodes=2, time=30, exclusive=False)
    executor.update_parameters(partition="lab", env={"A": "1"}, load_env="source venv/bin/activate")
    job: rayslurm.FunctionJob[int] = executor.submit(square, 3)
    jobs = [executor.submit(square, x) for x in range(3)]
    done: List[rayslurm.FunctionJob[int]] = list(rayslurm.as_completed(jobs, poll=2.0))
    rayslurm.wait_all(jobs)
    error: Optional[BaseException] = job.exception()
    state: str = job.state
    assert error is None and state and job.paths.log and job.job_id
    return [job.result(), *(j.result() for j in done)]


def arrays() -> List[int]:
    executor = rayslurm.Executor("logs", no_ray=True, array_parallelism=2)
    squares: List[rayslurm.FunctionJob[int]] = executor.map_array(square, range(8))
    with executor.batch():
        first: rayslurm.FunctionJob[int] = executor.submit(square, 1)
        other: rayslurm.FunctionJob[str] = executor.submit(str, 2)
    assert other.result() == "2"
    return [j.result() for j in rayslurm.wait_all([*squares, first])]


def on_a_cluster() -> int:
    cluster = rayslurm.Cluster("lab")
    job: rayslurm.ClusterFunctionJob[int] = cluster.submit(square, 4)
    return job.result(timeout=60.0)


def commands() -> str:
    job = rayslurm.launch("hello", ["echo", "hi"], num_nodes=1, no_ray=True)
    return job.logs(tail=5)
