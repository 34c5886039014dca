"""A real multi-node JAX program for `rayslurm launch --per-node`.

Every rank joins one JAX process group at the rendezvous rayslurm gives it (MASTER_ADDR and
MASTER_PORT, a port from the job's own block on the head), then all ranks gather every rank's
value over CPU collectives. Run it with, for example:

    rayslurm launch --exp-name jax --per-node -n 3 \
        --load-env "source jax-venv/bin/activate" --command "python jax_allgather.py"
"""

import os

import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils

jax.config.update("jax_cpu_collectives_implementation", "gloo")
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
jax.distributed.initialize(
    coordinator_address=f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
    num_processes=world,
    process_id=rank,
)
gathered = multihost_utils.process_allgather(jnp.array([rank * 10]))
values = sorted(int(v) for v in gathered.reshape(-1))
print(f"rank {rank} of {world} on node {os.environ['RAYSLURM_NODE_RANK']} gathered {values}")
jax.distributed.shutdown()
