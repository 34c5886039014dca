#!/usr/bin/env bash
# Costs against node count on the test cluster's `scale` partition (`cluster.sh up 8 2 --scale
# 64`): rayslurm's Ray runs against `ray symmetric-run` at the same sizes, side by side in one
# run, and rayslurm's --per-node runs (no Ray). docs/scale.md has the figures.
#
#   bash tests/bench/scale.sh [ray|per-node|both] [SIZES]
#     ray       SIZES default "1 4 8 16 32": rayslurm and symmetric-run, one after the other
#     per-node  SIZES default "1 4 8 16 32 64": rayslurm --per-node
#
# BENCH_REPEAT=R runs each R times (default 1); BENCH_NO_SYMMETRIC=1 leaves symmetric-run out,
# BENCH_NO_RAYSLURM=1 rayslurm's Ray runs;
# BENCH_STAGGER=S delays each Ray worker's `ray start` by S x its rank seconds (a `ray` shim on
# PATH: what a start in waves would give; never in the figures without saying so).
# BENCH_SYMRUN_TIMEOUT=T sets symmetric-run's wait for the cluster (default Ray's 30 s).
#
# Measured from outside the job with one clock (all nodes are one machine): job start (first
# line of the batch script) -> command start and command end -> job gone from squeue (polled
# every 0.1 s), stamps the jobs print; the head bootstrap's CPU (utime + stime of its own
# process, /proc sampled every 0.2 s, its last sample) and the most descriptors it held (files,
# sockets, pipes), its peak memory (its own closing log line, VmHWM); srun steps and Slurm query
# calls (squeue, scontrol, sacct, sinfo) by shims on PATH; the log's bytes per node. The
# cluster must be used by nobody else meanwhile: after the build, the script holds the lab's
# lock (/tmp/rayslurm-e2e.lock, which every end-to-end run on a shared machine takes) to its end.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
mode=${1:-both}
sizes_ray=${2:-1 4 8 16 32}
sizes_pn=${2:-1 4 8 16 32 64}
repeat=${BENCH_REPEAT:-1}
export SLURM_CONF=/etc/slurm/slurm.conf

cargo build --release --quiet
exec 9>/tmp/rayslurm-e2e.lock
flock 9
bash tests/cluster/cluster.sh up "${RAYSLURM_TEST_NODES:-8}" "${RAYSLURM_TEST_CRASH_NODES:-2}" --scale 64 >&2
eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(VENV|SHARED|SCALE_PARTITION)=')"
part=$RAYSLURM_LAB_SCALE_PARTITION
bench=$RAYSLURM_LAB_SHARED/bench-scale-$(date +%Y%m%d-%H%M%S)
mkdir -p "$bench/shim"
: >"$bench/calls"
# Every Slurm client the jobs call, counted: "JOB CLIENT ARGS".
for c in srun squeue scontrol sacct sinfo; do
  real=$(command -v "$c")
  cat >"$bench/shim/$c" <<SHIM
#!/bin/bash
echo "\${SLURM_JOB_ID:-login} $c \$*" >> "$bench/calls"
exec $real "\$@"
SHIM
  chmod +x "$bench/shim/$c"
done
# BENCH_STAGGER: a worker's `ray start` waits its rank x S seconds (the head's starts at once).
if [[ -n ${BENCH_STAGGER:-} ]]; then
  cat >"$bench/shim/ray" <<SHIM
#!/bin/bash
if [[ \$1 == start && " \$* " != *" --head "* && -n \${SLURM_PROCID:-} ]]; then
  sleep \$(awk -v r="\$SLURM_PROCID" -v s="$BENCH_STAGGER" 'BEGIN { print (r + 1) * s }')
fi
exec $RAYSLURM_LAB_VENV/bin/ray "\$@"
SHIM
  chmod +x "$bench/shim/ray"
fi

# The Ray command: stamp its start, one task on every node (by node id), stamp its end.
cat >"$bench/each_node.py" <<'PY'
import os, socket, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init()
nodes = [n for n in ray.nodes() if n["Alive"]]
@ray.remote(num_cpus=1)
def where():
    return socket.gethostname()
