#!/usr/bin/env bash
# What the relay costs a job on a persistent cluster, side by side in one run: `exec` straight to
# the head's Jobs API against `exec` through the allocation (an `srun --overlap` step that runs
# the cluster's rayslurm on the head as a relay, which is how a cluster with a token on another
# host is always reached: docs/security.md). Both against one 1-node cluster started with
# `--no-ray-auth`, the one kind the login node may reach directly from another host; REPEAT
# rounds (default 5), the two routes alternating. The figure is the time from the command line
# to the command's first line of output.
#
#   bash tests/bench/exec_route.sh [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-5}

source tests/bench/exec_lib.sh route
name=benchroute$$
"$rayslurm" up "$name" -n 1 --no-ray-auth --load-env "$load_env" \
  --object-store-memory 100000000 --time 20 >&2
trap '"$rayslurm" down "$name" >&2 || true' EXIT

direct=() relayed=()
for ((r = 1; r <= repeat; r++)); do
  t0=$(date +%s.%N)
  out=$(RAYSLURM_RELAY=never "$rayslurm" exec "$name" --command "$first_line" 2>/dev/null)
  direct+=("$(elapsed "$t0" "$out")")
  t0=$(date +%s.%N)
  out=$(RAYSLURM_RELAY=always "$rayslurm" exec "$name" --command "$first_line" 2>/dev/null)
  relayed+=("$(elapsed "$t0" "$out")")
  echo "round $r: direct ${direct[-1]} s, relayed ${relayed[-1]} s" >&2
done
md=$(median "${direct[@]}")
mr=$(median "${relayed[@]}")
echo "exec straight to the head: median ${md} s (${direct[*]})"
echo "exec through the allocation: median ${mr} s (${relayed[*]})"
awk -v d="$md" -v r="$mr" 'BEGIN { printf "through the allocation / straight: %.2f\n", r / d }'
