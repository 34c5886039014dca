#!/usr/bin/env bash
# rayslurm test cluster: a real multi-node Slurm cluster (plus a Ray venv) on one
# Debian 12 machine, one set of Linux namespaces per node.
#
#   cluster.sh up [N [C]] [--slurm V] [--scale S]  install what is missing, start slurmctld + N
#                       slurmd in partition "lab" (default 3) and C more in partition "crash"
#                       (default 0; N+C at most 10), and S small nodes more (default 0, at most 64)
#                       in partition "scale" for the scale tests (tests/step.sh scale); a healthy cluster
#                       with at least N lab, C crash and S scale nodes of the same Slurm already up
#                       is kept. V: "debian" (Debian's 22.05, the default) or a
#                       vendored release, e.g. 25.11 (built once by build-slurm.sh into /opt/slurm-V;
#                       also RAYSLURM_LAB_SLURM=V). Switching versions starts from empty Slurm state.
#   cluster.sh down     stop exactly what `up` started and remove its traces (idempotent)
#   cluster.sh status   sinfo and the login node's sshd, or "cluster is down" (exit 3)
#   cluster.sh env      KEY=value lines (venv, shared dir, nodes, ...)
#   cluster.sh kill-node K    kill node K as a crash does: its whole namespace, slurmd included
#   cluster.sh revive-node K  start node K's slurmd again and wait until Slurm has it idle
#
# Layout (all fixed; see `env`):
#   bridge rslab0       10.234.0.1/24  fd42:7261:7973::1/64   (the host = login node)
#   slurmctld           netns rsl-ctld, hostname rslctld, 10.234.0.2 / fd42:7261:7973::2
#   slurmdbd + MariaDB  the same netns (MariaDB on its 127.0.0.1 only, data emptied at every up):
#                       accounting, so that sacct answers for ended jobs as on real sites
#   nodeK (K=1..N)      netns rsl-nodeK, hostname nodeK, 10.234.0.(10+K) / fd42:7261:7973::(10+K)
#   Every daemon runs in its own UTS + PID + mount namespace (tini is PID 1, /proc is its own,
#   /tmp is a per-node directory); the rest of the filesystem is the host's.
#   The namespaces have no default route: their traffic stays on the bridge.
#   venv /opt/rayslurm-lab/venv (ray[default]==2.60.0), /opt/rayslurm-lab/jax-venv (jax[cpu]), shared dir /srv/rayslurm-lab/shared,
#   slurm state/logs /var/lib/rayslurm-lab, PIDs /run/rayslurm-lab, /etc/slurm/slurm.conf and
#   slurmdbd.conf (owned while up; foreign ones are backed up and restored), /etc/hosts lines marked "# rayslurm-lab".
#   Two non-root users in one group (rsalice, rsbob in rslproj, homes under /home) and their
#   shared project directory ${SHARED%/*}/project (root:rslproj 2775), for the shared-cluster
#   security tests; the venvs are made from Debian's python3 so that every user can run them.
#   Partition "lab" (default), the nodes after the first N in partition "crash" (only the tests
#   that kill a node use them, so that no other test's job is on a node they kill), partition
#   "labshare" over the lab nodes with OverSubscribe=FORCE:4 (several runs on one node beyond its
#   2 CPUs, as on a site's shared partition: tests/it/shared_cluster/e2e_ports.rs), "labspot"
#   (preemptible: PreemptMode=REQUEUE) and "labhigh" (PriorityTier=10, requeues labspot's jobs)
#   over the lab nodes, fake GPUs (device files /dev/nvidia0..7, no driver): nodes 1-2
#   gpu:a100_80gb:4,gpu:l4:4, nodes 3-4 gpu:h100:8, nodes 5-6 an untyped gpu:4 and partition
#   "labgpu" (a site whose partitions stand for GPU types), "gpu" over the typed GPU nodes (an
#   elastic cluster's GPU workers), "scavenger" (preempted as labspot is, with GraceTime=60: a
#   preempted worker has a deadline to drain by), CPUs=2 RealMemory=4000 DefMemPerCPU=1000 per node, MinJobAge=300,
#   AuthInfo=cred_expire=10 (a requeued job may start again after 11 s, not Slurm's 121 s),
#   SchedulerParameters=bf_interval=2 (a small job waiting behind a big one starts within 2 s of
#   room freeing up, not 30: the tests run side by side and queue behind each other) and
#   bf_min_prio_reserve above every job's priority (no job holds nodes back for a bigger one
#   waiting before it: any job that fits starts, so that the CPU is not idle while 1-node jobs
#   wait behind a 3-node one).
#   tests/run.sh brings up 8 lab nodes and 2 crash nodes (RAYSLURM_TEST_NODES,
#   RAYSLURM_TEST_CRASH_NODES), the demo 3 lab nodes; see docs/testing.md.
#   The scale nodes (`--scale S`) come after the crash nodes (node(N+C+1)..node(N+C+S)), each
#   CPUs=2 RealMemory=2000 and in partition "scale" alone: no GPUs, none of the other partitions,
#   so that the ordinary tests never land on them and run beside the scale tests.
#   RAYSLURM_LAB_UP_TIMEOUT (default 60 s, 180 s with scale nodes) bounds the wait for all nodes
#   to be idle.
#   The login node over SSH (sshd.sh beside this script): an OpenSSH sshd of the lab's own on
#   127.0.0.1:2222 in the host's namespaces (config, host key and per-user authorized_keys
#   under ${VAR}/ssh, PidFile ${RUN}/sshd.pid, log ${LOGDIR}/sshd.log; public keys only,
#   rsalice and rsbob only), and a client key ${VAR}/ssh/laptop_key authorized for rsalice:
#   the "laptop" tests (tests/it/harness/laptop.rs) reach the login node through it.
# Must run as root. Needs: Debian apt (first run only) and PyPI (first run only).
set -euo pipefail

