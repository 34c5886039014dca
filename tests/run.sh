#!/usr/bin/env bash
# The whole test suite, as README.md gives it: bring the local test cluster up (installing
# Slurm, tini and a Ray venv when missing), then run every test, end-to-end ones included.
# Extra arguments go to `cargo test` (e.g. `bash tests/run.sh bootstrap::`, a feature's folder). Then the Python
# wheel is built and checked as users install it, with one real launch of its binary.
#
# The end-to-end tests mostly wait (for Slurm, for Ray to start, for time limits), so they run
# side by side: a cluster of RAYSLURM_TEST_NODES nodes (default 8; RAYSLURM_TEST_CRASH_NODES more,
# default 2, for the tests that kill a node) and RAYSLURM_TEST_AT_ONCE end-to-end tests at once
# (default 8: the machine's 2 cores are then busy, not crowded), the longest first (the harness's LONG_FIRST): libtest gets a thread for every
# test (RUST_TEST_THREADS), so that every test is in line from the start. RAYSLURM_TEST_SLURM=25.11 runs them on a vendored
# Slurm release instead of Debian's (tests/slurm-matrix.sh runs every one). Each part's time is printed at the end;
# docs/benchmarks.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
times=()
timed() {
  local name=$1 t0=$SECONDS
  shift
  "$@"
  times+=("$name: $((SECONDS - t0)) s")
}
timed "test cluster up" bash tests/cluster/cluster.sh up "${RAYSLURM_TEST_NODES:-8}" "${RAYSLURM_TEST_CRASH_NODES:-2}" \
  --slurm "${RAYSLURM_TEST_SLURM:-debian}"
# The tests, and the jobs they submit, use the cluster's own Slurm clients.
slurm_bin=$(bash tests/cluster/cluster.sh env | sed -n 's/^RAYSLURM_LAB_SLURM_BIN=//p')
if [[ -n $slurm_bin ]]; then export PATH=$slurm_bin:$PATH; fi
export SLURM_CONF=/etc/slurm/slurm.conf
# Every test skipped (and why) is added here and printed at the end: a passing test's own
# output is hidden by libtest. Under CI=true a skip is a failure unless a named variable set to 0
# asks for it (below: the steps of their own).
RAYSLURM_TEST_SKIPS=$(mktemp /tmp/rayslurm-test-skips.XXXXXX)
export RAYSLURM_TEST_SKIPS
# mypy (and cloudpickle) for the Python package's tests, pinned, in target/python-tools.
timed "python test tools" bash tests/python/tools.sh
export RAYSLURM_TEST_MYPY=$PWD/target/python-tools/bin/mypy
timed "cargo build of the tests" cargo test --no-run "$@"
timed "unit tests" cargo test --bins "$@"
# Only the integration tests run side by side: some unit tests watch this process's own sockets.
# The tests that need another part of the lab (container runtimes and an image, the login node
# over SSH, preemption and Slurm's own time limits, the 64 scale nodes) are steps of their own:
# bash tests/step.sh containers|ssh|preemption|scale, which .ci/run runs (tests/it/harness/steps.rs
# lists their tests).
timed "integration tests" env RAYSLURM_TEST_CONTAINERS=0 RAYSLURM_TEST_SSH=0 RAYSLURM_TEST_PREEMPTION=0 RAYSLURM_TEST_SCALE=0 \
  RUST_TEST_THREADS="${RUST_TEST_THREADS:-256}" RAYSLURM_TEST_AT_ONCE="${RAYSLURM_TEST_AT_ONCE:-8}" cargo test --test it "$@"
export RAYSLURM_WHEEL_E2E=1
timed "wheel build and check" bash tests/wheel/check.sh
printf 'tests/run.sh: %s\n' "${times[@]}" >&2
skips=$(sort -u "$RAYSLURM_TEST_SKIPS")
rm -f "$RAYSLURM_TEST_SKIPS"
if [[ -n $skips ]]; then
  printf 'tests/run.sh: skipped %s test(s):\n%s\n' "$(wc -l <<<"$skips")" "$skips" >&2
else
  echo "tests/run.sh: no test skipped" >&2
fi
