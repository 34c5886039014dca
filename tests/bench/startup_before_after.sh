#!/usr/bin/env bash
# Start-up before and after a change, side by side in one run on the local test cluster: the
# rayslurm built from REV (default: the commit before the start-up token check moved beside the
# command) against this checkout's, alternating, N nodes, REPEAT times each.
#
#   bash tests/bench/startup_before_after.sh [REV] [NODES] [REPEAT]
#
# BENCH_LOAD=K keeps K busy loops running on the machine meanwhile (a loaded shared node, where
# Ray's dashboard is slow to answer); a run that fails (for instance `startup-failed`) is
# counted, not timed.
#
# Measured from inside the job with one clock: job start (first line of the batch script) ->
# command start, as tests/bench/startup.sh measures it.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
rev=${1:-6af447d}
nodes=${2:-1}
repeat=${3:-3}

# A lab of at least NODES nodes; one already up (the tests' 4 + 2) is used as it is.
if ! sinfo -h -p lab -o %D 2>/dev/null | awk -v n="$nodes" '$1 >= n { ok = 1 } END { exit !ok }'; then
  bash tests/cluster/cluster.sh up "$(( nodes > 3 ? nodes : 3 ))" >&2
fi
cargo build --release --quiet
old=$repo/target/bench-before
if [ ! -x "$old/target/release/rayslurm" ] || [ "$(git -C "$old" rev-parse HEAD 2>/dev/null)" != "$(git rev-parse "$rev")" ]; then
  rm -rf "$old"
  git worktree prune
  git worktree add --detach "$old" "$rev" >&2
  (cd "$old" && cargo build --release --quiet)
fi
eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(VENV|SHARED)=')"
bench=$RAYSLURM_LAB_SHARED/bench-ba-$(date +%Y%m%d-%H%M%S)
mkdir -p "$bench"

load=()
stop_load() { for p in "${load[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_load EXIT
for _ in $(seq 1 "${BENCH_LOAD:-0}"); do
  (while :; do :; done) &
  load+=($!)
done

read -r -d '' command <<'CMD' || true
echo BENCH_CMD_START $(date +%s.%N)
python -c 'import ray, os; ray.init(); n = sum(x["Alive"] for x in ray.nodes()); assert n == int(os.environ["BENCH_NODES"]), n; print("nodes", n)'
CMD

field() { grep -m1 "^$1 " "$2" | awk '{print $2}'; }

run() {
  local tool=$1 bin=$2 r=$3 dir=$bench/$1-$3
  mkdir -p "$dir" && cd "$dir"
  "$bin" template | sed '/^{%- if load_env %}/i echo BENCH_JOB_START $(date +%s.%N)' > stamped.sh.tera
  local id
  id=$("$bin" launch --quiet --exp-name bench --num-nodes "$nodes" --time 10 \
    --template stamped.sh.tera --env "BENCH_NODES=$nodes" --object-store-memory 100000000 \
    --load-env "source $RAYSLURM_LAB_VENV/bin/activate" --command "$command")
  while [ -n "$(squeue -h -j "$id" 2>/dev/null)" ]; do sleep 0.2; done
  local log js cs
  # The log, or (since the private tree) its link in the default log directory.
  log=$(ls "$dir"/bench_*.log "$dir"/rayslurm-logs/bench_*.log 2>/dev/null | head -n1 || true)
  js=$(field BENCH_JOB_START "$log"); cs=$(field BENCH_CMD_START "$log")
  if [ -z "$js" ] || [ -z "$cs" ] || ! grep -q "^nodes $nodes\$" "$log"; then
    echo "$tool job $id: FAILED, see $log" >&2
    echo "$tool FAILED" >> "$results"
    cd "$repo"
    return
  fi
  awk -v t="$tool" -v js="$js" -v cs="$cs" 'BEGIN { printf "%s %.2f\n", t, cs - js }'
  cd "$repo"
}

results=$bench/results.txt
: > "$results"
for r in $(seq 1 "$repeat"); do
  run before "$old/target/release/rayslurm" "$r" | tee -a "$results"
  run after "$repo/target/release/rayslurm" "$r" | tee -a "$results"
done
echo
echo "job start -> command start, $nodes node(s), ${BENCH_LOAD:-0} busy loop(s), median of $repeat (seconds); $results"
awk '
  function median(a, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                    return k ? (k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2) : "NA" }
  $2 == "FAILED" { f[$1]++; next }
  $1 == "before" { b[++nb] = $2 } $1 == "after" { a[++na] = $2 }
  END { mb = median(b, nb); ma = median(a, na); printf "before %s  after %s  after/before %s  failed: before %d, after %d\n", mb, ma, (mb > 0 && ma != "NA") ? sprintf("%.2f", ma / mb) : "NA", f["before"], f["after"] }' "$results"