readonly LAB=rayslurm-lab
readonly MARK="# ${LAB}"                       # marks our /etc/hosts lines and slurm.conf
readonly VENV=/opt/${LAB}/venv
readonly RAY_VERSION=2.60.0
readonly JAX_VENV=/opt/${LAB}/jax-venv           # a real distributed framework, apart from Ray's
readonly JAX_VERSION=0.10.2
readonly SHARED=/srv/${LAB}/shared
readonly VAR=/var/lib/${LAB}                  # slurm state, spool, logs, per-node /tmp dirs
readonly LOGDIR=${VAR}/log
readonly RUN=/run/${LAB}                      # runtime state: PIDs, node count
readonly LOCK=/run/${LAB}.lock
readonly SLURM_CONF=/etc/slurm/slurm.conf
readonly SLURM_CONF_BAK=/etc/slurm/slurm.conf.${LAB}.bak
readonly GRES_CONF=/etc/slurm/gres.conf
readonly GRES_CONF_BAK=/etc/slurm/gres.conf.${LAB}.bak
# slurmdbd reads slurmdbd.conf beside slurm.conf; accounting keeps ended jobs for sacct
readonly DBD_CONF=/etc/slurm/slurmdbd.conf
readonly DBD_CONF_BAK=/etc/slurm/slurmdbd.conf.${LAB}.bak
readonly MYSQL_DATA=${VAR}/mysql              # MariaDB's data, for slurmdbd; emptied at every up
readonly BRIDGE=rslab0
readonly NET4=10.234.0
readonly NET6=fd42:7261:7973:
readonly PREFIX4=24
readonly PREFIX6=64
readonly HOST_IP4=${NET4}.1
readonly HOST_IP6=${NET6}:1
readonly CTLD_NAME=rslctld
readonly CTLD_NS=rsl-ctld
readonly CTLD_IP4=${NET4}.2
readonly CTLD_IP6=${NET6}:2
readonly PARTITION=lab
readonly CRASH_PARTITION=crash
readonly SHARE_PARTITION=labshare
readonly SPOT_PARTITION=labspot               # preemptible: a labhigh job requeues its jobs
readonly HIGH_PARTITION=labhigh
readonly GPU_PARTITION=labgpu                 # the nodes whose GPUs have no type
readonly TYPED_GPU_PARTITION=gpu              # the nodes whose GPUs have a type
readonly SCAVENGER_PARTITION=scavenger        # preemptible with a GraceTime: drained workers
readonly SCAVENGER_GRACE=60
readonly SCALE_PARTITION=scale                # the small nodes of `up --scale S`
readonly MAX_SCALE_NODES=64
readonly CLUSTER_NAME=rayslurmlab
readonly MAX_NODES=10
UP_TIMEOUT=${RAYSLURM_LAB_UP_TIMEOUT:-60}
readonly PACKAGES=(slurmctld slurmd slurm-client slurmdbd mariadb-server tini iproute2 procps util-linux hostname python3 python3-venv openssh-server openssh-client)
# Debian's python3, not one under /root (0700): the test users must run the venvs too.
readonly PYTHON=/usr/bin/python3
readonly PROJECT=/srv/${LAB}/project              # the group's shared 2775 directory
readonly GROUP=rslproj
readonly USERS=(rsalice rsbob)
readonly SLURM_RECORD=${RUN}/slurm               # the Slurm the cluster runs: debian or X.Y
# Every Slurm program (daemons, clients) reads this file, whichever Slurm it is.
export SLURM_CONF
# the login node over SSH: ssh_start, ssh_stop, ssh_status, ssh_env
# shellcheck source=tests/cluster/sshd.sh
source "$(dirname "${BASH_SOURCE[0]}")/sshd.sh"

# The Slurm that `up` asked for (--slurm, RAYSLURM_LAB_SLURM), else the one running, else Debian's.
WANT_SLURM=${RAYSLURM_LAB_SLURM:-}
# The scale nodes that `up` asked for (--scale)
WANT_SCALE=0
# use_slurm V: puts Slurm V's programs first on PATH (Debian's are on it already).
use_slurm() {
  local v=$1
  [[ $v == debian || $v =~ ^[0-9]+\.[0-9]+$ ]] || die "--slurm takes \`debian\` or a vendored MAJOR.MINOR (e.g. 25.11), got '$v'"
  SLURM=$v
  if [[ $v != debian ]]; then
    PATH=/opt/slurm-${v}/bin:/opt/slurm-${v}/sbin:$PATH
  fi
}
slurm_bin_dir() { [[ $SLURM == debian ]] || printf '/opt/slurm-%s/bin' "$SLURM"; }

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

node_name() { printf 'node%d' "$1"; }
node_ns() { printf 'rsl-node%d' "$1"; }
node_ip4() { printf '%s.%d' "$NET4" $((10 + $1)); }
node_ip6() { printf '%s:%d' "$NET6" $((10 + $1)); }
# host-side veth name (<= 15 chars)
veth_name() { printf 'rslv-%s' "${1#rsl-}"; }

require_root() { [[ $(id -u) -eq 0 ]] || die "must run as root"; }

take_lock() {
  mkdir -p "$(dirname "$LOCK")"
  exec 9>"$LOCK"
  flock -w 120 9 || die "another cluster.sh holds $LOCK"
}

# ---------------------------------------------------------------- installation

