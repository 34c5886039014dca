# Asks Ray, every PERIOD seconds, what it cannot place (pending tasks, actors and placement
# groups) and how long each node has run nothing, and prints one JSON line each time. One
# long-lived process: importing Ray costs seconds of CPU. It ends when its parent does.
# Arguments: GCS address, period in seconds.
import json
import os
import sys
import time

from ray.autoscaler.v2.sdk import get_cluster_status

address, period = sys.argv[1], float(sys.argv[2])
parent = os.getppid()
while os.getppid() == parent:
    try:
        status = get_cluster_status(address)
        demands = status.resource_demands
        demand = sum(r.count for d in demands.ray_task_actor_demand for r in d.bundles_by_count)
        demand += len(demands.placement_group_demand) + len(demands.cluster_constraint_demand)
        nodes = [
            {
                "ip": n.ip_address,
                "idle_s": (n.resource_usage.idle_time_ms if n.resource_usage else 0) // 1000,
            }
            for n in status.active_nodes + status.idle_nodes
        ]
        print(json.dumps({"demand": demand, "nodes": nodes}), flush=True)
    except Exception as e:  # Ray not answering this time: say so, ask again
        print(json.dumps({"error": f"{type(e).__name__}: {e}"[:300]}), flush=True)
    time.sleep(period)
