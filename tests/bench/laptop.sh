#!/usr/bin/env bash
# From a laptop against on the login node, side by side in one run: `status`, `launch
# --dry-run` and `exec` of a short job on a 1-node cluster, REPEAT times each (default 5),
# alternating. The laptop side is `rayslurm --host lab-login ...` through the lab's OpenSSH
# login node (127.0.0.1:2222) as rsalice, with the lab's test key; the login-node side is the
# same command run as rsalice on the login node itself (runuser). The first command from the
# laptop (opening the connection and copying rayslurm over) is timed apart.
#
#   bash tests/bench/laptop.sh [REPEAT]
#
# The test cluster must be up (with its sshd); the release build is used.
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-5}
eval "$(bash tests/cluster/cluster.sh env | grep -E '^RAYSLURM_LAB_(UP|VENV)=')"
[[ ${RAYSLURM_LAB_UP:-0} == 1 ]] || { echo "the test cluster is down: bash tests/cluster/cluster.sh up" >&2; exit 1; }
keys=/var/lib/rayslurm-lab/ssh
[[ -r $keys/laptop_key ]] || { echo "no lab sshd key ($keys/laptop_key): bash tests/cluster/cluster.sh up" >&2; exit 1; }
cargo build --release --quiet
bin=$PWD/target/release/rayslurm

laptop=$(mktemp -d /tmp/rayslurm-bench-laptop.XXXXXX)
trap 'ssh_stop; rm -rf "$laptop"' EXIT
install -m 600 "$keys/laptop_key" "$laptop/key"
echo "[127.0.0.1]:2222 $(cut -d' ' -f1,2 "$keys/ssh_host_ed25519_key.pub")" > "$laptop/known_hosts"
cat > "$laptop/config" <<EOF
Host lab-login
  HostName 127.0.0.1
  Port 2222
  User rsalice
  IdentityFile $laptop/key
  IdentitiesOnly yes
  UserKnownHostsFile $laptop/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
EOF
mkdir -p "$laptop/bin" "$laptop/state" && chmod 700 "$laptop/state"
printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$laptop/config" > "$laptop/bin/ssh"
chmod +x "$laptop/bin/ssh"
ssh_stop() { PATH=$laptop/bin:$PATH RAYSLURM_STATE_DIR=$laptop/state "$bin" --host lab-login disconnect >/dev/null 2>&1 || true; }

on_laptop() { (cd "$laptop" && PATH=$laptop/bin:$PATH RAYSLURM_STATE_DIR=$laptop/state RAYSLURM_CONFIG=/dev/null "$bin" --host lab-login "$@"); }
on_login() { runuser -u rsalice -- env -C /home/rsalice RAYSLURM_CONFIG=/dev/null "$bin" "$@"; }
seconds() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN {print e - s}'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

first=$(seconds on_laptop status)
echo "first command from the laptop (connection, rayslurm copied over, status): ${first} s"
name=benchlaptop$(date +%s)
load="source $RAYSLURM_LAB_VENV/bin/activate"
on_login up "$name" -N 1 --load-env "$load" --object-store-memory 100000000 --time 20 >/dev/null 2>&1
trap 'on_login down "$name" >/dev/null 2>&1 || true; ssh_stop; rm -rf "$laptop"' EXIT
declare -A times
for ((r = 1; r <= repeat; r++)); do
  times[status_laptop]+="$(seconds on_laptop status)"$'\n'
  times[status_login]+="$(seconds on_login status)"$'\n'
  dry=(launch --exp-name benchdry --no-ray --command true --dry-run)
  times[dry_laptop]+="$(seconds on_laptop "${dry[@]}")"$'\n'
  times[dry_login]+="$(seconds on_login "${dry[@]}")"$'\n'
  times[exec_laptop]+="$(seconds on_laptop exec "$name" -- true)"$'\n'
  times[exec_login]+="$(seconds on_login exec "$name" -- true)"$'\n'
done
for what in status dry exec; do
  l=$(printf '%s' "${times[${what}_laptop]}" | median)
  h=$(printf '%s' "${times[${what}_login]}" | median)
  printf '%-8s laptop %.3f s   login node %.3f s   laptop/login %.2f\n' "$what" "$l" "$h" "$(awk -v l="$l" -v h="$h" 'BEGIN {print l / h}')"
done
