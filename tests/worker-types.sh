#!/usr/bin/env bash
# The end-to-end tests of an elastic cluster's worker types (tests/it/elastic/e2e_worker_types.rs),
# a step of their own (.ci/run runs it after tests/run.sh, which skips them): each takes minutes
# of Slurm's own time (1-minute time limits rolled over, a preemption's 60 s of grace on the
# `scavenger` partition, GPU workers on the typed GPU nodes). Brings the test cluster up if it is
# not; extra arguments go to `cargo test` (e.g. --locked). Budget: 10 minutes.
#
#   bash tests/worker-types.sh
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
bash tests/cluster/cluster.sh up "${RAYSLURM_TEST_NODES:-8}" "${RAYSLURM_TEST_CRASH_NODES:-2}" \
  --slurm "${RAYSLURM_TEST_SLURM:-debian}"
slurm_bin=$(bash tests/cluster/cluster.sh env | sed -n 's/^RAYSLURM_LAB_SLURM_BIN=//p')
if [[ -n $slurm_bin ]]; then export PATH=$slurm_bin:$PATH; fi
export SLURM_CONF=/etc/slurm/slurm.conf
RAYSLURM_TEST_WORKER_TYPES=1 RUST_TEST_THREADS=64 RAYSLURM_TEST_AT_ONCE="${RAYSLURM_TEST_AT_ONCE:-6}" \
  timeout 600 cargo test --test it "$@" -- elastic::e2e_worker_types
echo "tests/worker-types.sh: $((SECONDS - t0)) s" >&2
