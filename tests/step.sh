#!/usr/bin/env bash
# A step of its own: end-to-end tests that need a part of the lab the others do not, so that
# tests/run.sh (which skips them, each step's variable set to 0) stays within its 10 minutes.
# .ci/run runs every step after tests/run.sh, each within its budget; the steps and their tests
# are listed in tests/it/harness/steps.rs. Brings the test cluster up (in the step's shape) if
# it is not; extra arguments go to `cargo test` (e.g. --locked).
#
#   containers  Ray and per-node runs and clusters in an image, with Charliecloud and pyxis
#               (containers::e2e_*): first installs Charliecloud and builds the lab's image
#               (tests/cluster/images.sh, a minute the first time) and enroot and pyxis
#               (tests/cluster/build-pyxis.sh), so that the cluster comes up with pyxis loaded.
#               Budget: 5 minutes.
#   ssh         the laptop's tests over SSH to the lab's login node (laptop::e2e_*, a Ray
#               cluster YAML from the laptop). Budget: 5 minutes.
#   preemption  worker types preempted, rolled over before their 1-minute limits and grown on
#               the GPU partition, a spot task requeued when preempted. Budget: 10 minutes.
#   scale       a Ray run on 32 nodes, a --per-node run of 64 ranks, a node killed among 32, an
#               elastic cluster grown to 16 worker jobs, status of 1,000 runs: on the 64 small
#               nodes of partition `scale` (`cluster.sh up 8 2 --scale 64`; the usual 8 lab and
#               2 crash nodes are kept), one test at a time, as a 32-node Ray start is minutes
#               of CPU on 2 cores. Budget: 30 minutes (about 11 here, 17 on CI's machine). docs/scale.md has the figures.
#
#   bash tests/step.sh ssh
#   RAYSLURM_TEST_SCALE_RAY_NODES=8 bash tests/step.sh scale    # the Ray tests on 8 nodes
set -euo pipefail
cd "$(dirname "$0")/.."
step=${1:-}
shift || true
shape=()
case $step in
  containers) var=RAYSLURM_TEST_CONTAINERS budget=300 filters=(containers::e2e_) ;;
  ssh) var=RAYSLURM_TEST_SSH budget=300 filters=(laptop::e2e_ ray_yaml::e2e_from_laptop::) ;;
  preemption)
    var=RAYSLURM_TEST_PREEMPTION budget=600
    filters=(elastic::e2e_worker_types:: task_file::e2e_stages::e2e_task_file_spot_task_is_requeued_when_preempted_and_finishes)
    ;;
  scale) var=RAYSLURM_TEST_SCALE budget=1800 filters=(scale::) shape=(--scale 64) ;;
  *)
    echo "tests/step.sh: no step \`$step\`: give containers, ssh, preemption or scale" >&2
    exit 2
    ;;
esac
t0=$SECONDS
if [[ $step == containers ]]; then
  bash tests/cluster/images.sh up
  bash tests/cluster/build-pyxis.sh
fi
bash tests/cluster/cluster.sh up "${RAYSLURM_TEST_NODES:-8}" "${RAYSLURM_TEST_CRASH_NODES:-2}" \
  "${shape[@]}" --slurm "${RAYSLURM_TEST_SLURM:-debian}"
slurm_bin=$(bash tests/cluster/cluster.sh env | sed -n 's/^RAYSLURM_LAB_SLURM_BIN=//p')
if [[ -n $slurm_bin ]]; then export PATH=$slurm_bin:$PATH; fi
export SLURM_CONF=/etc/slurm/slurm.conf
env "$var=1" RUST_TEST_THREADS=64 RAYSLURM_TEST_AT_ONCE="${RAYSLURM_TEST_AT_ONCE:-6}" \
  timeout "$budget" cargo test --test it "$@" -- "${filters[@]}"
echo "tests/step.sh $step: $((SECONDS - t0)) s (budget $budget s)" >&2
