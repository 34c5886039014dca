"""Typed misuse: `mypy --strict` must refuse each marked line, naming what was wrong
(tests/it/python_package.rs, the_package_and_its_use_pass_mypy_strict)."""

from __future__ import annotations

import rayslurm


def square(x: int) -> int:
    return x * x


executor = rayslurm.Executor(num_nodes="2")  # refused: num_nodes
executor.update_parameters(num_node=2)  # refused: num_node
executor.submit(square, "3")  # refused: submit
text: str = executor.submit(square, 3).result()  # refused: assignment
rayslurm.launch("x", "true", time=1.5)  # refused: time
rayslurm.Cluster("lab").submit(square, y=3)  # refused: submit
executor.update_parameters(array_parallelism="2")  # refused: array_parallelism
names: list[str] = [j.result() for j in executor.map_array(square, [1])]  # refused: misc