ensure_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  # the venv needs a python3 that can make venvs (pyenv's can; Debian's needs python3-venv)
  local py
  py=$(command -v python3 || true)
  if [[ -z $py ]] || ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    [[ -x $VENV/bin/python ]] || missing+=(python3 python3-venv)
  fi
  ((${#missing[@]} == 0)) && return 0
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # keep the packages' init scripts from starting a stock slurmctld/slurmd
  local policy=/usr/sbin/policy-rc.d own_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
  fi
  local rc=0
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } || rc=$?
  ((own_policy)) && rm -f "$policy"
  ((rc == 0)) || die "apt-get failed (exit $rc) for: ${missing[*]}"
}

# venv_usable DIR: its python runs from outside /root (every user can run it)
venv_usable() {
  local real
  real=$(readlink -f "$1/bin/python" 2>/dev/null || true)
  [[ -x $real && $real != /root/* ]]
}

ensure_venv() {
  local marker=("$VENV"/lib/python3*/site-packages/ray-"${RAY_VERSION}".dist-info)
  if venv_usable "$VENV" && [[ -d ${marker[0]} && -x $VENV/bin/ray ]]; then
    return 0
  fi
  if [[ -e $VENV ]] && ! venv_usable "$VENV"; then
    log "rebuilding $VENV from $PYTHON (its python is not one every user can run)"
    rm -rf "$VENV"
  fi
  if [[ ! -x $VENV/bin/python ]]; then
    log "creating venv $VENV from $PYTHON"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
  fi
  log "installing ray[default]==${RAY_VERSION} into $VENV (about 40 s)"
  "$VENV/bin/pip" install -q --disable-pip-version-check "ray[default]==${RAY_VERSION}" \
    || die "pip install ray[default]==${RAY_VERSION} failed"
}

# ensure_jax_venv: jax[cpu] in a venv of its own, for the per-node tests' real rendezvous
ensure_jax_venv() {
  local marker=("$JAX_VENV"/lib/python3*/site-packages/jax-"${JAX_VERSION}".dist-info)
  venv_usable "$JAX_VENV" && [[ -d ${marker[0]} ]] && return 0
  if [[ -e $JAX_VENV ]] && ! venv_usable "$JAX_VENV"; then
    log "rebuilding $JAX_VENV from $PYTHON"
    rm -rf "$JAX_VENV"
  fi
  if [[ ! -x $JAX_VENV/bin/python ]]; then
    log "creating venv $JAX_VENV from $PYTHON"
    "$PYTHON" -m venv "$JAX_VENV"
  fi
  log "installing jax[cpu]==${JAX_VERSION} into $JAX_VENV (about 15 s)"
  "$JAX_VENV/bin/pip" install -q --disable-pip-version-check "jax[cpu]==${JAX_VERSION}" \
    || die "pip install jax[cpu]==${JAX_VERSION} failed"
}

# ensure_users: the shared-cluster tests' two members of one group and their 2775 directory
ensure_users() {
  local u
  getent group "$GROUP" >/dev/null || groupadd "$GROUP"
  for u in "${USERS[@]}"; do
    id -u "$u" >/dev/null 2>&1 || useradd -m -g "$GROUP" -s /bin/bash "$u"
    chmod 700 "/home/$u"
  done
  mkdir -p "$PROJECT"
  chown "root:$GROUP" "$PROJECT"
  chmod 2775 "$PROJECT"
}

# ---------------------------------------------------------------- configuration

# render_slurm_conf N: the slurm.conf for N nodes, on stdout
# render_slurm_conf T C [S]: T nodes, the last C of them in the crash partition, and S scale
# nodes after them
readonly PYXIS_PLUGSTACK=/usr/local/lib/slurm-pyxis/plugstack.conf
render_slurm_conf() {
  local n=$1 c=${2:-0} s=${3:-0} i lab=() crash=() scale=()
  # TaskPlugin=task/affinity (not LAB.md's task/none): steps are confined to the job's CPUs, as
  # on real sites, and srun's --cpu-bind works instead of printing "lacks support for cpu binding".
  {
    printf '%s: written by tests/cluster/cluster.sh; removed by "cluster.sh down"\n' "$MARK"
    cat <<EOF
ClusterName=${CLUSTER_NAME}
SlurmctldHost=${CTLD_NAME}(${CTLD_IP4})
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=${CTLD_NAME}
AccountingStoragePort=6819
MpiDefault=none
ReturnToService=2
MinJobAge=300
Epilog=${VAR}/epilog
AuthInfo=cred_expire=10
SchedulerParameters=bf_interval=2,bf_min_prio_reserve=4294967000
DefMemPerCPU=1000
StateSaveLocation=${VAR}/state
SlurmdSpoolDir=${VAR}/spool/%n
SlurmctldPidFile=${VAR}/run/slurmctld.pid
SlurmdPidFile=${VAR}/run/slurmd.%n.pid
SlurmctldLogFile=${LOGDIR}/slurmctld.log
SlurmdLogFile=${LOGDIR}/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
GresTypes=gpu
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
EOF
    # pyxis, when tests/cluster/build-pyxis.sh has built it (for Debian's Slurm only: a SPANK
    # plugin is built for one Slurm release), in a plugstack file of its own.
    if [[ $SLURM == debian && -f $PYXIS_PLUGSTACK ]]; then
      printf 'PlugStackConfig=%s\n' "$PYXIS_PLUGSTACK"
    fi
    local gres untyped=() typed=()
    for ((i = 1; i <= n; i++)); do
      gres=
      if ((i <= n - c)); then
        lab+=("$(node_name "$i")")
        gres=$(node_gres "$i")
        [[ $gres == gpu:[0-9]* ]] && untyped+=("$(node_name "$i")")
        [[ $gres == gpu:[a-z]* ]] && typed+=("$(node_name "$i")")
      else
        crash+=("$(node_name "$i")")
      fi
      printf 'NodeName=%s NodeAddr=%s CPUs=2 RealMemory=4000%s State=UNKNOWN\n' "$(node_name "$i")" "$(node_ip4 "$i")" "${gres:+ Gres=$gres}"
    done
    # The scale nodes: 2 CPUs (the host's 2: with 1, task/affinity binds every job's batch step,
    # the head's Ray with it, to the host's first CPU alone) and 2000 MB each (a whole-node job's
    # DefMemPerCPU); nothing enforces either (docs/scale.md).
    for ((i = n + 1; i <= n + s; i++)); do
      scale+=("$(node_name "$i")")
      printf 'NodeName=%s NodeAddr=%s CPUs=2 RealMemory=2000 State=UNKNOWN\n' "$(node_name "$i")" "$(node_ip4 "$i")"
    done
    local IFS=, off='PreemptMode=OFF'
    printf 'PartitionName=%s Nodes=%s Default=YES MaxTime=INFINITE State=UP %s\n' "$PARTITION" "${lab[*]}" "$off"
    # (not PreemptMode=OFF here: with it, Slurm 22.05 stops oversubscribing the partition)
    printf 'PartitionName=%s Nodes=%s Default=NO MaxTime=INFINITE State=UP OverSubscribe=FORCE:4\n' "$SHARE_PARTITION" "${lab[*]}"
    printf 'PartitionName=%s Nodes=%s Default=NO MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE\n' "$SPOT_PARTITION" "${lab[*]}"
    printf 'PartitionName=%s Nodes=%s Default=NO MaxTime=INFINITE State=UP PriorityTier=10 %s\n' "$HIGH_PARTITION" "${lab[*]}" "$off"
    # Preempted by labhigh as labspot is, but given GraceTime seconds before the end: the
    # elastic cluster's preemptible workers are drained with that deadline.
    printf 'PartitionName=%s Nodes=%s Default=NO MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime=%s\n' "$SCAVENGER_PARTITION" "${lab[*]}" "$SCAVENGER_GRACE"
    if ((${#typed[@]} > 0)); then
      printf 'PartitionName=%s Nodes=%s Default=NO MaxTime=INFINITE State=UP %s\n' "$TYPED_GPU_PARTITION" "${typed[*]}" "$off"
    fi
    if ((${#untyped[@]} > 0)); then
      printf 'PartitionName=%s Nodes=%s Default=NO MaxTime=INFINITE State=UP %s\n' "$GPU_PARTITION" "${untyped[*]}" "$off"
    fi
    if ((c > 0)); then
      printf 'PartitionName=%s Nodes=%s Default=NO MaxTime=INFINITE State=UP %s\n' "$CRASH_PARTITION" "${crash[*]}" "$off"
    fi
    if ((s > 0)); then
      printf 'PartitionName=%s Nodes=%s Default=NO MaxTime=INFINITE State=UP %s\n' "$SCALE_PARTITION" "${scale[*]}" "$off"
    fi
  }
}

# node_gres K: lab node K's fake GPUs as slurm.conf's Gres= gives them (empty: none): typed GRES
# of two spellings a site may use, and untyped GRES standing for a type by partition
# ($GPU_PARTITION); each GPU is a device file of its own (make_gpu_devices), as Slurm wants.
node_gres() {
  case $1 in
    1 | 2) echo 'gpu:a100_80gb:4,gpu:l4:4' ;;
    3 | 4) echo 'gpu:h100:8' ;;
    5 | 6) echo 'gpu:4' ;;
  esac
}

# render_gres_conf T C: gres.conf for T nodes, the last C of them crash nodes (no GPUs)
render_gres_conf() {
  local n=$1 c=${2:-0} i name
  printf '%s: written by tests/cluster/cluster.sh; removed by "cluster.sh down"\n' "$MARK"
  for ((i = 1; i <= n - c; i++)); do
    name=$(node_name "$i")
    case $(node_gres "$i") in
      gpu:a100_80gb:*)
        printf 'NodeName=%s Name=gpu Type=a100_80gb File=/dev/nvidia[0-3]\n' "$name"
        printf 'NodeName=%s Name=gpu Type=l4 File=/dev/nvidia[4-7]\n' "$name"
        ;;
      gpu:h100:*) printf 'NodeName=%s Name=gpu Type=h100 File=/dev/nvidia[0-7]\n' "$name" ;;
      gpu:[0-9]*) printf 'NodeName=%s Name=gpu File=/dev/nvidia[0-3]\n' "$name" ;;
    esac
  done
}

# make_gpu_devices: /dev/nvidia0..7 as character devices (major 195, as NVIDIA's), recorded so
# that `down` removes only those it made. No driver stands behind them: nothing opens them.
make_gpu_devices() {
  local k
  for ((k = 0; k < 8; k++)); do
    [[ -e /dev/nvidia$k ]] && continue
    mknod -m 0666 "/dev/nvidia$k" c 195 "$k"
    echo "/dev/nvidia$k" >>"${RUN}/made-devices"
  done
}

remove_gpu_devices() {
  local f
  [[ -f ${RUN}/made-devices ]] || return 0
  while read -r f; do [[ -c $f ]] && rm -f "$f"; done <"${RUN}/made-devices"
  rm -f "${RUN}/made-devices"
}

write_slurm_conf() {
  mkdir -p /etc/slurm
  if [[ -f $SLURM_CONF && ! -f $SLURM_CONF_BAK ]] && ! head -n1 "$SLURM_CONF" | grep -qF "$MARK"; then
    log "backing up existing $SLURM_CONF to $SLURM_CONF_BAK"
    cp -p "$SLURM_CONF" "$SLURM_CONF_BAK"
  fi
  render_slurm_conf "$1" "$2" "${3:-0}" >"${SLURM_CONF}.tmp"
  mv -f "${SLURM_CONF}.tmp" "$SLURM_CONF"
  if [[ -f $GRES_CONF && ! -f $GRES_CONF_BAK ]] && ! head -n1 "$GRES_CONF" | grep -qF "$MARK"; then
    log "backing up existing $GRES_CONF to $GRES_CONF_BAK"
    cp -p "$GRES_CONF" "$GRES_CONF_BAK"
  fi
  render_gres_conf "$1" "$2" >"${GRES_CONF}.tmp"
  mv -f "${GRES_CONF}.tmp" "$GRES_CONF"
  write_epilog
}

# write_epilog: each node's epilog. It returns at once, except for a job named in
# ${RUN}/slow-epilog/ (tests/slurm-samples/capture.sh): that job stays COMPLETING for 20 s.
write_epilog() {
  mkdir -p "$VAR"
  printf '#!/bin/sh\n[ -e "%s/slow-epilog/${SLURM_JOB_ID}" ] && sleep 20\nexit 0\n' "$RUN" >"${VAR}/epilog.tmp"
  chmod 0755 "${VAR}/epilog.tmp"
  mv -f "${VAR}/epilog.tmp" "${VAR}/epilog"
}

# write_dbd_conf: slurmdbd's configuration (it must be private to SlurmUser), backing up a
# file of someone else's as write_slurm_conf does
write_dbd_conf() {
  if [[ -f $DBD_CONF && ! -f $DBD_CONF_BAK ]] && ! head -n1 "$DBD_CONF" | grep -qF "$MARK"; then
    log "backing up existing $DBD_CONF to $DBD_CONF_BAK"
    cp -p "$DBD_CONF" "$DBD_CONF_BAK"
  fi
  (
    umask 077
    cat >"${DBD_CONF}.tmp" <<EOF
${MARK}: written by tests/cluster/cluster.sh; removed by "cluster.sh down"
AuthType=auth/none
DbdHost=${CTLD_NAME}
DbdPort=6819
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=root
StorageLoc=slurm_acct_db
LogFile=${LOGDIR}/slurmdbd.log
PidFile=${VAR}/run/slurmdbd.pid
EOF
  )
  mv -f "${DBD_CONF}.tmp" "$DBD_CONF"
}

restore_slurm_conf() {
  if [[ -f $DBD_CONF ]] && head -n1 "$DBD_CONF" | grep -qF "$MARK"; then
    rm -f "$DBD_CONF"
  fi
  if [[ -f $DBD_CONF_BAK ]]; then
    mv -f "$DBD_CONF_BAK" "$DBD_CONF"
  fi
  if [[ -f $SLURM_CONF ]] && head -n1 "$SLURM_CONF" | grep -qF "$MARK"; then
    rm -f "$SLURM_CONF"
  fi
  if [[ -f $GRES_CONF ]] && head -n1 "$GRES_CONF" | grep -qF "$MARK"; then
    rm -f "$GRES_CONF"
  fi
  if [[ -f $GRES_CONF_BAK ]]; then
    mv -f "$GRES_CONF_BAK" "$GRES_CONF"
  fi
  if [[ -f $SLURM_CONF_BAK ]]; then
    mv -f "$SLURM_CONF_BAK" "$SLURM_CONF"
  fi
}

# /etc/hosts may be a bind mount: rewrite it in place, never replace it
hosts_remove() {
  [[ -f /etc/hosts ]] || return 0
  grep -qF "$MARK" /etc/hosts || return 0
  local kept
  kept=$(grep -vF "$MARK" /etc/hosts || true)
  printf '%s\n' "$kept" >/etc/hosts
}

hosts_add() {
  local n=$1 i lines
  lines=$(printf '%s %s %s\n' "$CTLD_IP4" "$CTLD_NAME" "$MARK"
    printf '%s %s-v6 %s\n' "$CTLD_IP6" "$CTLD_NAME" "$MARK"
    for ((i = 1; i <= n; i++)); do
      printf '%s %s %s\n' "$(node_ip4 "$i")" "$(node_name "$i")" "$MARK"
      printf '%s %s-v6 %s\n' "$(node_ip6 "$i")" "$(node_name "$i")" "$MARK"
    done)
  hosts_remove
  printf '%s\n' "$lines" >>/etc/hosts
}

# ---------------------------------------------------------------- network

setup_bridge() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
  fi
  ip addr replace "${HOST_IP4}/${PREFIX4}" dev "$BRIDGE"
  ip -6 addr replace "${HOST_IP6}/${PREFIX6}" dev "$BRIDGE" nodad
  ip link set "$BRIDGE" up
}

# setup_ns NS IP4 IP6: a netns with lo, and eth0 = veth into the bridge
setup_ns() {
  local ns=$1 ip4=$2 ip6=$3 veth
  veth=$(veth_name "$ns")
  ip netns del "$ns" 2>/dev/null || true
  ip link del "$veth" 2>/dev/null || true
  ip netns add "$ns"
  ip link add "$veth" type veth peer name eth0 netns "$ns"
  ip link set "$veth" master "$BRIDGE"
  ip link set "$veth" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "${ip4}/${PREFIX4}" dev eth0
  ip -n "$ns" -6 addr add "${ip6}/${PREFIX6}" dev eth0 nodad
  ip -n "$ns" link set eth0 up
}

# ---------------------------------------------------------------- daemons

# start_in_ns NAME NETNS HOSTNAME TMPDIR CMD...: run CMD as the only child of tini, PID 1 of a
# new PID namespace with its own UTS (hostname), mount namespace (/proc, /tmp) in netns NETNS.
# Records the PID of the `unshare` process (stopping it ends the whole namespace).
start_in_ns() {
  local name=$1 ns=$2 host=$3 tmpdir=$4
  shift 4
  mkdir -p "$tmpdir"
  chmod 1777 "$tmpdir"
  # enroot's directories (build-pyxis.sh), one per user below it, made before any job runs so
  # that the tests' check of what a run leaves in /tmp sees it as the node's own.
  mkdir -p "$tmpdir/enroot"
  chmod 1777 "$tmpdir/enroot"
  # nsenter, not `ip netns exec`: the latter remounts /sys and slurmd then finds no cgroup fs
  # shellcheck disable=SC2016 # expanded by the inner bash, PID 1 of the new namespace
  local init='set -e; mount -t proc proc /proc; mount --bind "$2" /tmp; hostname "$1"; shift 2; exec tini -s -- "$@"'
  # The daemons keep no descriptor of whoever started them (a test's lock file, a pipe): a node
  # revived by a test would otherwise hold that test's lock for as long as it runs.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if ((fd > 2)); then eval "exec ${fd}>&-" 2>/dev/null || true; fi
    done
    exec setsid nsenter --net="/run/netns/${ns}" -- \
      unshare --uts --pid --fork --mount --propagation private --kill-child -- \
      bash -c "$init" _ "$host" "$tmpdir" "$@" </dev/null >"${LOGDIR}/${name}.out" 2>&1
  ) &
  echo $! >"${RUN}/${name}.pid"
}

