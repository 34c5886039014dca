"""A small Ray program that uses every node of the cluster rayslurm started.

It places one task on each node (by node id, so no node is skipped), each task reports its
host name and IP and computes a partial sum, and the result depends on all of them.
"""

import os
import socket
import sys

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


@ray.remote(num_cpus=1)
def work(rank: int) -> tuple[str, str, int]:
    # Each node sums its own slice of 1..1_000_000.
    lo, hi = rank * 1_000_000 // N + 1, (rank + 1) * 1_000_000 // N
    return socket.gethostname(), ray.util.get_node_ip_address(), sum(range(lo, hi + 1))


ray.init()  # RAY_ADDRESS, set by rayslurm, points at the cluster
nodes = [n for n in ray.nodes() if n["Alive"]]
N = len(nodes)
expected = int(os.environ["RAYSLURM_NUM_NODES"])
print(f"nodes alive: {N} (rayslurm says {expected})")
results = ray.get(
    [
        work.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ).remote(rank)
        for rank, node in enumerate(nodes)
    ]
)
for host, ip, part in sorted(results):
    print(f"  {host} {ip}: partial sum {part}")
total = sum(part for _, _, part in results)
print(f"total = {total} from {len({h for h, _, _ in results})} nodes")
ok = N == expected and total == 500000500000 and len({h for h, _, _ in results}) == N
sys.exit(0 if ok else 1)
