#!/usr/bin/env bash
# Captures what the running test cluster's Slurm prints for jobs in each state, in the formats
# rayslurm reads (src/slurm/query: SQUEUE_FORMAT, `scontrol show job -o`, SACCT_FORMAT from the
# lab's slurmdbd), into tests/slurm-samples/<version>/<state>.{squeue,scontrol,sacct}; the unit
# tests parse every file. Run with the cluster's Slurm clients first on PATH (cluster.sh env:
# RAYSLURM_LAB_SLURM_BIN).
set -euo pipefail
cd "$(dirname "$0")"
format=$(sed -n 's/^pub(crate) const SQUEUE_FORMAT: &str = "\(.*\)";$/\1/p' ../../src/slurm/query/squeue.rs)
[[ -n $format ]] || { echo "SQUEUE_FORMAT not found" >&2; exit 1; }
sacct_format=$(sed -n 's/^const SACCT_FORMAT: &str = "\(.*\)";$/\1/p' ../../src/slurm/query/sacct.rs)
[[ -n $sacct_format ]] || { echo "SACCT_FORMAT not found" >&2; exit 1; }
version=$(sinfo --version | awk '{print $2}' | cut -d. -f1,2)
out=$version
mkdir -p "$out"
submit() { sbatch --parsable -p lab -N1 -n1 --mem=100 -o /dev/null "$@" | cut -d';' -f1; }
save() { # save STATE JOB
  squeue --noheader --states=all --jobs "$2" --format "$format" >"$out/$1.squeue"
  scontrol show job -o "$2" >"$out/$1.scontrol"
  # Accounting hears of a change a moment after the controller: wait for it to say the same.
  local want i
  want=$(cut -d'|' -f2 "$out/$1.squeue")
  for i in $(seq 40); do
    sacct --noheader --parsable2 --allocations --jobs "$2" --format "$sacct_format" >"$out/$1.sacct"
    [[ $(cut -d'|' -f2 "$out/$1.sacct" | cut -d' ' -f1) == "$want" ]] && break
    sleep 0.25
  done
  echo "$1: squeue $want, sacct $(cut -d'|' -f2 "$out/$1.sacct")" >&2
}
wait_state() { # wait_state JOB STATE [SECONDS]
  for _ in $(seq $((${3:-60} * 2))); do
    [[ $(squeue --noheader --states=all --jobs "$1" --format %T) == "$2" ]] && return 0
    sleep 0.5
  done
  echo "job $1 never reached $2" >&2; return 1
}
# A job stays COMPLETING while the lab's epilog sleeps for it (cluster.sh's write_epilog).
slow=/run/rayslurm-lab/slow-epilog
grep -qE '^Epilog(\[0\])? .*rayslurm-lab/epilog' <<<"$(scontrol show config)" || {
  echo "the cluster runs without the lab's epilog: restart it (cluster.sh down; cluster.sh up)" >&2
  exit 1
}
held=$(submit -H --wrap 'sleep 1')
save pending "$held"
scancel "$held"
running=$(submit --wrap 'sleep 120')
wait_state "$running" RUNNING
save running "$running"
requeued=$(submit --requeue --wrap 'sleep 120')
wait_state "$requeued" RUNNING
scontrol requeue "$requeued"
sleep 1
save requeued "$requeued"
scancel "$running" "$requeued"
completed=$(submit --wrap 'true')
wait_state "$completed" COMPLETED
save completed "$completed"
completing=$(submit --wrap 'sleep 3')
mkdir -p "$slow" && touch "$slow/$completing"
wait_state "$completing" COMPLETING
save completing "$completing"
rm -f "$slow/$completing"
failed=$(submit --wrap 'exit 3')
wait_state "$failed" FAILED
save failed "$failed"
cancelled=$(submit --wrap 'sleep 120')
wait_state "$cancelled" RUNNING
scancel "$cancelled"
wait_state "$cancelled" CANCELLED
save cancelled "$cancelled"
timeout=$(submit -t 1 --wrap 'sleep 300')
wait_state "$timeout" TIMEOUT 150
save timeout "$timeout"
echo "samples of Slurm $version in $PWD/$out" >&2
