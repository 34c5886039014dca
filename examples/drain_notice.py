"""What a Ray program sees when its allocation is about to end: when Slurm warns of the time
limit (or preempts the job), rayslurm tells Ray that the worker nodes go away at the deadline
(Ray's drain API). Ray then places nothing new on them, and the program can ask Ray which nodes
are draining and until when, as Ray Train and Tune do, to checkpoint in time. A drained node
that has nothing left to run is ended by Ray at once.

  rayslurm launch --exp-name drain -n 2 --time 30 --stop-grace 90 --signal USR1 \
      --command "python examples/drain_notice.py"

It keeps one busy actor on every node (standing for a training worker) until the warning
(here --signal USR1; SIGTERM by default), prints each draining node with the seconds left,
lets the actors go, runs one more task to show where Ray places it, and exits 0.
"""

import os
import signal
import time

import ray
from ray._raylet import GcsClient
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

warned = []
signal.signal(signal.SIGUSR1, lambda *_: warned.append(time.time()))
signal.signal(signal.SIGTERM, lambda *_: warned.append(time.time()))


@ray.remote(num_cpus=1)
class Busy:
    def node(self):
        return ray.util.get_node_ip_address()

    def work(self):
        while True:
            time.sleep(0.5)


@ray.remote(num_cpus=1)
def where():
    return ray.util.get_node_ip_address()


ray.init()
nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
busy = [
    Busy.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote()
    for n in nodes
]
# Each actor has started on its node before the program says it is waiting.
busy_on = ray.get([b.node.remote() for b in busy])
steps = [b.work.remote() for b in busy]
print(f"busy on {len(set(busy_on))} nodes; waiting for the allocation's end", flush=True)
while not warned:
    time.sleep(0.2)

# rayslurm asks for the drain beside the signal: give Ray a moment to have it.
gcs = GcsClient(address=os.environ["RAY_ADDRESS"])
draining = {}
for _ in range(50):
    draining = gcs.get_draining_nodes()
    if draining:
        break
    time.sleep(0.2)
ips = {n.hex(): info.node_manager_address for n, info in gcs.get_all_node_info().items()}
for node_id, deadline_ms in draining.items():
    node_id = node_id if isinstance(node_id, str) else node_id.hex()
    left = deadline_ms / 1000 - time.time()
    print(f"draining: {ips.get(node_id, node_id)}, {left:.0f} s left", flush=True)

# A checkpoint would be written here. Then the actors let their nodes go.
for b in busy:
    ray.kill(b)
print(f"a task placed now runs on {ray.get(where.remote())}", flush=True)
