#!/usr/bin/env bash
# A function on a persistent cluster against a new 1-node launch of it, side by side in one
# run: the time from `submit(fn)` to its `result()`, REPEAT times each (default 3).
#
#   bash tests/bench/submit.sh [REPEAT]
#
# `Cluster(name).submit` runs the call as a job of a 1-node cluster that is already up (exec);
# `Executor(num_nodes=1).submit` launches a new 1-node run for it (sbatch, then Ray on its node).
# Both connect Ray and return the same value. The test cluster must be up (this script does not
# bring it up); the rayslurm on PATH is used, else the release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-3}
eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(UP|VENV|SHARED)=')"
[[ ${RAYSLURM_LAB_UP:-0} == 1 ]] || { echo "the test cluster is down: bash tests/cluster/cluster.sh up" >&2; exit 1; }
if ! command -v rayslurm >/dev/null; then
  cargo build --release --quiet
  export PATH=$PWD/target/release:$PATH
fi
export PYTHONPATH=$PWD/python RAYSLURM_CONFIG=/dev/null
bench=$RAYSLURM_LAB_SHARED/bench-submit-$(date +%Y%m%d-%H%M%S)
mkdir -p "$bench"
cd "$bench"
export RAYSLURM_STATE_DIR=$bench/state
"$RAYSLURM_LAB_VENV/bin/python" - "$repeat" "source $RAYSLURM_LAB_VENV/bin/activate" <<'PY'
import statistics, sys, time
import rayslurm

repeat, load_env = int(sys.argv[1]), sys.argv[2]
# Not exclusive: the launches must find room beside the cluster.
common = dict(load_env=load_env, object_store_memory=100_000_000, time=20, exclusive=False)
cluster = rayslurm.up(f"benchsubmit{time.time_ns() % 10**6}", num_nodes=1, **common)


def call(x: int) -> int:
    import ray

    return x + int(ray.cluster_resources()["CPU"])


def timed(submit) -> float:
    started = time.monotonic()
    submit().result(poll=1)
    return time.monotonic() - started


try:
    executor = rayslurm.Executor(".", num_nodes=1, **common)
    on_cluster, launched = [], []
    for r in range(1, repeat + 1):
        on_cluster.append(timed(lambda: rayslurm.Cluster(cluster.name).submit(call, r)))
        launched.append(timed(lambda: executor.submit(call, r)))
        print(f"round {r}: cluster {on_cluster[-1]:.2f} s, new launch {launched[-1]:.2f} s",
              file=sys.stderr)
finally:
    cluster.down()
mc, ml = statistics.median(on_cluster), statistics.median(launched)
print(f"submit to result on a live cluster: median {mc:.2f} s ({', '.join(f'{t:.2f}' for t in on_cluster)})")
print(f"submit to result with a new 1-node launch: median {ml:.2f} s ({', '.join(f'{t:.2f}' for t in launched)})")
print(f"the cluster's submit is {ml / mc:.1f}x faster")
PY
