#!/usr/bin/env bash
# How long `rayslurm launch --dry-run` takes, end to end (process start, render, write):
#   bash tests/bench/dry_run.sh [RUNS]        (default 200 runs; prints the mean and the slowest)
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet
runs=${1:-200}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
bin=$OLDPWD/target/release/rayslurm
"$bin" launch --dry-run --quiet --exp-name warm --command true > /dev/null  # copies the binary once
worst=0 total=0
for _ in $(seq "$runs"); do
  t0=$(date +%s%N)
  "$bin" launch --dry-run --quiet --exp-name bench -n 4 --num-gpus 2 --time 1:00:00 \
    --load-env 'source venv/bin/activate' --env A=1 --command 'python train.py --lr 0.1' > /dev/null
  t=$(( $(date +%s%N) - t0 ))
  total=$(( total + t )); (( t > worst )) && worst=$t
done
awk -v t="$total" -v n="$runs" -v w="$worst" 'BEGIN { printf "launch --dry-run: mean %.2f ms, slowest %.2f ms over %d runs\n", t / n / 1e6, w / 1e6, n }'
