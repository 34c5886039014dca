#!/usr/bin/env bash
# Builds the Python wheel (manylinux2014: the binary runs on glibc 2.17 and newer, RHEL 7 on)
# and checks it as a user gets it, on a fresh Debian machine with only Rust and Python 3:
#
#   1. a build venv (target/wheel-venv) with pinned maturin and ziglang from PyPI
#   2. `maturin build --release --zig --compatibility manylinux2014` into target/wheels
#   3. the binary in the wheel needs no glibc symbol newer than GLIBC_2.17 (objdump -T)
#   4. the wheel installed into a fresh venv (target/wheel-test-venv) with pip, offline:
#      its `rayslurm --version`, a `launch --dry-run --json`, and the Python package's tests
#      (tests/wheel/test_*.py, plain unittest; cloudpickle, pinned, for the Executor's)
#   5. only with RAYSLURM_WHEEL_E2E=1: one real launch on the local test cluster (which must
#      be up: `bash tests/cluster/cluster.sh up`) with the installed binary, followed to its end,
#      and a function submitted from the wheel's venv, its value and its exception back
#
# Ends with one `wheel-check: PASSED ...` or `wheel-check: FAILED ...` line.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

readonly MATURIN=maturin==1.16.0
readonly ZIGLANG=ziglang==0.17.1
readonly MAX_GLIBC=2.17
readonly WHEELS=$repo/target/wheels
readonly BUILD_VENV=$repo/target/wheel-venv
readonly TEST_VENV=$repo/target/wheel-test-venv

say() { printf 'wheel-check: %s\n' "$*" >&2; }
failed=0
fail() {
  say "FAILED: $*"
  failed=1
  exit 1
}
scratch=$(mktemp -d)
# A step that fails without calling `fail` (a command under set -e) still ends with one line.
trap 'rc=$?; rm -rf "$scratch"; ((rc == 0 || failed)) || say "FAILED: a step exited with code $rc (see above)"' EXIT

# Debian packages for what is missing (as root, like tests/cluster/cluster.sh).
apt_updated=0
need_package() {
  local package=$1
  command -v apt-get >/dev/null || fail "$package is missing and apt-get is not here to install it"
  if ((!apt_updated)); then
    apt-get update -qq
    apt_updated=1
  fi
  say "installing $package"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package" >/dev/null
}

python=${PYTHON:-python3}
command -v "$python" >/dev/null || fail "$python not found (set PYTHON to a Python 3.8+)"
command -v cargo >/dev/null || fail "cargo not found: install a Rust toolchain"
"$python" -c 'import venv, ensurepip' 2>/dev/null || need_package python3-venv
command -v objdump >/dev/null || need_package binutils

# A venv from the real interpreter (pyenv's shims are scripts, not interpreters).
make_venv() {
  local real
  real=$("$python" -c 'import sys; print(sys.executable)')
  "$real" -m venv "$1"
}

# ---------------------------------------------------------------- 1. build venv
if [[ ! -x $BUILD_VENV/bin/python ]]; then
  say "creating the build venv $BUILD_VENV"
  make_venv "$BUILD_VENV"
fi
"$BUILD_VENV/bin/pip" install -q --disable-pip-version-check "$MATURIN" "$ZIGLANG"

# ---------------------------------------------------------------- 2. build
mkdir -p "$WHEELS"
rm -f "$WHEELS"/rayslurm-*.whl
say "building the wheel (about 90 s on 2 cores)"
started=$SECONDS
# maturin finds zig through the venv's Python (ziglang) when the venv comes first on PATH.
PATH=$BUILD_VENV/bin:$PATH maturin build --release --locked --zig \
  --compatibility manylinux2014 --out "$WHEELS"