hosts = ray.get([where.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote() for n in nodes])
assert len(set(hosts)) == int(os.environ["BENCH_NODES"]), hosts
print("nodes", len(set(hosts)))
PY
ray_command="echo BENCH_CMD_START \$(date +%s.%N); python $bench/each_node.py; echo BENCH_CMD_END \$(date +%s.%N)"
pn_command="if [ \"\$RANK\" = 0 ]; then echo BENCH_CMD_START \$(date +%s.%N); fi; hostname; \
if [ \"\$RANK\" = 0 ]; then echo nodes \$WORLD_SIZE; echo BENCH_CMD_END \$(date +%s.%N); fi"

# rayslurm's own template plus one line that stamps the job's start.
"$repo/target/release/rayslurm" template \
  | sed '/^{%- if load_env %}/i echo BENCH_JOB_START $(date +%s.%N)' >"$bench/stamped.sh.tera"

# watch ID OUT: until job ID leaves squeue, samples its head bootstrap (utime+stime ticks,
# descriptors); writes "GONE_EPOCH CPU_S MAX_FDS" to OUT.
watch() {
  local id=$1 out=$2 pid="" cpu=0 fds=0 max_fds=0 tck
  tck=$(getconf CLK_TCK)
  while [[ -n $(squeue -h -j "$id" 2>/dev/null) ]]; do
    if [[ -z $pid || ! -d /proc/$pid ]]; then
      pid=$(for p in $(pgrep -f 'bootstrap' || true); do
        tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- '--worker\|--watchdog' && continue
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_JOB_ID=$id" && echo "$p" && break
      done || true)
    fi
    if [[ -n $pid && -r /proc/$pid/stat ]]; then
      cpu=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || echo "$cpu")
      fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l || true)
      ((fds > max_fds)) && max_fds=$fds
    fi
    sleep 0.1
  done
  echo "$(date +%s.%N) $(awk -v c="$cpu" -v t="$tck" 'BEGIN { printf "%.2f", c / t }') $max_fds" >"$out"
}

# field NAME LOG: the value of the log's first `NAME VALUE` line (a rank's line has its
# `[RANK NODE] ` prefix)
field() { sed -E 's/^\[[0-9]+ [^]]*\] //' "$2" | grep -m1 "^$1 " | awk '{print $2}' || true; }

run_rayslurm() {
  local kind=$1 n=$2 r=$3 dir=$bench/rayslurm-$1-$2-$3 id launched flags=()
  mkdir -p "$dir" && cd "$dir"
  if [[ $kind == per-node ]]; then
    flags=(--per-node --command "$pn_command")
  else
    flags=(--object-store-memory 100000000 --command "$ray_command")
  fi
  launched=$("$repo/target/release/rayslurm" launch --json --exp-name bench -p "$part" --num-nodes "$n" \
    --time 20 --ready-timeout 900 --template "$bench/stamped.sh.tera" --env "BENCH_NODES=$n" \
    --load-env "source $RAYSLURM_LAB_VENV/bin/activate; export PATH=$bench/shim:\$PATH" \
    ${BENCH_RAYSLURM_ARGS:-} "${flags[@]}")
  id=$(jq -r .job_id <<<"$launched")
  watch "$id" "$dir/watch"
  sleep 0.5
  report "rayslurm-$kind" "$n" "$id" "$(jq -r .log <<<"$launched")" "$dir/watch"
  cd "$repo"
}

