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

bash tests/cluster/cluster.sh up 3 >&2
cargo build --release --quiet
rayslurm=$(pwd)/target/release/rayslurm
eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(VENV|SHARED)=')"
bench=$RAYSLURM_LAB_SHARED/bench-exec-$(date +%Y%m%d-%H%M%S)
mkdir -p "$bench"
cd "$bench"
export RAYSLURM_STATE_DIR=$bench/state
load_env="source $RAYSLURM_LAB_VENV/bin/activate"
# Not exclusive: the launch must find room beside the cluster (2 CPUs a node, 1 each).
common=(--load-env "$load_env" --object-store-memory 100000000 --time 20 --no-exclusive)
name=benchexec$$
"$rayslurm" up "$name" -n 2 "${common[@]}" >&2
trap '"$rayslurm" down "$name" >&2 || true' EXIT

first_line='echo BENCH_FIRST $(date +%s.%N)'
# seconds from $1 (a time stamp) to the BENCH_FIRST stamp in the output $2
elapsed() { awk -v t0="$1" '/BENCH_FIRST/ { printf "%.2f\n", $2 - t0; exit }' <<<"$2"; }

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
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
me=$(median "${exec_times[@]}")
ml=$(median "${launch_times[@]}")
echo "exec to first line: median ${me} s (${exec_times[*]})"
echo "new launch to first line: median ${ml} s (${launch_times[*]})"
awk -v e="$me" -v l="$ml" 'BEGIN { printf "exec is %.1fx faster than a new launch\n", l / e }'
