#!/usr/bin/env bash
# The end-to-end tests on every Slurm the test cluster can run: Debian's (22.05) and each
# vendored release (../shared/vendor, built once by tests/cluster/build-slurm.sh), one after
# another on the same cluster, then a version x result table. Extra arguments go to
# `cargo test` (default: every e2e test). Leaves the cluster on Debian's Slurm.
#
#   bash tests/slurm-matrix.sh                 every version, every e2e test
#   RAYSLURM_MATRIX="debian 25.11" bash tests/slurm-matrix.sh e2e_bootstrap
set -uo pipefail
cd "$(dirname "$0")/.."
versions=${RAYSLURM_MATRIX:-debian $(bash tests/cluster/build-slurm.sh --list | tr '\n' ' ')}
filter=("$@")
((${#filter[@]})) || filter=(e2e_)
results=()
for v in $versions; do
  t0=$SECONDS
  log=/tmp/rayslurm-matrix-$v.log
  echo "== Slurm $v (log: $log)" >&2
  if ! bash tests/cluster/cluster.sh up "${RAYSLURM_TEST_NODES:-8}" "${RAYSLURM_TEST_CRASH_NODES:-2}" --slurm "$v" >"$log" 2>&1; then
    results+=("$v|cluster did not start|$((SECONDS - t0)) s")
    tail -n 20 "$log" >&2
    continue
  fi
  bin=$(bash tests/cluster/cluster.sh env | sed -n 's/^RAYSLURM_LAB_SLURM_BIN=//p')
  version=$(PATH=${bin:+$bin:}$PATH SLURM_CONF=/etc/slurm/slurm.conf sinfo --version)
  # The container tests run in tests/run.sh's own step, on Debian's Slurm: skipped on purpose;
  # so are the scale tests (tests/step.sh scale: the cluster here has no scale nodes).
  PATH=${bin:+$bin:}$PATH SLURM_CONF=/etc/slurm/slurm.conf RAYSLURM_TEST_CONTAINERS=0 RAYSLURM_TEST_SCALE=0 RUST_TEST_THREADS=${RUST_TEST_THREADS:-256} RAYSLURM_TEST_AT_ONCE=${RAYSLURM_TEST_AT_ONCE:-6} \
    cargo test --test it "${filter[@]}" >>"$log" 2>&1
  rc=$?
  summary=$(grep -E '^test result:' "$log" | tail -n1 | sed 's/^test result: //; s/; finished.*//')
  failed=$(grep -E '^    [a-z_:]*e2e_' "$log" | tr -d ' ' | paste -sd, -)
  results+=("$version|${summary:-no result (exit $rc)}${failed:+ (failed: $failed)}|$((SECONDS - t0)) s")
  # What a failed test said, here too: CI keeps only what this script prints, not the log.
  if ((rc)); then
    echo "== Slurm $v: what the failed tests said (the end of each; the whole is in $log)" >&2
    sed -n '/^failures:$/,/^test result:/p' "$log" | grep -v '^    ' | tail -n 200 >&2
  fi
done
bash tests/cluster/cluster.sh up "${RAYSLURM_TEST_NODES:-8}" "${RAYSLURM_TEST_CRASH_NODES:-2}" --slurm debian >/dev/null 2>&1 || true
printf '\n| Slurm | e2e tests | time |\n|---|---|---|\n'
for r in "${results[@]}"; do printf '| %s |\n' "${r//|/ | }"; done
# " 0 failed" with its space: "10 failed" is a failure.
for r in "${results[@]}"; do [[ $r == *"ok."*" 0 failed"* ]] || exit 1; done
