# Tells Ray that this run's worker nodes go away at a deadline (Slurm's time limit, or a
# preemption), through its drain API: Ray then places no new task or actor on them, and
# libraries that watch for drained nodes (Ray Train, Tune) get notice to checkpoint. The head
# node is left alone: Ray ends a drained raylet as soon as it is idle, and the command's own
# driver (or a Jobs API job's) is attached to the head's raylet.
# Arguments: GCS address, seconds until the deadline, the reason's message.
import sys
import time

from ray._raylet import GcsClient
from ray.core.generated import autoscaler_pb2

address, seconds, message = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gcs = GcsClient(address=address)
deadline_ms = int(time.time() * 1000) + seconds * 1000
reason = autoscaler_pb2.DrainNodeReason.Value("DRAIN_NODE_REASON_PREEMPTION")
for node_id, info in gcs.get_all_node_info().items():
    if info.is_head_node or info.state != 0:  # 0: ALIVE
        continue
    accepted, why = gcs.drain_node(node_id.hex(), reason, message, deadline_ms)
    where = info.node_manager_address
    print(f"drained {where}" if accepted else f"Ray refused to drain {where}: {why}", flush=True)
