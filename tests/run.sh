#!/usr/bin/env bash
# The whole test suite, as README.md gives it: bring the local test cluster up (installing
# Slurm, tini and a Ray venv when missing), then run every test, end-to-end ones included.
# Extra arguments go to `cargo test` (e.g. `bash tests/run.sh e2e_bootstrap`). Then the Python
# wheel is built and checked as users install it, with one real launch of its binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/cluster/cluster.sh up "${RAYSLURM_TEST_NODES:-3}"
cargo test "$@"
export RAYSLURM_WHEEL_E2E=1
bash tests/wheel/check.sh
