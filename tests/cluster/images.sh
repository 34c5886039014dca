#!/usr/bin/env bash
# The test cluster's container runtime and image, for the container tests (tests/it/containers/e2e_charliecloud.rs):
#
#   images.sh up     install Charliecloud (Debian's `charliecloud`, the wrapping runtime: `ch-run IMAGE -- CMD`),
#                    debootstrap and squashfs-tools when missing, and build the image once (and the same
#                    image as SquashFS, `debian12.sqsh`, which pyxis takes: tests/cluster/build-pyxis.sh)
#   images.sh env    KEY=value lines: the image's path, whether it is built
#
# The image is a minimal Debian 12 (debootstrap from Debian's archive, as apt's sources name it) with Debian's
# python3 (the lab's Ray venv is made from the same Python, so the venv mounted at its own path runs inside),
# procps, a marker file /etc/rayslurm-image-marker (what the tests look for to know a program ran inside),
# and empty directories where the tests mount the lab's paths (Charliecloud mounts only at directories an image
# has). It is a directory, shared by every node as the rest of the host's filesystem is. About a minute and
# 250 MB the first time; nothing after. Must run as root.
set -euo pipefail

readonly LAB=rayslurm-lab
readonly IMAGE=/srv/${LAB}/images/debian12
readonly MARKER=/etc/rayslurm-image-marker
readonly MARKER_TEXT="rayslurm-test-image debian12"
# The lab's paths the tests mount into the image: the shared directory (work and state directories), the
# group's project directory, the Ray venv.
readonly MOUNT_POINTS=(/srv/${LAB}/shared /srv/${LAB}/project /opt/${LAB}/venv)
readonly PACKAGES=(charliecloud debootstrap squashfs-tools)
# What Debian's python3 and Ray's wheels need beyond minbase.
readonly INCLUDE=python3,procps,libssl3,libffi8,zlib1g,libbz2-1.0,liblzma5,libsqlite3-0,libreadline8,libncursesw6,libuuid1,libgdbm6

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

ensure_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    die "apt-get failed for: ${missing[*]}"
}

# The Debian archive apt uses (deb.debian.org when its sources say nothing else).
mirror() {
  local uri
  uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
  [[ -n $uri ]] || uri=$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  printf '%s' "${uri:-http://deb.debian.org/debian}"
}

built() { [[ -f $IMAGE$MARKER && $(cat "$IMAGE$MARKER") == "$MARKER_TEXT" ]]; }

build_image() {
  built && return 0
  local tmp=${IMAGE}.tmp t0=$SECONDS
  rm -rf "$tmp" "$IMAGE"
  mkdir -p "$(dirname "$IMAGE")"
  log "building the test image $IMAGE (debootstrap bookworm from $(mirror))"
  debootstrap --variant=minbase --include="$INCLUDE" bookworm "$tmp" "$(mirror)" >"${tmp}.log" 2>&1 ||
    die "debootstrap failed; see ${tmp}.log"
  local d
  for d in "${MOUNT_POINTS[@]}"; do mkdir -p "$tmp$d"; done
  printf '%s\n' "$MARKER_TEXT" >"$tmp$MARKER"
  rm -f "${tmp}.log"
  mv "$tmp" "$IMAGE"
  rm -f "${IMAGE}.sqsh" "${IMAGE}.sqsh.version"
  log "test image built in $((SECONDS - t0)) s"
}

# The SquashFS image has an empty /dev, as images from a registry do (enroot mounts the node's
# devices): debootstrap's device nodes cannot be unpacked by a user who is not root. Its version
# (SQSH_VERSION, in a file beside it) makes an older one be made again.
readonly SQSH_VERSION=2
build_squashfs() {
  [[ -f ${IMAGE}.sqsh && $(cat "${IMAGE}.sqsh.version" 2>/dev/null) == "$SQSH_VERSION" ]] && return 0
  mksquashfs "$IMAGE" "${IMAGE}.sqsh.tmp" -noappend -quiet -comp lzo -wildcards -e 'dev/*' >/dev/null ||
    die "mksquashfs failed"
  mv "${IMAGE}.sqsh.tmp" "${IMAGE}.sqsh"
  printf '%s\n' "$SQSH_VERSION" >"${IMAGE}.sqsh.version"
}

cmd_up() {
  [[ $(id -u) -eq 0 ]] || die "must run as root"
  ensure_packages
  build_image
  build_squashfs
}

cmd_env() {
  printf 'RAYSLURM_LAB_IMAGE=%s\nRAYSLURM_LAB_IMAGE_BUILT=%s\nRAYSLURM_LAB_IMAGE_MARKER=%s\n' \
    "$IMAGE" "$(built && echo 1 || echo 0)" "$MARKER_TEXT"
}

case ${1:-} in
  up) cmd_up ;;
  env) cmd_env ;;
  *) die "usage: images.sh up|env" ;;
esac
