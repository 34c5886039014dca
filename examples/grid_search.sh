#!/usr/bin/env bash
# A grid search on a persistent cluster: wait in the Slurm queue once, then queue five trials
# onto the live Ray cluster. Each trial asks for 2 CPUs (use --num-gpus 0.5 for half a GPU):
# the trials that fit run at once, the rest wait in Ray's queue and start as soon as resources
# free up. Each gets its own --env; its output is kept beside the cluster's log.
#
#   bash examples/grid_search.sh [CLUSTER]   (from a directory the compute nodes share)
#
# RAYSLURM_LOAD_ENV (e.g. "source venv/bin/activate") puts Ray on the nodes' PATH.
set -euo pipefail
cluster=${1:-grid}
rayslurm up "$cluster" -n 2 --time 30 --idle-timeout 10m
trap 'rayslurm down "$cluster"' EXIT
for lr in 0.1 0.03 0.01 0.003 0.001; do
  rayslurm exec "$cluster" -d --name "lr=$lr" --num-cpus 2 --env "LR=$lr" -- \
    python -c 'import os, time; time.sleep(5); print("lr", os.environ["LR"], "loss", round(1 / float(os.environ["LR"]) % 7, 3))'
done
rayslurm queue "$cluster"
# Follow the last trial to its end, then show every trial's result.
rayslurm logs "$cluster" 5 -f
sleep 1
rayslurm queue "$cluster"
for id in 1 2 3 4 5; do rayslurm logs "$cluster" "$id"; done