run_symmetric() {
  local n=$1 r=$2 dir=$bench/symmetric-$1-$2 id
  mkdir -p "$dir" && cd "$dir"
  cat >job.sh <<JOB
#!/bin/bash
#SBATCH --job-name=bench-sym
#SBATCH --partition=$part
#SBATCH --nodes=$n
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
#SBATCH --time=20
#SBATCH --output=$dir/job.log
echo BENCH_JOB_START \$(date +%s.%N)
source $RAYSLURM_LAB_VENV/bin/activate
export PATH=$bench/shim:\$PATH BENCH_NODES=$n
# A HOME of its own: a token in ~/.ray/auth_token (rayslurm's tests leave one) turns Ray's token
# authentication on where it is read, and symmetric-run's workers are then refused by the head.
export HOME=$dir/home
mkdir -p "\$HOME"
${BENCH_SYMRUN_TIMEOUT:+export RAY_SYMMETRIC_RUN_CLUSTER_WAIT_TIMEOUT=$BENCH_SYMRUN_TIMEOUT}
head=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | head -n1)
head_ip=\$(getent ahostsv4 "\$head" | awk 'NR==1 {print \$1}')
srun --nodes=$n --ntasks-per-node=1 --cpu-bind=none ray symmetric-run --address "\$head_ip:6379" --min-nodes $n \
  --object-store-memory 100000000 --disable-usage-stats -- bash -c $(printf '%q' "$ray_command")
JOB
  id=$(sbatch --parsable job.sh)
  watch "$id" "$dir/watch"
  sleep 0.5
  report symmetric-run "$n" "$id" "$dir/job.log" "$dir/watch"
  cd "$repo"
}

# One line: tool n start gone head-cpu-s head-peak-MB head-max-fds srun-steps queries log-bytes/node
report() {
  local tool=$1 n=$2 id=$3 log=$4 watched=$5 js cs ce gone cpu fds steps queries mem bytes
  read -r gone cpu fds <"$watched"
  steps=$(awk -v id="$id" '$1 == id && $2 == "srun"' "$bench/calls" | wc -l)
  queries=$(awk -v id="$id" '$1 == id && $2 != "srun"' "$bench/calls" | wc -l)
  bytes=$(($(stat -c %s "$log" 2>/dev/null || echo 0) / n))
  js=$(field BENCH_JOB_START "$log"); cs=$(field BENCH_CMD_START "$log"); ce=$(field BENCH_CMD_END "$log")
  if [[ $tool == symmetric-run ]]; then cpu=NA fds=NA; fi
  mem=$(grep "done: " "$log" | grep -o 'bootstrap peak memory [0-9.]*' | awk '{print $4}' | tail -n1 || true)
  if [[ -z $js || -z $cs || -z $ce ]] || ! grep -Eq "^(\[0 [^]]*\] )?nodes $n\$" "$log"; then
    echo "$tool n=$n job $id: FAILED ($(grep -m1 -o 'done: [a-z-]*' "$log" || echo 'no end line')), see $log" >&2
    echo "$tool $n FAILED NA ${cpu} ${mem:-NA} ${fds} $steps $queries $bytes"
    return
  fi
  awk -v t="$tool" -v n="$n" -v js="$js" -v cs="$cs" -v ce="$ce" -v g="$gone" -v c="$cpu" -v m="${mem:-NA}" \
    -v f="$fds" -v s="$steps" -v q="$queries" -v b="$bytes" \
    'BEGIN { printf "%s %d %.2f %.2f %s %s %s %d %d %d\n", t, n, cs - js, g - ce, c, m, f, s, q, b }'
}

results=$bench/results.txt
: >"$results"
if [[ $mode == ray || $mode == both ]]; then
  for n in $sizes_ray; do
    for r in $(seq 1 "$repeat"); do
      [[ -n ${BENCH_NO_RAYSLURM:-} ]] || run_rayslurm ray "$n" "$r" | tee -a "$results"
      [[ -n ${BENCH_NO_SYMMETRIC:-} ]] || run_symmetric "$n" "$r" | tee -a "$results"
    done
  done
fi
if [[ $mode == per-node || $mode == both ]]; then
  for n in $sizes_pn; do
    for r in $(seq 1 "$repeat"); do run_rayslurm per-node "$n" "$r" | tee -a "$results"; done
  done
fi
echo
echo "results in $results${BENCH_STAGGER:+ (Ray workers staggered by ${BENCH_STAGGER} s x rank)}"
echo "tool nodes start-s gone-s head-cpu-s head-peak-MB head-max-fds srun-steps slurm-queries log-bytes/node"
cat "$results"
