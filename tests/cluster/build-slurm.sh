#!/usr/bin/env bash
# Builds one of the vendored Slurm releases (../shared/vendor/slurm-X-Y-Z-1.tar.gz, SchedMD's
# release tags) into its own prefix, /opt/slurm-X.Y, for the test cluster to run
# (`cluster.sh up N C --slurm X.Y`). Only Debian packages are build dependencies. Once per
# machine: a prefix whose stamp names the same tarball is kept.
#
#   build-slurm.sh 25.11        build (or keep) /opt/slurm-25.11; prints the prefix
#   build-slurm.sh --list       the versions the vendor folder holds
#
# RAYSLURM_VENDOR names the vendor folder (default: ../shared/vendor beside the checkout).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vendor=${RAYSLURM_VENDOR:-$(cd "$here/../../.." && pwd)/shared/vendor}
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

tarball_of() { # 25.11 -> the newest slurm-25-11-*.tar.gz
  local v=$1
  ls "$vendor"/slurm-"${v//./-}"-*.tar.gz 2>/dev/null | sort -V | tail -n1
}

if [[ ${1:-} == --list ]]; then
  for t in "$vendor"/slurm-*.tar.gz; do
    [[ -e $t ]] || continue
    b=${t##*/slurm-}; IFS=- read -r major minor _ <<<"$b"; echo "$major.$minor"
  done | sort -uV
  exit 0
fi
version=${1:?usage: build-slurm.sh VERSION (e.g. 25.11), or --list}
[[ $version =~ ^[0-9]+\.[0-9]+$ ]] || die "version \`$version\` is not MAJOR.MINOR (e.g. 25.11)"
tarball=$(tarball_of "$version")
[[ -n $tarball ]] || die "no vendored source for Slurm $version in $vendor (have: $("$0" --list | tr '\n' ' '))"
prefix=/opt/slurm-$version
stamp=$prefix/.rayslurm-built-from
# What the stamp says: the tarball, and that the build has accounting (slurmdbd with MariaDB).
built="${tarball##*/} with accounting_storage/mysql"
if [[ -x $prefix/sbin/slurmctld && -f $stamp && $(cat "$stamp") == "$built" ]]; then
  log "Slurm $version already built in $prefix"
  echo "$prefix"
  exit 0
fi
[[ $(id -u) -eq 0 ]] || die "must run as root (installs Debian packages, writes $prefix)"

deps=(build-essential libmunge-dev pkg-config python3 libjson-c-dev libmariadb-dev)
missing=()
for p in "${deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing build dependencies: ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

work=$(mktemp -d /var/tmp/slurm-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
log "building Slurm $version from ${tarball##*/} into $prefix (several minutes)"
tar -xzf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n1)
cd "$src"
t0=$SECONDS
./configure --prefix="$prefix" --sysconfdir="/etc/slurm-$version" --disable-debug >"$work/configure.log" 2>&1 \
  || { tail -n 30 "$work/configure.log" >&2; die "configure failed for Slurm $version"; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -n 40 "$work/make.log" >&2; die "make failed for Slurm $version"; }
# Installed into a staging tree, then moved into place: a failed build leaves the old prefix whole.
make install DESTDIR="$work/stage" >"$work/install.log" 2>&1 || { tail -n 30 "$work/install.log" >&2; die "make install failed for Slurm $version"; }
[[ -e $work/stage$prefix/lib/slurm/accounting_storage_mysql.so ]] \
  || { grep -i mysql "$work/configure.log" >&2; die "Slurm $version was built without accounting_storage/mysql (is libmariadb-dev installed?)"; }
rm -rf "$prefix"
mv "$work/stage$prefix" "$prefix"
echo "$built" >"$stamp"
log "Slurm $version built in $((SECONDS - t0)) s: $prefix"
echo "$prefix"
