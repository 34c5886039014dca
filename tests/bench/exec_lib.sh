# What tests/bench/exec.sh and exec_route.sh share (sourced, from the checkout's top): the lab
# up, a release build, a fresh bench directory `bench-$1-TIME` on the lab's shared filesystem as
# the working directory and the private state, and the figures: the command both time prints
# `BENCH_FIRST` and a time stamp as its first line.
bash tests/cluster/cluster.sh up 3 >&2
cargo build --release --quiet
rayslurm=$(pwd)/target/release/rayslurm
eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(VENV|SHARED)=')"
bench=$RAYSLURM_LAB_SHARED/bench-$1-$(date +%Y%m%d-%H%M%S)
mkdir -p "$bench"
cd "$bench"
export RAYSLURM_STATE_DIR=$bench/state
load_env="source $RAYSLURM_LAB_VENV/bin/activate"

first_line='echo BENCH_FIRST $(date +%s.%N)'
# seconds from $1 (a time stamp) to the BENCH_FIRST stamp in the output $2
elapsed() { awk -v t0="$1" '/BENCH_FIRST/ { printf "%.2f\n", $2 - t0; exit }' <<<"$2"; }
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
