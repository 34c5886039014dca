#!/usr/bin/env bash
# Builds enroot and pyxis (Slurm's container plugin) from the vendored release tarballs in
# ../shared/vendor (see its README) and installs them: enroot under /usr/local, pyxis's
# spank_pyxis.so under /usr/local/lib/slurm-pyxis, with a plugstack.conf beside it that
# cluster.sh loads (Debian's Slurm only: the plugin is built against Debian's libslurm-dev; a
# cluster that runs without it is restarted with it). enroot's runtime, cache and data paths are
# set to each node's own /tmp, one directory per user (the test nodes share /root and /run).
# Idempotent: a built release is kept. Must run as root.
#
#   build-pyxis.sh              RAYSLURM_VENDOR names the vendor folder (default: ../shared/vendor
#                               beside the checkout, as for build-slurm.sh)
#
# How they build on Debian 12 (the vendor README's recipe): enroot's git submodules are not in
# its tarball, so with FORCE_GLIBC=1 (no musl) Debian's makeself stands in for its makeself, a
# Makefile that only makes the include directory for its Linux headers (glibc's are used), and
# Debian's libbsd (glibc 2.36 has no strlcpy) linked by path; pyxis needs Slurm's spank.h, from
# Debian's libslurm-dev, so it is built for Debian's Slurm.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENDOR=${RAYSLURM_VENDOR:-$(cd .. && pwd)/shared/vendor}
readonly VENDOR
readonly ENROOT=4.1.2
readonly PYXIS=0.24.0
readonly BUILD=/var/tmp/rayslurm-pyxis-build
readonly PYXIS_DIR=/usr/local/lib/slurm-pyxis
readonly PACKAGES=(build-essential libbsd-dev makeself libslurm-dev jq parallel squashfs-tools zstd pigz)

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root"
for t in "enroot-${ENROOT}.tar.gz" "pyxis-${PYXIS}.tar.gz"; do
  [[ -f $VENDOR/$t ]] || die "$VENDOR/$t is missing"
done

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    die "apt-get failed for: ${missing[*]}"
fi

build_enroot() {
  if [[ -x /usr/local/bin/enroot ]] && /usr/local/bin/enroot version 2>/dev/null | grep -qx "$ENROOT"; then
    return 0
  fi
  local src=$BUILD/enroot-$ENROOT t0=$SECONDS
  rm -rf "$src" && mkdir -p "$BUILD"
  tar -xzf "$VENDOR/enroot-${ENROOT}.tar.gz" -C "$BUILD"
  mkdir -p "$src/deps/makeself" "$src/deps/linux-headers"
  cp /usr/bin/makeself "$src/deps/makeself/makeself.sh"
  printf 'install:\n\tmkdir -p $(prefix)/include\n' >"$src/deps/linux-headers/Makefile"
  sed -i 's|^LDLIBS   := -l:libbsd.a$|LDLIBS   := -l:libbsd.a /usr/lib/x86_64-linux-gnu/libbsd.so|' "$src/Makefile"
  grep -q 'libbsd.so' "$src/Makefile" || die "enroot's Makefile has no LDLIBS line to link libbsd"
  log "building enroot $ENROOT"
  make -C "$src" FORCE_GLIBC=1 >"$BUILD/enroot.log" 2>&1 || die "enroot's build failed; see $BUILD/enroot.log"
  make -C "$src" FORCE_GLIBC=1 install prefix=/usr/local >>"$BUILD/enroot.log" 2>&1 ||
    die "enroot's install failed; see $BUILD/enroot.log"
  log "enroot $ENROOT built in $((SECONDS - t0)) s"
}

build_pyxis() {
  [[ -f $PYXIS_DIR/spank_pyxis.so && -f $PYXIS_DIR/VERSION && $(cat "$PYXIS_DIR/VERSION") == "$PYXIS" ]] && return 0
  local src=$BUILD/pyxis-$PYXIS t0=$SECONDS
  rm -rf "$src" && mkdir -p "$BUILD"
  tar -xzf "$VENDOR/pyxis-${PYXIS}.tar.gz" -C "$BUILD"
  log "building pyxis $PYXIS"
  make -C "$src" >"$BUILD/pyxis.log" 2>&1 || die "pyxis's build failed; see $BUILD/pyxis.log"
  install -D -m 755 "$src/spank_pyxis.so" "$PYXIS_DIR/spank_pyxis.so"
  printf '%s\n' "$PYXIS" >"$PYXIS_DIR/VERSION"
  log "pyxis $PYXIS built in $((SECONDS - t0)) s: $PYXIS_DIR/spank_pyxis.so"
}

# enroot's paths in each node's own /tmp (cluster.sh makes /tmp/enroot there, mode 1777), one
# directory per user: enroot makes its directories 0700, so a shared parent of its own would
# keep every other user out. Rewritten when this block changes.
configure_enroot() {
  local conf=/usr/local/etc/enroot/enroot.conf
  grep -q '^# rayslurm test cluster v2' "$conf" && return 0
  sed -i '/^# rayslurm test cluster/,$d' "$conf"
  cat >>"$conf" <<'CONF'
# rayslurm test cluster v2: every node's own /tmp (the nodes share /root and /run)
ENROOT_RUNTIME_PATH /tmp/enroot/user-$(id -u)/runtime
ENROOT_CACHE_PATH /tmp/enroot/user-$(id -u)/cache
ENROOT_DATA_PATH /tmp/enroot/user-$(id -u)/data
CONF
}

build_enroot
configure_enroot
build_pyxis
# cluster.sh loads the plugstack file beside the plugin (Debian's Slurm only), restarting a
# cluster that runs without it. An earlier version's line in Debian's plugstack.conf.d goes.
printf 'required %s/spank_pyxis.so\n' "$PYXIS_DIR" >"$PYXIS_DIR/plugstack.conf"
rm -f /etc/slurm/plugstack.conf.d/pyxis.conf
