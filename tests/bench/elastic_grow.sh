#!/usr/bin/env bash
# An elastic cluster's growth against a new cluster of the same size, side by side in one run
# on the local test cluster, alternating, REPEAT times each:
#   grow: a 1-node cluster (`up -n 1 --max-nodes 2`) runs a 2-CPU job that fills its node, then
#         is given a second one; seconds from that job's submission (the demand) to the worker
#         job's node joining (`workers.json` says RUNNING);
#   new:  seconds from `up -n 2` to the cluster being up (what a user does instead: start a
#         bigger cluster).
#
#   bash tests/bench/elastic_grow.sh [REPEAT]
#
# The head reads Ray's demand every second and submits at once what the demand needs; a worker
# job then needs Slurm to start it, its node's Ray start and the join.
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-3}
cargo build --release --quiet
bin=$(pwd)/target/release/rayslurm
eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(VENV|SHARED)=')"
bench=$RAYSLURM_LAB_SHARED/bench-elastic-$(date +%Y%m%d-%H%M%S)
mkdir -p "$bench" && cd "$bench"
common=(--load-env "source $RAYSLURM_LAB_VENV/bin/activate" --object-store-memory 100000000 --time 10)
now() { date +%s.%N; }

grow() {
  local name=grow$1 t0 t1
  local run_dir
  run_dir=$("$bin" up "$name" -n 1 --max-nodes 2 --json "${common[@]}" 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["log"][:-len(".log")] + ".d")')
  "$bin" exec "$name" -d --num-cpus 2 -- sleep 120 >/dev/null 2>&1
  sleep 5
  t0=$(now)
  "$bin" exec "$name" -d --num-cpus 2 -- true >/dev/null 2>&1
  until python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not any(w["state"]=="RUNNING" for w in j["jobs"]))' "$run_dir/workers.json" 2>/dev/null; do
    sleep 0.2
  done
  t1=$(now)
  "$bin" down "$name" >/dev/null 2>&1
  echo "grow $1 $(echo "$t1 - $t0" | bc)"
}

new() {
  local name=new$1 t0 t1
  t0=$(now)
  "$bin" up "$name" -n 2 "${common[@]}" >/dev/null 2>&1
  t1=$(now)
  "$bin" down "$name" >/dev/null 2>&1
  echo "new $1 $(echo "$t1 - $t0" | bc)"
}

for r in $(seq 1 "$repeat"); do
  grow "$r"
  new "$r"
done | tee "$bench/times.txt"
awk '{s[$1]+=$3; n[$1]++} END {g=s["grow"]/n["grow"]; w=s["new"]/n["new"];
  printf "mean: grow %.1f s, new cluster %.1f s, ratio grow/new %.2f\n", g, w, g/w}' "$bench/times.txt"