build_seconds=$((SECONDS - started))
wheels=("$WHEELS"/rayslurm-*.whl)
((${#wheels[@]} == 1)) && [[ -f ${wheels[0]} ]] || fail "expected one wheel in $WHEELS, found: ${wheels[*]}"
wheel=${wheels[0]}
wheel_name=$(basename "$wheel")
[[ $wheel_name == *manylinux_2_17_* ]] || fail "$wheel_name is not tagged manylinux_2_17"
say "built $wheel_name in ${build_seconds} s"

# ---------------------------------------------------------------- 3. glibc
# newest_glibc FILE: the newest GLIBC_x.y symbol version FILE needs, or "none".
newest_glibc() {
  objdump -T "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV | tail -n 1 \
    | grep . || echo none
}
# needs_at_most FILE: fails when FILE needs a glibc newer than MAX_GLIBC.
needs_at_most() {
  local file=$1 newest
  newest=$(newest_glibc "$file")
  [[ $newest != none ]] || fail "$file has no GLIBC symbol versions: is it a dynamic glibc binary?"
  if [[ $(printf '%s\n' "$MAX_GLIBC" "$newest" | sort -V | tail -n 1) != "$MAX_GLIBC" ]]; then
    fail "$file needs GLIBC_$newest, newer than GLIBC_$MAX_GLIBC: it would not start on RHEL 7"
  fi
  say "$file needs GLIBC_$newest at most (limit GLIBC_$MAX_GLIBC)"
  newest_found=$newest
}
"$BUILD_VENV/bin/python" -m zipfile -e "$wheel" "$scratch/unpacked"
in_wheel=("$scratch"/unpacked/rayslurm-*.data/scripts/rayslurm)
[[ -f ${in_wheel[0]} ]] || fail "$wheel_name has no rayslurm-*.data/scripts/rayslurm"
[[ -f $scratch/unpacked/rayslurm/__init__.py ]] || fail "$wheel_name has no rayslurm/__init__.py"
needs_at_most "${in_wheel[0]}"

# ---------------------------------------------------------------- 4. install and use
rm -rf "$TEST_VENV"
make_venv "$TEST_VENV"
"$TEST_VENV/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$WHEELS" rayslurm
# What Executor.submit pickles a call with (the package imports it only then): its tests need it.
"$TEST_VENV/bin/pip" install -q --disable-pip-version-check cloudpickle==3.1.3
bin=$TEST_VENV/bin/rayslurm
[[ -x $bin ]] || fail "pip install put no rayslurm into $TEST_VENV/bin"
needs_at_most "$bin"

version=$("$bin" --version)
[[ $version =~ ^rayslurm\ [0-9.]+\ \(([0-9a-f]{7,}|unknown)\ [a-z0-9_]+-[a-z0-9_-]+\)$ ]] \
  || fail "unexpected \`rayslurm --version\`: $version"
say "installed: $version"
[[ $("$TEST_VENV/bin/python" -m rayslurm --version) == "$version" ]] \
  || fail "\`python -m rayslurm --version\` does not run the installed binary"

# Away from the user's config and run records.
export RAYSLURM_CONFIG=/dev/null RAYSLURM_STATE_DIR=$scratch/state
mkdir -p "$scratch/dry"
(cd "$scratch/dry" && "$bin" launch --exp-name wheelcheck --command true --dry-run --json) \
  >"$scratch/dry.json"
"$TEST_VENV/bin/python" - "$scratch/dry.json" <<'EOF' || fail "launch --dry-run --json printed $(cat "$scratch/dry.json")"
import json, os, sys
result = json.load(open(sys.argv[1]))
assert result["exp_name"] == "wheelcheck" and result["submitted"] is False, result
assert result["job_id"] is None and os.path.isfile(result["script"]), result
EOF
say "launch --dry-run --json: ok"

# The installed package, not a source tree, is the one imported: run from the scratch dir.
package=$(cd "$scratch" && "$TEST_VENV/bin/python" -c 'import rayslurm; print(rayslurm.__file__)')
[[ $package == "$TEST_VENV"/* ]] || fail "imported rayslurm from $package, not from $TEST_VENV"
(cd "$scratch" && "$TEST_VENV/bin/python" -m unittest discover -s "$repo/tests/wheel" \
  -t "$repo/tests/wheel" -p 'test_*.py' -v) || fail "the Python package's tests failed"

# ---------------------------------------------------------------- 5. one real launch
e2e="skipped (set RAYSLURM_WHEEL_E2E=1, with the test cluster up)"
# Under CI the launch runs unless RAYSLURM_WHEEL_E2E=0 skips it on purpose.
if [[ ${CI:-} == true && -z ${RAYSLURM_WHEEL_E2E:-} ]]; then
  fail "CI=true but RAYSLURM_WHEEL_E2E is unset: set it to 1 (with the test cluster up), or to 0 to skip the launch on purpose"
fi
if [[ ${RAYSLURM_WHEEL_E2E:-} == 0 && -n ${RAYSLURM_TEST_SKIPS:-} ]]; then
  echo "SKIPPED wheel check's launch: RAYSLURM_WHEEL_E2E=0" >>"$RAYSLURM_TEST_SKIPS"
fi
if [[ ${RAYSLURM_WHEEL_E2E:-0} == 1 ]]; then
  eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(UP|VENV|SHARED)=')"
  [[ ${RAYSLURM_LAB_UP:-0} == 1 ]] || fail "RAYSLURM_WHEEL_E2E=1 but the test cluster is down: bash tests/cluster/cluster.sh up"
  # Jobs run from the shared directory, as from a home directory on a real cluster; the
  # nodes run the copy of the wheel's binary that launch leaves in the private directory.
  workdir=$RAYSLURM_LAB_SHARED/wheelcheck-$$
  mkdir -p "$workdir"
  # The run's private files (binary copy, script, log) must be where the nodes see them too.
  export RAYSLURM_STATE_DIR=$workdir/state
  cp examples/ray_nodes.py "$workdir/"
  say "launching examples/ray_nodes.py on 2 nodes of the test cluster with $bin"
  (cd "$workdir" && "$bin" launch --exp-name wheelcheck --num-nodes 2 \
    --load-env "source $RAYSLURM_LAB_VENV/bin/activate" --object-store-memory 100000000 \
    --time 10 --command "python ray_nodes.py" --follow) | tee "$scratch/e2e.out" \
    || fail "the launch with the wheel's binary failed; its files are in $workdir"
  grep -q '^total = 500000500000 from 2 nodes$' "$scratch/e2e.out" \
    || fail "the job's log lacks its total line; its files are in $workdir"
  # The package reads the same run's final record from the real Slurm.
  "$TEST_VENV/bin/python" - <<'EOF' || fail "rayslurm.wait() did not report the run as COMPLETED"
import rayslurm
final = rayslurm.wait("wheelcheck", poll=2, timeout=120)
assert final["state"] == "COMPLETED" and final["exit_code"] == 0, final
print("wheel-check: rayslurm.wait():", final["state"], "exit code", final["exit_code"])
EOF
  # A function submitted from this venv (cloudpickle, pinned) to nodes whose Python has only
  # Ray's copy of it (Ray vendors cloudpickle): a lambda, pickled by value, runs there and its
  # value comes back; one that raises brings its exception.
  (cd "$workdir" && RAYSLURM_LAB_VENV=$RAYSLURM_LAB_VENV "$TEST_VENV/bin/python" - <<'EOF') \
    || fail "a function submitted from the wheel's venv did not return its value and its exception"
import os, sys, rayslurm
executor = rayslurm.Executor(".", no_ray=True, exclusive=False, time=5,
                             load_env=f"source {os.environ['RAYSLURM_LAB_VENV']}/bin/activate")
value = executor.submit(lambda xs: sum(xs) * 2, [1, 2]).result(poll=2, timeout=300)
assert value == 6, value
try:
    executor.submit(lambda: 1 / 0).result(poll=2, timeout=300)
except ZeroDivisionError as error:
    print("wheel-check: a function from the wheel's venv: 6, then", type(error).__name__)
else:
    sys.exit("the raising call returned")
EOF
  rm -rf "$workdir"
  e2e="one 2-node launch on the test cluster passed"
fi

say "PASSED: $wheel_name (built in ${build_seconds} s, needs GLIBC_$newest_found at most); e2e: $e2e"