pid_of() { [[ -f ${RUN}/$1.pid ]] && cat "${RUN}/$1.pid"; }

# start_accounting: MariaDB and slurmdbd in the controller's network namespace (MariaDB on its
# 127.0.0.1 alone), from an empty database at every up (another Slurm's schema is never read);
# waits until slurmdbd answers and knows the cluster. Debian's or the vendored slurmdbd, as PATH says.
start_accounting() {
  rm -rf "$MYSQL_DATA"
  mariadb-install-db --no-defaults --datadir="$MYSQL_DATA" --user=root \
    --auth-root-authentication-method=normal --skip-test-db >"${LOGDIR}/mysql-install.log" 2>&1 \
    || { tail -n 20 "${LOGDIR}/mysql-install.log" >&2; die "mariadb-install-db failed"; }
  # shellcheck disable=SC2016 # expanded by the namespace's bash
  start_in_ns acct "$CTLD_NS" "$CTLD_NAME" "${VAR}/tmp/acct" bash -c '
    mariadbd --no-defaults --datadir="$1" --user=root --bind-address=127.0.0.1 --port=3306 \
      --socket=/tmp/mysqld.sock --pid-file=/tmp/mysqld.pid --innodb-buffer-pool-size=32M --innodb-lock-wait-timeout=900 \
      --log-error="$2/mysqld.log" &
    for _ in $(seq 150); do
      mariadb --no-defaults -h 127.0.0.1 -P 3306 -u root -e "select 1" >/dev/null 2>&1 && break
      sleep 0.2
    done
    exec slurmdbd -D' _ "$MYSQL_DATA" "$LOGDIR"
  local deadline=$((SECONDS + 60))
  until timeout 5 sacctmgr -n list cluster >/dev/null 2>&1; do
    alive "$(pid_of acct || true)" || { tail -n 15 "${LOGDIR}/acct.out" "${LOGDIR}/slurmdbd.log" >&2 2>/dev/null; die "slurmdbd exited"; }
    ((SECONDS < deadline)) || { tail -n 15 "${LOGDIR}/slurmdbd.log" >&2 2>/dev/null; die "slurmdbd does not answer after 60 s"; }
    sleep 0.3
  done
  timeout 10 sacctmgr -i add cluster "$CLUSTER_NAME" >/dev/null
}

