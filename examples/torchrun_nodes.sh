#!/bin/bash
# PyTorch DDP on every node with `rayslurm launch --per-node`: one task per node runs torchrun,
# which starts one process per GPU. rayslurm gives every node the rendezvous (MASTER_ADDR,
# MASTER_PORT from the job's own port block, so two jobs on one node never collide) and the
# ranks from Slurm. Run it with, for example:
#
#   rayslurm launch --exp-name ddp --per-node -n 2 --num-gpus 4 \
#       --setup "pip install -r requirements.txt" --command "bash torchrun_nodes.sh train.py"
#
# Without torch installed it prints the torchrun line it would run, so the contract can be seen.
set -euo pipefail
script=${1:-train.py}
procs=${RAYSLURM_NUM_GPUS_PER_NODE:-0}
[ "$procs" -gt 0 ] || procs=1
cmd=(torchrun --nnodes="$RAYSLURM_NUM_NODES" --node-rank="$RAYSLURM_NODE_RANK"
  --nproc-per-node="$procs" --master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT" "$script")
if [ "$RAYSLURM_NODE_RANK" = 0 ]; then
  # Head-only work, the SkyPilot way: only node rank 0 does it.
  echo "head node: $RAYSLURM_NUM_NODES node(s) at $(echo "$RAYSLURM_NODE_IPS" | paste -sd ' ')"
fi
if command -v torchrun >/dev/null 2>&1; then
  exec "${cmd[@]}"
fi
echo "torch is not installed here; this node would run: ${cmd[*]}"
