#!/usr/bin/env bash
# Start-up and teardown benchmark on the local test cluster: rayslurm against `ray symmetric-run`,
# side by side in one run, for 1..MAX nodes (default 4), REPEAT times each (default 1).
#
#   bash tests/bench/startup.sh [MAX_NODES] [REPEAT]
#
# BENCH_FROM=N starts at N nodes instead of 1; BENCH_RAYSLURM_ARGS adds flags to rayslurm's
# launch (e.g. "--ray-args --include-dashboard=false"), to measure a variant side by side.
#
# Both run the same command. Measured from inside the job with one clock (all nodes are one
# machine): job start (first line of the batch script) -> command start, and command end -> job
# gone from squeue (polled every 0.1 s); plus the srun steps each job made (an srun shim on PATH
# counts them) and, for rayslurm, the bootstrap's own peak memory (its closing log lines).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
max=${1:-4}
repeat=${2:-1}

bash tests/cluster/cluster.sh up "$max" >&2
cargo build --release --quiet
eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(VENV|SHARED)=')"
bench=$RAYSLURM_LAB_SHARED/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$bench/shim"
cat > "$bench/shim/srun" <<SHIM
#!/bin/bash
echo "\$SLURM_JOB_ID \$*" >> "$bench/srun.calls"
exec /usr/bin/srun "\$@"
SHIM
chmod +x "$bench/shim/srun"
: > "$bench/srun.calls"

# The command: stamp its start, make sure Ray sees every node, stamp its end.
read -r -d '' command <<'CMD' || true
echo BENCH_CMD_START $(date +%s.%N)
python -c 'import ray, os; ray.init(); n = sum(x["Alive"] for x in ray.nodes()); assert n == int(os.environ["BENCH_NODES"]), n; print("nodes", n)'
echo BENCH_CMD_END $(date +%s.%N)
CMD

# rayslurm with its own template plus one line that stamps the job's start.
"$repo/target/release/rayslurm" template \
  | sed '/^{%- if load_env %}/i echo BENCH_JOB_START $(date +%s.%N)' > "$bench/stamped.sh.tera"

# Waits for the job to leave squeue; prints the time it was last seen gone.
wait_gone() {
  while [ -n "$(squeue -h -j "$1" 2>/dev/null)" ]; do sleep 0.1; done
  date +%s.%N
}

field() { grep -m1 "^$1 " "$2" | awk '{print $2}'; }

run_rayslurm() {
  local n=$1 dir=$bench/rayslurm-$n-$2
  mkdir -p "$dir" && cd "$dir"
  local id
  id=$("$repo/target/release/rayslurm" launch --quiet --exp-name bench --num-nodes "$n" --time 10 \
    --template "$bench/stamped.sh.tera" --env "BENCH_NODES=$n" --object-store-memory 100000000 \
    --load-env "source $RAYSLURM_LAB_VENV/bin/activate; export PATH=$bench/shim:\$PATH" \
    ${BENCH_RAYSLURM_ARGS:-} --command "$command")
  local gone
  gone=$(wait_gone "$id")
  sleep 0.5
  report rayslurm "$n" "$id" "$dir"/bench_*.log "$gone"
  cd "$repo"
}

run_symmetric() {
  local n=$1 dir=$bench/symmetric-$n-$2
  mkdir -p "$dir" && cd "$dir"
  cat > job.sh <<JOB
#!/bin/bash
#SBATCH --job-name=bench-sym
#SBATCH --nodes=$n
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
#SBATCH --time=10
#SBATCH --output=$dir/job.log
echo BENCH_JOB_START \$(date +%s.%N)
source $RAYSLURM_LAB_VENV/bin/activate
export PATH=$bench/shim:\$PATH BENCH_NODES=$n
head=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | head -n1)
head_ip=\$(getent ahostsv4 "\$head" | awk 'NR==1 {print \$1}')
srun --nodes=$n --ntasks-per-node=1 ray symmetric-run --address "\$head_ip:6379" --min-nodes $n \
  --object-store-memory 100000000 --disable-usage-stats -- bash -c $(printf '%q' "$command")
JOB
  local id gone
  id=$(sbatch --parsable job.sh)
  gone=$(wait_gone "$id")
  sleep 0.5
  report symmetric-run "$n" "$id" "$dir/job.log" "$gone"
  cd "$repo"
}

report() {
  local tool=$1 n=$2 id=$3 log=$4 gone=$5
  local js cs ce steps mem
  js=$(field BENCH_JOB_START "$log"); cs=$(field BENCH_CMD_START "$log"); ce=$(field BENCH_CMD_END "$log")
  if [ -z "$js" ] || [ -z "$cs" ] || [ -z "$ce" ] || ! grep -q "^nodes $n\$" "$log"; then
    echo "$tool n=$n job $id: FAILED, see $log" >&2
    echo "$tool $n NA NA NA NA"
    return
  fi
  steps=$(awk -v id="$id" '$1 == id' "$bench/srun.calls" | wc -l)
  mem=$(grep -o 'bootstrap peak memory [0-9.]*' "$log" | awk '{print $4}' | sort -n | tail -n1 || true)
  awk -v t="$tool" -v n="$n" -v js="$js" -v cs="$cs" -v ce="$ce" -v g="$gone" -v s="$steps" -v m="${mem:-NA}" \
    'BEGIN { printf "%s %d %.2f %.2f %d %s\n", t, n, cs - js, g - ce, s, m }'
}

results=$bench/results.txt
: > "$results"
for n in $(seq "${BENCH_FROM:-1}" "$max"); do
  for r in $(seq 1 "$repeat"); do
    run_rayslurm "$n" "$r" | tee -a "$results"
    run_symmetric "$n" "$r" | tee -a "$results"
  done
done

echo
echo "medians over $repeat run(s); times in seconds; results in $results"
printf '%-6s | %-28s | %-28s | %-8s | %-13s | %s\n' nodes "job start -> command start" "command end -> job gone" "ratio" "srun steps" "bootstrap MB"
printf '%-6s | %-13s %-14s | %-13s %-14s | %-8s | %-13s | %s\n' "" rayslurm symmetric-run rayslurm symmetric-run start "rs / sym" "peak, any node"
for n in $(seq "${BENCH_FROM:-1}" "$max"); do
  awk -v n="$n" '
    function median(a, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                      return k ? (k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2) : "NA" }
    $2 == n && $3 != "NA" { if ($1 == "rayslurm") { rs[++r] = $3; rg[r] = $4; rsteps = $5; mem = $6 } else { ss[++s] = $3; sg[s] = $4; ssteps = $5 } }
    END {
      a = median(rs, r); b = median(ss, s); c = median(rg, r); d = median(sg, s)
      ratio = (a != "NA" && b != "NA" && b > 0) ? sprintf("%.2f", a / b) : "NA"
      printf "%-6d | %-13s %-14s | %-13s %-14s | %-8s | %-13s | %s\n", n, a, b, c, d, ratio, rsteps " / " ssteps, mem
    }' "$results"
done
