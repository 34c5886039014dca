# Ray's own choice for each scenario of stdin (one JSON object a line: worker types, tasks,
# placement groups, a budget of new nodes), by its autoscaler v2's ResourceDemandScheduler with
# no node running: one JSON line each, the nodes it launches by type and how many tasks and
# groups it leaves. fit/against_ray.rs compares it with fit().
import json
import logging
import sys

logging.disable(logging.CRITICAL)
from ray.autoscaler.v2.instance_manager.config import NodeTypeConfig  # noqa: E402
from ray.autoscaler.v2.scheduler import ResourceDemandScheduler, SchedulingRequest  # noqa: E402
from ray.core.generated.autoscaler_pb2 import (  # noqa: E402
    AffinityConstraint,
    AntiAffinityConstraint,
    GangResourceRequest,
    PlacementConstraint,
    ResourceRequest,
    ResourceRequestByCount,
)

OPS = {"in": 1, "not_in": 2}


def request(shape):
    r = ResourceRequest(resources_bundle=shape["resources"])
    for selector in shape["selectors"]:
        s = r.label_selectors.add()
        for term in selector:
            c = s.label_constraints.add()
            c.label_key, c.operator = term["key"], OPS[term["op"]]
            c.label_values.extend(term["values"])
    for k in shape["constraints"]:
        if k["kind"] == "affinity":
            pc = PlacementConstraint(affinity=AffinityConstraint(label_name=k["label"], label_value=""))
        else:
            pc = PlacementConstraint(anti_affinity=AntiAffinityConstraint(label_name=k["label"], label_value=""))
        r.placement_constraints.append(pc)
    return r


for line in sys.stdin:
    s = json.loads(line)
    types = {
        t["name"]: NodeTypeConfig(
            name=t["name"], min_worker_nodes=0, max_worker_nodes=t["room"], resources=t["resources"], labels=t["labels"]
        )
        for t in s["types"]
    }
    reply = ResourceDemandScheduler().schedule(
        SchedulingRequest(
            disable_launch_config_check=True,
            node_type_configs=types,
            max_num_nodes=s["budget"],
            resource_requests=[ResourceRequestByCount(request=request(t["shape"]), count=t["count"]) for t in s["tasks"]],
            gang_resource_requests=[
                GangResourceRequest(requests=[request(b) for b in g["bundles"]], details=g["id"] + ":" + g["strategy"])
                for g in s["groups"]
            ],
        )
    )
    launch = {}
    for lr in reply.to_launch:
        launch[lr.instance_type] = launch.get(lr.instance_type, 0) + lr.count
    left = (len(reply.infeasible_resource_requests), len(reply.infeasible_gang_resource_requests))
    print(json.dumps({"launch": launch, "tasks_left": left[0], "groups_left": left[1]}), flush=True)
