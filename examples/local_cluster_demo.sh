#!/usr/bin/env bash
# The main job, on a fresh Debian machine (as root): bring up the local test cluster
# (Slurm + Ray, one machine, Linux namespaces), build rayslurm, and launch examples/ray_nodes.py
# on NODES nodes (default 3), following it to its end. Exits with the job's exit code.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
nodes=${NODES:-3}

bash tests/cluster/cluster.sh up "$nodes"
cargo build --release --quiet
eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(VENV|SHARED)=')"

# Jobs run in the shared directory: every node sees it, as a home or project directory.
workdir=$RAYSLURM_LAB_SHARED/demo
mkdir -p "$workdir"
cp examples/ray_nodes.py "$workdir/"
cd "$workdir"
exec "$repo/target/release/rayslurm" launch \
  --exp-name demo \
  --num-nodes "$nodes" \
  --load-env "source $RAYSLURM_LAB_VENV/bin/activate" \
  --object-store-memory 100000000 \
  --time 10 \
  --command "python ray_nodes.py" \
  --follow
