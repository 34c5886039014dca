# Tells Ray that worker nodes go away, through its drain API: Ray then places no new task or
# actor on them, and libraries that watch for drained nodes (Ray Train, Tune) get notice to
# checkpoint by the deadline. "preemption": the nodes go at the deadline whatever they run
# (Slurm's time limit, a preemption); "idle": the head gives a node back because it runs
# nothing, and Ray refuses if something landed on it since (then the node is kept). The head
# node is never drained: Ray ends a drained raylet as soon as it is idle, and the command's own
# driver (or a Jobs API job's) is attached to the head's raylet.
# Arguments: GCS address, seconds until the deadline, the reason's message, the reason
# (preemption or idle), then the nodes by their Ray instance id (an elastic worker's Slurm job
# id); no instance: every worker node. Prints one line a node: "drained|refused ADDRESS[ (worker
# job INSTANCE)][: why]".
import sys
import time

from ray._raylet import GcsClient
from ray.core.generated import autoscaler_pb2

address, seconds, message, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
only = set(sys.argv[5:])
gcs = GcsClient(address=address)
if kind == "idle":
    reason, deadline_ms = "DRAIN_NODE_REASON_IDLE_TERMINATION", 0
else:
    reason = "DRAIN_NODE_REASON_PREEMPTION"
    deadline_ms = int(time.time() * 1000) + seconds * 1000
reason = autoscaler_pb2.DrainNodeReason.Value(reason)
for node_id, info in gcs.get_all_node_info().items():
    if info.is_head_node or info.state != 0:  # 0: ALIVE
        continue
    if only and info.instance_id not in only:
        continue
    accepted, why = gcs.drain_node(node_id.hex(), reason, message, deadline_ms)
    name = info.node_manager_address
    if info.instance_id:
        name += f" (worker job {info.instance_id})"
    print(f"drained {name}" if accepted else f"refused {name}: {why}", flush=True)
