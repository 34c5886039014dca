#!/usr/bin/env bash
# The scale tests (tests/it/scale/): a Ray run on 32 nodes with a task on each, a --per-node run
# of 64 ranks with a setup on each and one failing, a node killed in a 32-node Ray run. A step of
# their own (.ci/run runs it after tests/run.sh, which skips them): they need the test cluster
# with its 64 small nodes of partition `scale` (`cluster.sh up 8 2 --scale 64`, which this brings
# up if it is not; the usual 8 lab and 2 crash nodes are kept as they are), and a 32-node Ray
# start is minutes of CPU on 2 cores. The tests run one after another. Extra arguments go to
# `cargo test` (e.g. --locked). Budget: 20 minutes. docs/scale.md has the figures.
#
#   bash tests/scale.sh
#   RAYSLURM_TEST_SCALE_RAY_NODES=8 bash tests/scale.sh    # the Ray tests on 8 nodes
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
bash tests/cluster/cluster.sh up "${RAYSLURM_TEST_NODES:-8}" "${RAYSLURM_TEST_CRASH_NODES:-2}" \
  --scale 64 --slurm "${RAYSLURM_TEST_SLURM:-debian}"
slurm_bin=$(bash tests/cluster/cluster.sh env | sed -n 's/^RAYSLURM_LAB_SLURM_BIN=//p')
if [[ -n $slurm_bin ]]; then export PATH=$slurm_bin:$PATH; fi
export SLURM_CONF=/etc/slurm/slurm.conf
RAYSLURM_TEST_SCALE=1 RUST_TEST_THREADS=64 RAYSLURM_TEST_AT_ONCE="${RAYSLURM_TEST_AT_ONCE:-6}" \
  timeout 1200 cargo test --test it "$@" -- scale::
echo "tests/scale.sh: $((SECONDS - t0)) s" >&2