# alive PID: the process exists and is one of ours (an unshare), not a reused PID
alive() {
  local pid=$1 cmd
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
  [[ $cmd == *unshare* && $cmd == *tini* ]]
}

recorded_names() {
  local f
  [[ -d $RUN ]] || return 0
  for f in "$RUN"/*.pid; do
    [[ -e $f ]] && basename "$f" .pid
  done
  return 0
}

# stop every recorded daemon: SIGTERM to its tini (PID 1 in the node, forwards it),
# then after a grace period SIGKILL to the unshare (--kill-child ends the namespace)
stop_daemons() {
  local names=() name pid child pids=()
  mapfile -t names < <(recorded_names)
  for name in "${names[@]}"; do
    pid=$(pid_of "$name" || true)
    alive "$pid" || continue
    pids+=("$pid")
    for child in $(ps -o pid= --ppid "$pid" 2>/dev/null || true); do
      kill -TERM "$child" 2>/dev/null || true
    done
  done
  local deadline=$((SECONDS + 3)) any
  while ((SECONDS < deadline)); do
    any=0
    for pid in "${pids[@]}"; do alive "$pid" && any=1; done
    ((any)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && log "warning: pid $pid still alive"
  done
  rm -f "$RUN"/*.pid
}

# ---------------------------------------------------------------- status helpers

# lines "NODE STATE" from slurmctld (empty if it does not answer)
# (a node in two partitions is one line: sinfo -N prints it once for each)
node_states() { timeout 10 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true; }

# every node (lab and crash), and how many of them are crash nodes
recorded_n() { [[ -f ${RUN}/nodes ]] && cat "${RUN}/nodes"; }
recorded_c() { if [[ -f ${RUN}/crash-nodes ]]; then cat "${RUN}/crash-nodes"; else echo 0; fi; }
recorded_s() { if [[ -f ${RUN}/scale-nodes ]]; then cat "${RUN}/scale-nodes"; else echo 0; fi; }
recorded_slurm() { if [[ -f $SLURM_RECORD ]]; then cat "$SLURM_RECORD"; else echo debian; fi; }

# is_up T C S: recorded with T nodes (C of them crash nodes) and S scale nodes, same slurm.conf
# as this script writes, every daemon alive, slurmctld answers, no node down/drained
is_up() {
  local n=$1 c=$2 s=$3 i states
  [[ $(recorded_n || true) == "$n" && $(recorded_c) == "$c" && $(recorded_s) == "$s" && $(recorded_slurm) == "$SLURM" ]] || return 1
  cmp -s <(render_slurm_conf "$n" "$c" "$s") "$SLURM_CONF" || return 1
  cmp -s <(render_gres_conf "$n" "$c") "$GRES_CONF" || return 1
  alive "$(pid_of ctld || true)" || return 1
  alive "$(pid_of acct || true)" || return 1
  for ((i = 1; i <= n + s; i++)); do alive "$(pid_of "$(node_name "$i")" || true)" || return 1; done
  states=$(node_states)
  [[ $(grep -c . <<<"$states") -eq $((n + s)) ]] || return 1
  ! grep -qE ' (down|drain|drained|draining|fail|unknown|not_responding)|\*$' <<<"$states"
}

report_failure() {
  local n=$1 i name pid
  log "cluster is not up: $2"
  for name in ctld $(for ((i = 1; i <= n; i++)); do node_name "$i"; echo; done); do
    pid=$(pid_of "$name" || true)
    if ! alive "$pid"; then
      log "daemon ${name} (pid ${pid:-?}) has exited; last lines of its logs:"
    else
      continue
    fi
    local f
    for f in "${LOGDIR}/${name}.out" "${LOGDIR}/slurm${name/#node/d.node}.log" "${LOGDIR}/slurmctld.log"; do
      [[ $name == ctld || $f != "${LOGDIR}/slurmctld.log" ]] || continue
      [[ -s $f ]] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }
    done
  done
  local states
  states=$(node_states)
  if [[ -n $states ]]; then
    echo "--- sinfo -N:" >&2
    echo "$states" >&2
    timeout 10 sinfo -R >&2 2>&1 || true
    while read -r name st; do
      [[ $st == idle ]] && continue
      [[ -s ${LOGDIR}/slurmd.${name}.log ]] && { echo "--- ${LOGDIR}/slurmd.${name}.log" >&2; tail -n 15 "${LOGDIR}/slurmd.${name}.log" >&2; }
    done <<<"$states"
  else
    echo "--- slurmctld does not answer; ${LOGDIR}/slurmctld.log:" >&2
    tail -n 15 "${LOGDIR}/slurmctld.log" >&2 2>/dev/null || true
  fi
}

# ---------------------------------------------------------------- subcommands

do_down() {
  local ns
  ssh_stop
  stop_daemons
  while read -r ns _; do
    if [[ $ns =~ ^rsl-(ctld|node[0-9]+)$ ]]; then ip netns del "$ns" 2>/dev/null || true; fi
  done < <(ip netns list 2>/dev/null || true)
  while read -r ns; do
    ip link del "$ns" 2>/dev/null || true
  done < <(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^rslv-' || true)
  ip link del "$BRIDGE" 2>/dev/null || true
  hosts_remove
  restore_slurm_conf
  remove_gpu_devices
  rm -rf "$RUN" "${VAR:?}/state" "${VAR:?}/spool" "${VAR:?}/tmp" "${VAR:?}/run" "${MYSQL_DATA:?}"
}

cmd_down() {
  require_root
  take_lock
  do_down
  log "cluster is down"
}

cmd_up() {
  local n=${1:-3} c=${2:-0} s=$WANT_SCALE t0=$SECONDS i name
  if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > MAX_NODES)); then die "node count must be 1..${MAX_NODES}, got '$n'"; fi
  if ! [[ $c =~ ^[0-9]+$ ]] || ((n + c > MAX_NODES)); then
    die "crash node count must be 0..$((MAX_NODES - n)) beside ${n} lab node(s), got '$c'"
  fi
  if ! [[ $s =~ ^[0-9]+$ ]] || ((s > MAX_SCALE_NODES)); then
    die "--scale takes 0..${MAX_SCALE_NODES} nodes, got '$s'"
  fi
  # 64 slurmd registering at once on 2 cores take longer than 8
  if ((s > 0)) && [[ -z ${RAYSLURM_LAB_UP_TIMEOUT:-} ]]; then UP_TIMEOUT=180; fi
  local lab_n=$n
  n=$((lab_n + c))
  require_root
  take_lock
  ensure_packages
  ensure_venv
  ensure_jax_venv
  ensure_users
  if [[ $SLURM != debian ]]; then
    bash "$(dirname "$0")/build-slurm.sh" "$SLURM" >/dev/null
  fi
  mkdir -p "$SHARED"
  chmod 1777 "$SHARED" "$(dirname "$SHARED")" 2>/dev/null || true

  if is_up "$n" "$c" "$s"; then
    log "cluster already up with ${lab_n} lab, ${c} crash and ${s} scale node(s)"
    ssh_start
    return 0
  fi
  local old old_c old_s
  old=$(recorded_n || true)
  old_c=$(recorded_c)
  old_s=$(recorded_s)
  # A bigger cluster that is up and healthy serves as well (the demo's 3 nodes on the tests' 4,
  # the scale tests' cluster for the ordinary tests): rebuilding it would stop every job on it.
  if [[ -n $old ]] && ((old - old_c >= lab_n && old_c >= c && old_s >= s)) && is_up "$old" "$old_c" "$old_s"; then
    # (is_up also asks for the same Slurm)
    log "cluster already up with $((old - old_c)) lab, ${old_c} crash and ${old_s} scale node(s), at least the ${lab_n}, ${c} and ${s} asked for"
    ssh_start
    return 0
  fi
  if [[ -n $old ]]; then
    log "cluster is up with ${old} node(s) and $(recorded_s) scale node(s) of Slurm $(recorded_slurm) (or broken, or slurm.conf changed); rebuilding it with ${n} and ${s} of Slurm ${SLURM}"
  fi
  do_down

  mkdir -p "$RUN" "$LOGDIR" "${VAR}/state" "${VAR}/run" "${VAR}/tmp"
  for ((i = 1; i <= n + s; i++)); do mkdir -p "${VAR}/spool/$(node_name "$i")"; done
  rm -f "$LOGDIR"/*.log "$LOGDIR"/*.out
  echo "$n" >"${RUN}/nodes"
  echo "$c" >"${RUN}/crash-nodes"
  echo "$s" >"${RUN}/scale-nodes"
  echo "$SLURM" >"$SLURM_RECORD"
  write_slurm_conf "$n" "$c" "$s"
  make_gpu_devices
  write_dbd_conf
  # (from here on n counts every node, the scale nodes too)
  n=$((n + s))
  hosts_add "$n"
  setup_bridge
  setup_ns "$CTLD_NS" "$CTLD_IP4" "$CTLD_IP6"
  for ((i = 1; i <= n; i++)); do
    setup_ns "$(node_ns "$i")" "$(node_ip4 "$i")" "$(node_ip6 "$i")"
  done

  start_accounting
  start_in_ns ctld "$CTLD_NS" "$CTLD_NAME" "${VAR}/tmp/ctld" slurmctld -D
  # slurmd registers with slurmctld (and retries), so all may start together
  for ((i = 1; i <= n; i++)); do
    name=$(node_name "$i")
    start_in_ns "$name" "$(node_ns "$i")" "$name" "${VAR}/tmp/${name}" slurmd -D -N "$name"
  done

  local deadline=$((SECONDS + UP_TIMEOUT)) states idle
  while :; do
    states=$(node_states)
    idle=$(grep -c ' idle$' <<<"$states" || true)
    ((idle == n)) && break
    if ((SECONDS >= deadline)); then
      report_failure "$n" "nodes not all idle after ${UP_TIMEOUT}s"
      die "up ${n} failed (run \`$0 down\` to clean up; logs in ${LOGDIR})"
    fi
    # fail fast when a daemon died
    if ! alive "$(pid_of ctld || true)"; then report_failure "$n" "slurmctld exited"; die "slurmctld exited (run \`$0 down\` to clean up)"; fi
    for ((i = 1; i <= n; i++)); do
      if ! alive "$(pid_of "$(node_name "$i")" || true)"; then
        report_failure "$n" "slurmd on $(node_name "$i") exited"
        die "slurmd on $(node_name "$i") exited (run \`$0 down\` to clean up; logs in ${LOGDIR})"
      fi
    done
    sleep 0.2
  done
  ssh_start
  log "cluster up: ${n} idle node(s) of Slurm ${SLURM} ($(slurmctld -V)) in $((SECONDS - t0))s"
  timeout 10 sinfo
}

cmd_status() {
  local n
  n=$(recorded_n || true)
  if [[ -z $n ]] || ! alive "$(pid_of ctld || true)"; then
    echo "cluster is down"
    return 3
  fi
  timeout 10 sinfo -N -o '%N %T %c %m %P' || { echo "slurmctld does not answer"; return 4; }
  ssh_status
}

cmd_env() {
  local n c s i nodes=() ips=() ips6=() crash=() scale=() up=0
  n=$(recorded_n || true)
  c=$(recorded_c)
  s=$(recorded_s)
  for ((i = ${n:-0} + 1; i <= ${n:-0} + s; i++)); do scale+=("$(node_name "$i")"); done
  [[ -n $n ]] && alive "$(pid_of ctld || true)" && up=1
  for ((i = 1; i <= ${n:-0}; i++)); do
    if ((i > n - c)); then
      crash+=("$(node_name "$i")")
      continue
    fi
    nodes+=("$(node_name "$i")")
    ips+=("$(node_ip4 "$i")")
    ips6+=("$(node_ip6 "$i")")
  done
  local IFS=,
  cat <<EOF
RAYSLURM_LAB_UP=${up}
RAYSLURM_LAB_VENV=${VENV}
RAYSLURM_LAB_JAX_VENV=${JAX_VENV}
RAYSLURM_LAB_RAY_VERSION=${RAY_VERSION}
RAYSLURM_LAB_SHARED=${SHARED}
RAYSLURM_LAB_PROJECT=${PROJECT}
RAYSLURM_LAB_GROUP=${GROUP}
RAYSLURM_LAB_USERS=${USERS[*]}
RAYSLURM_LAB_PARTITION=${PARTITION}
RAYSLURM_LAB_SLURM_CONF=${SLURM_CONF}
RAYSLURM_LAB_SLURM=${SLURM}
RAYSLURM_LAB_SLURM_BIN=$(slurm_bin_dir)
RAYSLURM_LAB_LOGDIR=${LOGDIR}
RAYSLURM_LAB_NODE_TMP_ROOT=${VAR}/tmp
RAYSLURM_LAB_CTLD=${CTLD_NAME}
RAYSLURM_LAB_CTLD_IP=${CTLD_IP4}
RAYSLURM_LAB_HOST_IP=${HOST_IP4}
RAYSLURM_LAB_HOST_IP6=${HOST_IP6}
RAYSLURM_LAB_NUM_NODES=${#nodes[@]}
RAYSLURM_LAB_NODES=${nodes[*]}
RAYSLURM_LAB_CRASH_PARTITION=${CRASH_PARTITION}
RAYSLURM_LAB_SHARE_PARTITION=${SHARE_PARTITION}
RAYSLURM_LAB_CRASH_NODES=${crash[*]}
RAYSLURM_LAB_SCALE_PARTITION=${SCALE_PARTITION}
RAYSLURM_LAB_SCALE_NODES=${scale[*]}
RAYSLURM_LAB_NODE_IPS=${ips[*]}
RAYSLURM_LAB_NODE_IPS6=${ips6[*]}
EOF
  ssh_env
}

# the node number K of a kill-node/revive-node call, checked against the cluster's size
node_arg() {
  local k=${1:-} n
  n=$(recorded_n || true)
  [[ -n $n ]] || die "the cluster is down"
  n=$((n + $(recorded_s)))
  if ! [[ $k =~ ^[0-9]+$ ]] || ((k < 1 || k > n)); then die "node must be 1..${n}, got '${k}'"; fi
  printf '%s' "$k"
}

cmd_kill_node() {
  local k name pid
  require_root
  k=$(node_arg "$@")
  name=$(node_name "$k")
  pid=$(pid_of "$name" || true)
  alive "$pid" || die "${name} is not running"
  # --kill-child: the namespace's PID 1 dies with unshare, and the kernel ends everything in it
  kill -KILL "$pid"
  for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
  alive "$pid" && die "${name} (pid ${pid}) is still alive"
  rm -f "${RUN}/${name}.pid"
  log "${name} killed"
}

cmd_revive_node() {
  local k name deadline st
  require_root
  k=$(node_arg "$@")
  name=$(node_name "$k")
  alive "$(pid_of "$name" || true)" && die "${name} is running"
  take_lock
  start_in_ns "$name" "$(node_ns "$k")" "$name" "${VAR}/tmp/${name}" slurmd -D -N "$name"
  # Slurm may hold the dead node's last job for a while after slurmd is back (it learns only by
  # asking again that the job is gone), so a revive waits longer than a fresh start.
  deadline=$((SECONDS + (UP_TIMEOUT > 150 ? UP_TIMEOUT : 150)))
  while :; do
    st=$(timeout 10 sinfo -h -n "$name" -o '%T' 2>/dev/null || true)
    [[ $st == idle ]] && break
    ((SECONDS < deadline)) || die "${name} is ${st:-unknown}, not idle, after waiting for it"
    sleep 0.3
  done
  log "${name} revived and idle"
}

usage() {
  sed -n '2,/^# Layout/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

main() {
  local cmd=${1:-} args=()
  [[ $# -gt 0 ]] && shift
  while (($#)); do
    case $1 in
      --slurm) [[ $# -ge 2 ]] || die "--slurm needs a version"; WANT_SLURM=$2; shift 2 ;;
      --slurm=*) WANT_SLURM=${1#--slurm=}; shift ;;
      --scale) [[ $# -ge 2 ]] || die "--scale needs a node count"; WANT_SCALE=$2; shift 2 ;;
      --scale=*) WANT_SCALE=${1#--scale=}; shift ;;
      *) args+=("$1"); shift ;;
    esac
  done
  set -- "${args[@]}"
  # up runs what it is asked for; every other command the Slurm that is running
  if [[ $cmd == up ]]; then use_slurm "${WANT_SLURM:-debian}"; else use_slurm "$(recorded_slurm)"; fi
  case $cmd in
    up) cmd_up "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    env) cmd_env ;;
    kill-node) cmd_kill_node "$@" ;;
    revive-node) cmd_revive_node "$@" ;;
    -h | --help | help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
