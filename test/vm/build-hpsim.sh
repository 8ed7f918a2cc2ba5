#!/bin/bash
# Builds the simulated poll-queue block device (tools/hpsim) for one guest kernel, with that suite's
# own gcc and kernel headers, in a build chroot cached outside the clone:
#   $CACHE/hpsim-chroot/SUITE-KEY   debootstrap minbase + gcc make libc6-dev linux-headers-RELEASE
#                                   (trixie's 7.x headers come from trixie-backports); keyed by
#                                   suite, mirror and kernel release
#   $CACHE/hpsim-ko/SUITE-RELEASE-SRCKEY.ko   the built module; keyed by the module source too
# so the chroot is rebuilt only when the kernel changes and the module only when either changes.
# Progress goes to stderr.
#
#   test/vm/build-hpsim.sh SUITE KERNEL_RELEASE OUT.ko
# Env: HPVM_CACHE (cache dir), MIRROR (default: the host's apt mirror).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ $# = 3 ] || { echo "usage: $0 SUITE KERNEL_RELEASE OUT.ko" >&2; exit 2; }
SUITE=$1 REL=$2 OUT=$3
SRC=$ROOT/tools/hpsim
CACHE=${HPVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hybridpoll-vm}
t0=$(date +%s)
log() { printf '[hpsim-build %s +%ss] %s\n' "$(date +%T)" $(( $(date +%s) - t0 )) "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || die "missing debootstrap (apt-get install debootstrap)"
# shellcheck source=host-mirror.sh
. "$HERE/host-mirror.sh"
[ -n "$MIRROR" ] || die "no Debian mirror in the host's apt sources; set MIRROR"

mkdir -p "$CACHE"
# Not build-guest.sh's lock: it holds that one while it calls this script.
exec 8>"$CACHE/.hpsim-lock"
flock 8

CKEY=$(echo "v1 $SUITE $MIRROR $REL" | sha256sum | cut -c1-16)
C=$CACHE/hpsim-chroot/$SUITE-$CKEY
SKEY=$( (echo "$CKEY"; cat "$0"; cd "$SRC" && cat hpsim.c Kbuild Makefile) | sha256sum | cut -c1-16)
KO=$CACHE/hpsim-ko/$SUITE-$REL-$SKEY.ko
if [ -f "$KO" ]; then
  install -D -m644 "$KO" "$OUT"
  log "hpsim.ko for $REL cached ($SKEY)"
  exit 0
fi

R=$C/root
cleanup() { umount "$R/proc" 2>/dev/null || true; }
trap cleanup EXIT
chroot_run() {
  mountpoint -q "$R/proc" || mount -t proc proc "$R/proc"
  chroot "$R" env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

if [ ! -e "$C/ready" ]; then
  log "build chroot $SUITE-$CKEY not cached: debootstrap --variant=minbase $SUITE from $MIRROR (log: $C/build.log)"
  rm -rf "$C"; mkdir -p "$C"
  DEBS=$CACHE/debs/$SUITE
  mkdir -p "$DEBS"
  debootstrap --variant=minbase --cache-dir="$DEBS" "$SUITE" "$R" "$MIRROR" >"$C/build.log" 2>&1 || { tail -20 "$C/build.log" >&2; die "debootstrap failed"; }
  # Headers of a backports kernel (trixie's 7.x) are in SUITE-backports; bullseye's are in main.
  bpo=; [ "$SUITE" = bullseye ] || bpo=" $SUITE-backports"
  rm -f "$R/etc/apt/sources.list"
  printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates%s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$MIRROR" "$SUITE" "$SUITE" "$bpo" >"$R/etc/apt/sources.list.d/debian.sources"
  cp -n "$DEBS"/*.deb "$R/var/cache/apt/archives/" 2>/dev/null || true
  log "apt-get install gcc make libc6-dev linux-headers-$REL"
  chroot_run apt-get -o Acquire::Check-Valid-Until=false update >>"$C/build.log" 2>&1 || { tail -20 "$C/build.log" >&2; die "apt-get update failed"; }
  chroot_run apt-get install -y --no-install-recommends gcc make libc6-dev "linux-headers-$REL" >>"$C/build.log" 2>&1 \
    || { tail -20 "$C/build.log" >&2; die "apt-get install failed (does $MIRROR have linux-headers-$REL?)"; }
  mv -f "$R"/var/cache/apt/archives/*.deb "$DEBS/" 2>/dev/null || true
  rm -rf "$R"/var/lib/apt/lists/* "$R"/usr/share/doc/* "$R"/usr/share/man/*
  touch "$C/ready"
  log "build chroot ready: $(chroot_run gcc --version | head -1)"
  # Chroots of other keys of this suite belong to older kernels.
  for old in "$CACHE/hpsim-chroot/$SUITE"-*; do [ "$old" = "$C" ] || rm -rf "$old"; done
else
  log "build chroot $SUITE-$CKEY cached"
fi

rm -rf "$R/build"; mkdir -p "$R/build/hpsim"
cp "$SRC/hpsim.c" "$SRC/Kbuild" "$SRC/Makefile" "$R/build/hpsim/"
log "make hpsim.ko against /usr/src/linux-headers-$REL"
chroot_run make -C /build/hpsim KDIR="/usr/src/linux-headers-$REL" >"$C/make.log" 2>&1 || { cat "$C/make.log" >&2; die "module build failed"; }
chroot_run strip --strip-debug /build/hpsim/hpsim.ko # Debian headers build with debug info: 0.5 MB per module
# The house rule is no warnings: a warning fails the build as an error would.
if grep -q -i 'warning:' "$C/make.log"; then cat "$C/make.log" >&2; die "module build warned"; fi
mkdir -p "$CACHE/hpsim-ko"
install -m644 "$R/build/hpsim/hpsim.ko" "$KO.tmp" && mv "$KO.tmp" "$KO"
# Keep the modules of the current source only, per suite and kernel.
for old in "$CACHE/hpsim-ko/$SUITE-$REL"-*.ko; do [ "$old" = "$KO" ] || rm -f "$old"; done
install -D -m644 "$KO" "$OUT"
log "hpsim.ko for $REL built ($SKEY, $(stat -c %s "$KO") bytes)"
