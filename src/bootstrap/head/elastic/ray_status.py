# Asks Ray's GCS, every PERIOD seconds, for its raw cluster resource state (the request Ray's own
# autoscaler makes: GetClusterResourceState) and prints it as one JSON line when it changed, or
# every HEARTBEAT seconds anyway so that the reader knows it is not stale. The line holds the
# work Ray cannot place (tasks and actors by shape, placement groups whole, with their label
# selectors and placement constraints), the request_resources() floor apart from it, and every
# node (its Ray node id, the Slurm job id it was started with, its type, state, idle time and
# resources). One long-lived process: importing Ray costs seconds of CPU, one call is cheap.
# It ends when its parent does. Arguments: GCS address, period and heartbeat in seconds.
import json
import os
import sys
import time

from ray._raylet import GcsClient
from ray.core.generated import autoscaler_pb2

OPS = {1: "in", 2: "not_in"}


def resources(m):
    return dict(m.items())


def selectors(req):
    # Each selector is a list of terms; a node must meet every term of one selector.
    return [
        [
            {"key": c.label_key, "op": OPS.get(c.operator, "unknown"), "values": list(c.label_values)}
            for c in s.label_constraints
        ]
        for s in req.label_selectors
    ]


def constraints(req):
    out = []
    for c in req.placement_constraints:
        for kind in ("affinity", "anti_affinity"):
            if c.HasField(kind):
                a = getattr(c, kind)
                out.append({"kind": kind, "label": a.label_name, "value": a.label_value})
    return out


def request(req):
    return {
        "resources": resources(req.resources_bundle),
        "selectors": selectors(req),
        "constraints": constraints(req),
    }


def group(g):
    # details: "<placement group id hex>:<STRATEGY>|<state>"
    head, _, state = g.details.partition("|")
    pg_id, _, strategy = head.partition(":")
    reqs = g.bundle_selectors[0].resource_requests if len(g.bundle_selectors) else g.requests
    return {"id": pg_id, "strategy": strategy, "state": state, "bundles": [request(r) for r in reqs]}


def node(n):
    labels = dict(n.labels)
    labels.update(n.dynamic_labels)  # _PG_<id> labels: Ray's STRICT_SPREAD anti-affinity
    return {
        "node_id": n.node_id.hex(),
        "instance_id": n.instance_id,
        "ray_node_type_name": n.ray_node_type_name,
        "status": autoscaler_pb2.NodeStatus.Name(n.status),
        "idle_duration_ms": n.idle_duration_ms,
        "ip": n.node_ip_address,
        "total": resources(n.total_resources),
        "available": resources(n.available_resources),
        "labels": labels,
    }


def state(s):
    return {
        "version": s.cluster_resource_state_version,
        "demand": {
            "tasks": [
                dict(request(r.request), count=r.count) for r in s.pending_resource_requests
            ],
            "groups": [group(g) for g in s.pending_gang_resource_requests],
            "floor": [
                dict(request(r.request), count=r.count)
                for c in s.cluster_resource_constraints
                for r in c.resource_requests
            ],
        },
        "nodes": sorted((node(n) for n in s.node_states), key=lambda n: n["node_id"]),
    }


def same(a, b):
    # Idle times grow every second; a change of state (IDLE/RUNNING) is caught by "status".
    # The version moves every second or so with nothing else changed: not a change either.
    def strip(x):
        return dict(x, version=0, nodes=[dict(n, idle_duration_ms=0) for n in x["nodes"]])

    return b is not None and strip(a) == strip(b)


address, period, heartbeat = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
parent = os.getppid()
client, last, said = None, None, 0.0
while os.getppid() == parent:
    try:
        if client is None:
            client = GcsClient(address=address)
        reply = autoscaler_pb2.GetClusterResourceStateReply()
        reply.ParseFromString(client.get_cluster_resource_state())
        now = state(reply.cluster_resource_state)
        if not same(now, last) or time.monotonic() - said >= heartbeat:
            print(json.dumps(now, sort_keys=True), flush=True)
            last, said = now, time.monotonic()
    except Exception as e:  # Ray not answering this time: say so, ask again
        client, last = None, None
        print(json.dumps({"error": f"{type(e).__name__}: {e}"[:300]}), flush=True)
    time.sleep(period)
