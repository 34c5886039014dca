# shellcheck shell=bash
# The test cluster's login node over SSH, sourced by cluster.sh (which defines VAR, RUN, LOGDIR,
# SHARED, USERS, SLURM_CONF, log, die, slurm_bin_dir): Debian's OpenSSH server, as a site's
# login node runs it, for the tests of `rayslurm --host` from a "laptop"
# (tests/it/harness/laptop.rs). The host is the login node (Slurm's clients, /home, the shared
# directory are there), so the sshd runs in the host's own namespaces, but it is the lab's own:
# its config, host key and authorized keys under ${VAR}/ssh, never /etc/ssh (a system sshd, if
# any, is not touched), listening on 127.0.0.1:2222 alone.
#
#   ssh_start    (at up) make the keys once, write the config, start sshd unless the same is up
#   ssh_stop     (at down) stop it and its connections; unmount the laptops' namespace files
#   ssh_status   one line: where sshd listens, or that it is not running
#   ssh_env      KEY=value lines for `cluster.sh env`

readonly SSH_DIR=${VAR}/ssh
readonly SSH_ADDR=127.0.0.1
readonly SSH_PORT=2222
readonly SSHD=/usr/sbin/sshd                        # absolute: sshd re-executes itself
readonly SSHD_CONF=${SSH_DIR}/sshd_config
readonly SSHD_HOST_KEY=${SSH_DIR}/ssh_host_ed25519_key
readonly SSHD_PID=${RUN}/sshd.pid
readonly SSHD_LOG=${LOGDIR}/sshd.log
# one file a user, root's: sshd reads it, the user cannot change it (the harness adds each
# laptop's own key to rsalice's and takes it away again)
readonly SSH_AUTH_DIR=${SSH_DIR}/authorized_keys
# the tests' client key (root's only), authorized for rsalice
readonly LAPTOP_KEY=${SSH_DIR}/laptop_key
readonly SSHD_PRIVSEP=/run/sshd                     # sshd's privilege separation directory
# the laptops' mount namespace files (a private bind mount), and the directory each laptop
# mounts its own tmpfs at, empty on the host
readonly LAPTOP_NS_DIR=${RUN}/laptop-ns
readonly LAPTOP_ROOT=${SHARED%/*}/laptop

# sshd_pid: the PID of the lab's sshd if it runs (a PID of another program is not it)
sshd_pid() {
  local pid cmd
  [[ -f $SSHD_PID ]] || return 1
  pid=$(cat "$SSHD_PID" 2>/dev/null || true)
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
  [[ $cmd == *sshd* && $cmd == *"$SSHD_CONF"* ]] || return 1
  printf '%s' "$pid"
}

# render_sshd_conf: the config, on stdout. The session's PATH has the Slurm the cluster runs
# first (a vendored release's), SLURM_CONF the lab's: `ssh lab-login squeue` works as a login
# shell's would. MaxSessions 64: one master connection carries every command (ControlMaster).
render_sshd_conf() {
  local bin path=/usr/local/bin:/usr/bin:/bin
  bin=$(slurm_bin_dir)
  [[ -n $bin ]] && path=${bin}:${path}
  cat <<EOF
# written by tests/cluster/cluster.sh (sshd.sh): the test cluster's login node
Port ${SSH_PORT}
ListenAddress ${SSH_ADDR}
HostKey ${SSHD_HOST_KEY}
PidFile ${SSHD_PID}
AuthorizedKeysFile ${SSH_AUTH_DIR}/%u
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
HostbasedAuthentication no
PermitRootLogin no
AllowUsers ${USERS[*]}
UsePAM no
StrictModes yes
LogLevel VERBOSE
MaxStartups 100:30:200
MaxSessions 64
MaxAuthTries 6
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
X11Forwarding no
PrintMotd no
PrintLastLog no
SetEnv PATH=${path} SLURM_CONF=${SLURM_CONF}
Subsystem sftp internal-sftp
EOF
}

# ssh_keys: the host key and the tests' client key, made once and kept across ups
ssh_keys() {
  install -d -m 0755 -o root -g root "$SSH_DIR" "$SSH_AUTH_DIR"
  if [[ ! -s $SSHD_HOST_KEY || ! -s ${SSHD_HOST_KEY}.pub ]]; then
    rm -f "$SSHD_HOST_KEY" "${SSHD_HOST_KEY}.pub"
    ssh-keygen -q -t ed25519 -N '' -C rayslurm-lab-login -f "$SSHD_HOST_KEY"
  fi
  if [[ ! -s $LAPTOP_KEY || ! -s ${LAPTOP_KEY}.pub ]]; then
    rm -f "$LAPTOP_KEY" "${LAPTOP_KEY}.pub"
    ssh-keygen -q -t ed25519 -N '' -C rayslurm-lab-laptop -f "$LAPTOP_KEY"
  fi
  chown root:root "$SSHD_HOST_KEY" "$LAPTOP_KEY" "${SSHD_HOST_KEY}.pub" "${LAPTOP_KEY}.pub"
  chmod 0600 "$SSHD_HOST_KEY" "$LAPTOP_KEY"
  chmod 0644 "${SSHD_HOST_KEY}.pub" "${LAPTOP_KEY}.pub"
}

# ssh_authorize: rsalice's authorized keys, the tests' client key alone (a laptop of a test
# adds its own and takes it away); the other users' files empty. Root's files, 0644.
ssh_authorize() {
  local u f
  for u in "${USERS[@]}"; do
    f=${SSH_AUTH_DIR}/${u}
    if [[ $u == "${USERS[0]}" ]]; then cat "${LAPTOP_KEY}.pub" >"${f}.tmp"; else : >"${f}.tmp"; fi
    chown root:root "${f}.tmp"
    chmod 0644 "${f}.tmp"
    mv -f "${f}.tmp" "$f"
  done
}

# ssh_unlock_users: useradd leaves the password `!` (locked), and sshd without PAM refuses a
# locked account even its keys; `*` is no password either, but not locked.
ssh_unlock_users() {
  local u
  for u in "${USERS[@]}"; do
    if [[ $(getent shadow "$u" | cut -d: -f2) == '!'* ]]; then usermod -p '*' "$u"; fi
  done
}

ssh_start() {
  local pid
  mkdir -p "$RUN" "$LOGDIR"
  ssh_keys
  ssh_unlock_users
  install -d -m 0755 -o root -g root "$LAPTOP_ROOT"
  render_sshd_conf >"${SSHD_CONF}.new"
  if pid=$(sshd_pid) && cmp -s "${SSHD_CONF}.new" "$SSHD_CONF"; then
    rm -f "${SSHD_CONF}.new"
    return 0
  fi
  ssh_stop_sshd
  mv -f "${SSHD_CONF}.new" "$SSHD_CONF"
  ssh_authorize
  if [[ ! -d $SSHD_PRIVSEP ]]; then
    install -d -m 0755 -o root -g root "$SSHD_PRIVSEP"
    echo "$SSHD_PRIVSEP" >"${RUN}/made-sshd-privsep"
  fi
  "$SSHD" -t -f "$SSHD_CONF" || die "sshd refuses its config ${SSHD_CONF}"
  # (no descriptor of whoever started it: a test's lock file, a pipe)
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if ((fd > 2)); then eval "exec ${fd}>&-" 2>/dev/null || true; fi
    done
    exec "$SSHD" -f "$SSHD_CONF" -E "$SSHD_LOG" </dev/null >/dev/null 2>&1
  )
  local deadline=$((SECONDS + 10))
  until sshd_pid >/dev/null && [[ -n $(ss -Hltn "src ${SSH_ADDR}:${SSH_PORT}" 2>/dev/null) ]]; do
    ((SECONDS < deadline)) || { tail -n 15 "$SSHD_LOG" >&2 2>/dev/null; die "sshd does not listen on ${SSH_ADDR}:${SSH_PORT} after 10 s"; }
    sleep 0.1
  done
  log "login node: sshd on ${SSH_ADDR}:${SSH_PORT} (pid $(sshd_pid))"
}

# ssh_stop_sshd: the lab's sshd and the connections it serves (its children), TERM then KILL
ssh_stop_sshd() {
  local pid pids child
  pid=$(sshd_pid) || { rm -f "$SSHD_PID"; return 0; }
  pids=("$pid")
  for child in $(ps -o pid= --ppid "$pid" 2>/dev/null || true); do pids+=("$child"); done
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 30); do sshd_pid >/dev/null || break; sleep 0.1; done
  if sshd_pid >/dev/null; then kill -KILL "${pids[@]}" 2>/dev/null || true; fi
  rm -f "$SSHD_PID"
}

ssh_stop() {
  local f
  ssh_stop_sshd
  # the laptops' namespaces a test left (each laptop unmounts its own when it ends)
  if [[ -d $LAPTOP_NS_DIR ]]; then
    for f in "$LAPTOP_NS_DIR"/*; do
      [[ -e $f ]] && { umount "$f" 2>/dev/null || true; rm -f "$f"; }
    done
    if mountpoint -q "$LAPTOP_NS_DIR"; then umount "$LAPTOP_NS_DIR" || true; fi
  fi
  if [[ -f ${RUN}/made-sshd-privsep ]]; then
    rmdir "$SSHD_PRIVSEP" 2>/dev/null || true
    rm -f "${RUN}/made-sshd-privsep"
  fi
}

ssh_status() {
  local pid
  if pid=$(sshd_pid); then
    echo "login node: sshd on ${SSH_ADDR}:${SSH_PORT} (pid ${pid}, log ${SSHD_LOG})"
  else
    echo "login node: sshd is not running"
  fi
}

ssh_env() {
  local up=0
  sshd_pid >/dev/null && up=1
  cat <<EOF
RAYSLURM_LAB_SSH_UP=${up}
RAYSLURM_LAB_SSH_ADDR=${SSH_ADDR}
RAYSLURM_LAB_SSH_PORT=${SSH_PORT}
RAYSLURM_LAB_SSH_DIR=${SSH_DIR}
RAYSLURM_LAB_SSH_HOST_KEY=${SSHD_HOST_KEY}.pub
RAYSLURM_LAB_SSH_LAPTOP_KEY=${LAPTOP_KEY}
RAYSLURM_LAB_SSHD_LOG=${SSHD_LOG}
RAYSLURM_LAB_LAPTOP_ROOT=${LAPTOP_ROOT}
EOF
}
