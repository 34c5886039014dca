#!/usr/bin/env bash
# Mutation testing (docs/testing.md, "Mutation testing"): cargo-mutants changes the code of the
# modules that decide safety and correctness one small way at a time (an operator, a condition,
# a function's result) and runs the tests on each change; a change no test notices ("missed")
# is a gap in the tests, unless it changes nothing a user could see (docs/benchmarks.md explains
# each one left). Started by hand or on a CI schedule, never by tests/run.sh or .ci/run: a
# whole run takes hours on 2 cores.
#
#   bash tests/mutants.sh [MODULE...] [CARGO_MUTANTS_OPTION...]
#
# MODULEs (default: all, in this order): private_tree socket_owner ray_auth ports validate
# owned_directives settings task_file. Options starting with `-` go to `cargo mutants`
# (each one word: `--iterate` tests only the mutants the last run missed, `--list` lists them;
# RAYSLURM_MUTANTS_JOBS=1 for one at a time).
# RAYSLURM_MUTANTS_TESTS=unit runs the unit tests only (`cargo test --bins`, seconds a mutant);
# the default, unit+cli, adds the CLI tests (`cargo test --test it`) but none of the
# end-to-end ones (the files `e2e_*.rs`, the filter `e2e_`: they need the test cluster), which
# run only on a mutant the unit tests let through. Results go to
# target/mutants/MODULE/mutants.out; the figures of each module (caught counts timeouts, which
# a mutant that loops forever gives) are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

version=27.1.0
if [[ $(cargo mutants --version 2>/dev/null) != "cargo-mutants $version" ]]; then
  cargo install --locked cargo-mutants --version "$version"
fi

declare -A files=(
  [private_tree]='src/sys/private_tree/*.rs'
  [socket_owner]=src/sys/socket_owner.rs
  [ray_auth]=src/bootstrap/ray_auth.rs
  [ports]='src/bootstrap/ports/*.rs'
  [validate]=src/launch/validate.rs
  [owned_directives]=src/launch/owned_directives.rs
  [settings]='src/commands/settings/**/*.rs'
  [task_file]='src/launch/task_file/*.rs'
)
order=(private_tree socket_owner ray_auth ports validate owned_directives settings task_file)
modules=() options=()
for arg in "$@"; do
  if [[ $arg == -* ]]; then
    options+=("$arg")
  elif [[ -n ${files[$arg]:-} ]]; then
    modules+=("$arg")
  else
    echo "tests/mutants.sh: no module \`$arg\`; the modules are: ${order[*]}" >&2
    exit 2
  fi
done
if ((${#modules[@]} == 0)); then modules=("${order[@]}"); fi

out=target/mutants
mkdir -p "$out"
# The CLI tests must never reach a real Slurm (a mutant may let a bad launch through to
# sbatch): every Slurm client the test harness does not fake fails at once.
no_slurm=$PWD/$out/no-slurm
mkdir -p "$no_slurm"
for c in sbatch srun squeue scontrol scancel sinfo sacct salloc sattach sstat; do
  printf '#!/bin/sh\necho "%s: no Slurm in the mutation tests (tests/mutants.sh)" >&2\nexit 1\n' "$c" \
    >"$no_slurm/$c"
  chmod +x "$no_slurm/$c"
done
export PATH=$no_slurm:$PATH SLURM_CONF=/nonexistent/slurm.conf

case ${RAYSLURM_MUTANTS_TESTS:-unit+cli} in
  # Built and run as unit tests only (the build of `cargo test --no-run` too).
  unit) options+=(--cargo-test-arg=--bins) tests=() ;;
  # cargo-mutants tests each mutant in a copy of the tree under /tmp, where
  # a_node_local_log_dir_is_warned_about sees node-local warnings it does not expect.
  unit+cli) tests=(--bins --test it -- --skip e2e_ --skip a_node_local_log_dir_is_warned_about) ;;
  *)
    echo "tests/mutants.sh: RAYSLURM_MUTANTS_TESTS is unit or unit+cli" >&2
    exit 2
    ;;
esac

# One run a module, each with its own results (target/mutants/MODULE/mutants.out: caught.txt,
# missed.txt, timeout.txt, unviable.txt, and each mutant's diff and log), so that the figures
# of the modules done stand when a long run is stopped. -j 2: two mutants built and tested at
# once, each in its own copy of the tree (its target/ copied too, so that only this crate is
# rebuilt), under nice: the machine stays usable.
count() { # RESULTS LIST
  if [[ -f $1/$2.txt ]]; then grep -c . "$1/$2.txt" || true; else echo 0; fi
}
status=0 figures=()
for m in "${modules[@]}"; do
  t0=$SECONDS
  nice -n 19 cargo mutants --jobs "${RAYSLURM_MUTANTS_JOBS:-2}" --copy-target=true \
    --output "$out/$m" -f "${files[$m]}" "${options[@]}" -- "${tests[@]}" || status=$?
  results=$out/$m/mutants.out
  c=$(count "$results" caught) x=$(count "$results" missed)
  t=$(count "$results" timeout) u=$(count "$results" unviable)
  viable=$((c + x + t))
  pct=-
  if ((viable > 0)); then
    permille=$((((c + t) * 2000 / viable + 1) / 2))
    pct="$((permille / 10)).$((permille % 10))%"
  fi
  figures+=("$(printf '%-18s %7d %7d %9d %9d %8s %7d s' "$m" "$c" "$x" "$t" "$u" "$pct" $((SECONDS - t0)))")
done
printf '\n%-18s %7s %7s %9s %9s %8s %9s\n' module caught missed timeouts unviable caught time >&2
printf '%s\n' "${figures[@]}" >&2
echo "tests/mutants.sh: the missed mutants are in $out/MODULE/mutants.out/missed.txt" >&2
# cargo-mutants exits 2 when a mutant was missed, 3 on a timeout: the last such status.
exit "$status"
