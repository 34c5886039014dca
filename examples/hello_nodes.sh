#!/bin/bash
# A plain multi-node program (no Ray): run with `rayslurm launch --no-ray`.
# rayslurm runs it on the head node with every node's IP in its environment;
# here it asks every node for its name through one srun step.
echo "head ${RAYSLURM_HEAD_IP} of ${RAYSLURM_NUM_NODES} nodes; node IPs:"
echo "${RAYSLURM_NODE_IPS}" | sed 's/^/  /'
srun --overlap --ntasks-per-node=1 --nodes="${RAYSLURM_NUM_NODES}" hostname | sort
