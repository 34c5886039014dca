#!/usr/bin/env bash
# A job on a persistent cluster against a new launch, side by side in one run: the time from
# the command line to the command's first line of output, REPEAT times each (default 3).
#
#   bash tests/bench/exec.sh [REPEAT]
#
# `exec` submits to a 2-node cluster that is already up (through Ray's Jobs API); `launch`
# submits a new 2-node job (sbatch, then Ray starting on both nodes). Both run the same command,
# which stamps its first line; the stamp minus the time the command line started is the figure.
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-3}

source tests/bench/exec_lib.sh exec
# Not exclusive: the launch must find room beside the cluster (2 CPUs a node, 1 each).
common=(--load-env "$load_env" --object-store-memory 100000000 --time 20 --no-exclusive)
name=benchexec$$
"$rayslurm" up "$name" -n 2 "${common[@]}" >&2
trap '"$rayslurm" down "$name" >&2 || true' EXIT

exec_times=() launch_times=()
for ((r = 1; r <= repeat; r++)); do
  t0=$(date +%s.%N)
  out=$("$rayslurm" exec "$name" --command "$first_line" 2>/dev/null)
  exec_times+=("$(elapsed "$t0" "$out")")
  t0=$(date +%s.%N)
  out=$("$rayslurm" launch --exp-name benchlaunch -n 2 "${common[@]}" --command "$first_line" --follow 2>/dev/null)
  launch_times+=("$(elapsed "$t0" "$out")")
  echo "round $r: exec ${exec_times[-1]} s, launch ${launch_times[-1]} s" >&2
done
me=$(median "${exec_times[@]}")
ml=$(median "${launch_times[@]}")
echo "exec to first line: median ${me} s (${exec_times[*]})"
echo "new launch to first line: median ${ml} s (${launch_times[*]})"
awk -v e="$me" -v l="$ml" 'BEGIN { printf "exec is %.1fx faster than a new launch\n", l / e }'
