#!/usr/bin/env bash
# The Python tools the tests use besides the package's own: mypy (the package's types,
# tests/it/python_typing.rs) and cloudpickle (what Executor.submit pickles a call with, for the
# package's unit tests), pinned, in a venv of their own: target/python-tools. Prints the
# variable the tests read (RAYSLURM_TEST_MYPY=...); tests/run.sh runs it before cargo test.
set -euo pipefail
cd "$(dirname "$0")/../.."
readonly VENV=$PWD/target/python-tools
readonly PINS=(mypy==2.4.1 cloudpickle==3.1.3)
python=${PYTHON:-python3}
if [[ ! -x $VENV/bin/python ]]; then
  real=$("$python" -c 'import sys; print(sys.executable)')
  "$real" -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check "${PINS[@]}"
echo "RAYSLURM_TEST_MYPY=$VENV/bin/mypy"
