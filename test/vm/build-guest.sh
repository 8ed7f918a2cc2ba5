#!/bin/bash
# Builds what the VM suite boots, cached outside the clone (default ~/.cache/hybridpoll-vm):
#   1. a guest root image from Debian packages (debootstrap + apt from the host's mirror), kernel and
#      initrd. Keyed by the package list, the bootstrap init, suite and mirror: rebuilt only when one
#      of them changes (~1.5 min from nothing, seconds when cached).
#   2. a small read-only "project disk" with what the guest runs from this checkout: the exporter
#      (dist/, package.json, production node_modules), the BPF loader, hpdrive and the guest scripts,
#      the simulated poll-queue device module built for the image's kernel (build-hpsim.sh, its
#      own cached chroot), and the host's node binary when the suite's nodejs is too old (bullseye).
#      Keyed by the hash of its content.
# Progress goes to stderr; the last line on stdout is a JSON manifest of the images.
#
#   test/vm/build-guest.sh [trixie|bullseye]     (package list: guest/packages-SUITE.txt)
# Env: HPVM_CACHE (cache dir), MIRROR (default: the host's apt mirror), HPVM_LOADER (BPF loader path),
#      HPVM_LOADER_VARIANTS (a directory of other loader builds, put under bin/variants/ for
#      guest/loader-ab.mjs to compare in one boot).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SUITE=${1:-trixie}
CACHE=${HPVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hybridpoll-vm}
LOADER=${HPVM_LOADER:-$ROOT/build/bpf/hybridpoll-bpf}
PKGS=$HERE/guest/packages-$SUITE.txt
t0=$(date +%s)
log() { printf '[vm-build %s +%ss] %s\n' "$(date +%T)" $(( $(date +%s) - t0 )) "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mkfs.ext4 -d keeps owners)"
[ -f "$PKGS" ] || die "no package list $PKGS"
for c in debootstrap mkfs.ext4 chroot sha256sum gcc make npm; do
  command -v $c >/dev/null || die "missing $c (apt-get install debootstrap e2fsprogs gcc make)"
done

# shellcheck source=host-mirror.sh
. "$HERE/host-mirror.sh"
[ -n "$MIRROR" ] || die "no Debian mirror in the host's apt sources; set MIRROR"

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9 # one build at a time per cache

# ---- 1. root image -------------------------------------------------------------------------------
BOOTSTRAP_INIT=$HERE/guest/lab-init
ROOTKEY=$( (echo "v1 $SUITE $MIRROR"; cat "$PKGS" "$BOOTSTRAP_INIT") | sha256sum | cut -c1-16)
G=$CACHE/$SUITE-$ROOTKEY
R=$G/rootfs
DEBS=$CACHE/debs/$SUITE
mkdir -p "$DEBS"

cleanup_mounts() { umount "$R/proc" 2>/dev/null || true; }
trap cleanup_mounts EXIT
chroot_run() {
  mountpoint -q "$R/proc" || mount -t proc proc "$R/proc"
  chroot "$R" env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

if [ ! -e "$G/root.img" ]; then
  log "root image $SUITE-$ROOTKEY not cached: building from $MIRROR (cache $CACHE)"
  rm -rf "$G"; mkdir -p "$G"
  log "debootstrap --variant=minbase $SUITE (log: $G/debootstrap.log)"
  debootstrap --variant=minbase --cache-dir="$DEBS" --include=kmod,ca-certificates \
    "$SUITE" "$R" "$MIRROR" >"$G/debootstrap.log" 2>&1 || { tail -20 "$G/debootstrap.log" >&2; die "debootstrap failed"; }
  log "debootstrap done"
  rm -f "$R/etc/apt/sources.list"
  cat >"$R/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates$(grep -q '^bpo:' "$PKGS" && echo " $SUITE-backports")
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"; chmod +x "$R/usr/sbin/policy-rc.d"
  # A small initramfs: only what mounts the virtio root disk.
  mkdir -p "$R/etc/initramfs-tools/conf.d"
  # zstd when the package list has it (trixie), gzip otherwise (bullseye's 5.10 kernel).
  printf 'MODULES=list\nCOMPRESS=%s\n' "$(grep -qx -e zstd -e bpo:zstd "$PKGS" && echo zstd || echo gzip)" >"$R/etc/initramfs-tools/conf.d/lab.conf"
  printf 'virtio_pci\nvirtio_blk\next4\ncrc32c_generic\n' >>"$R/etc/initramfs-tools/modules"
  cp -n "$DEBS"/*.deb "$R/var/cache/apt/archives/" 2>/dev/null || true
  bpo=$(sed -n 's/^bpo://p' "$PKGS" | tr '\n' ' ')
  main=$(grep -v -e '^#' -e '^bpo:' -e '^$' "$PKGS" | tr '\n' ' ')
  log "apt-get install (guest): backports: $bpo; $SUITE: $main (log: $G/apt.log)"
  # Release files of a frozen mirror snapshot can look expired to the clock: don't let that fail.
  chroot_run apt-get -o Acquire::Check-Valid-Until=false update >"$G/apt.log" 2>&1 || { tail -20 "$G/apt.log" >&2; die "apt-get update failed"; }
  [ -z "$bpo" ] || chroot_run apt-get install -y --no-install-recommends -t "$SUITE-backports" $bpo >>"$G/apt.log" 2>&1 || { tail -20 "$G/apt.log" >&2; die "apt-get install (backports) failed"; }
  chroot_run apt-get install -y --no-install-recommends $main >>"$G/apt.log" 2>&1 || { tail -20 "$G/apt.log" >&2; die "apt-get install failed"; }
  cleanup_mounts
  mv -f "$R"/var/cache/apt/archives/*.deb "$DEBS/" 2>/dev/null || true
  rm -rf "$R"/var/lib/apt/lists/* "$R"/usr/share/doc/* "$R"/usr/share/man/* "$R"/usr/share/locale/*
  install -D -m755 "$BOOTSTRAP_INIT" "$R/sbin/lab-init"
  mkdir -p "$R/opt/hp"
  kver=$(ls "$R/boot" | sed -n 's/^vmlinuz-//p' | sort -V | tail -1)
  [ -n "$kver" ] || die "no kernel installed in the guest root"
  cp "$R/boot/vmlinuz-$kver" "$G/vmlinuz"
  cp "$R/boot/initrd.img-$kver" "$G/initrd.img"
  echo "$kver" >"$G/kernel-release"
  sz=$(( $(du -sxm "$R" | cut -f1) * 13 / 10 + 200 ))
  log "mkfs.ext4 -d root.img (${sz} MB)"
  mkfs.ext4 -q -F -L hproot -d "$R" "$G/root.img.tmp" "${sz}M" >&2
  mv "$G/root.img.tmp" "$G/root.img"
  rm -rf "$R" # the image is the cache; the tree is not needed again
  log "root image ready: kernel $kver"
  # Drop root images of older keys of this suite (each is ~1 GB).
  for old in "$CACHE/$SUITE"-*; do [ "$old" = "$G" ] || rm -rf "$old"; done
else
  log "root image $SUITE-$ROOTKEY cached (kernel $(cat "$G/kernel-release"))"
fi

# ---- 2. project disk -----------------------------------------------------------------------------
[ -f "$ROOT/dist/cli.js" ] || die "dist/cli.js missing: run npx tsc -p tsconfig.json first"
log "hpdrive (static)"
make -s -C "$ROOT/tools/hpdrive" OUT="$ROOT/build/hpdrive/hpdrive" >&2

STAGE=$(mktemp -d /tmp/hpvm-stage.XXXXXX)
trap 'cleanup_mounts; rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/app" "$STAGE/bin" "$STAGE/guest"
cp -a "$ROOT/dist" "$ROOT/package.json" "$STAGE/app/"
# Production dependencies only, exactly as resolved in this checkout (no network).
(cd "$ROOT" && npm ls --omit=dev --all --parseable 2>/dev/null || true) | while read -r p; do
  [ "$p" = "$ROOT" ] && continue
  rel=${p#"$ROOT"/}
  mkdir -p "$STAGE/app/$rel"
  cp -a "$p/." "$STAGE/app/$rel/" # merge: nested packages are listed again on their own
done
install -m755 "$ROOT/build/hpdrive/hpdrive" "$STAGE/bin/hpdrive"
if [ -x "$LOADER" ]; then install -m755 "$LOADER" "$STAGE/bin/hybridpoll-bpf"; else log "note: no BPF loader at $LOADER (run npm run build:bpf): the guest exporter runs without BPF"; fi
if [ -n "${HPVM_LOADER_VARIANTS:-}" ]; then
  mkdir -p "$STAGE/bin/variants"
  install -m755 "$HPVM_LOADER_VARIANTS"/* "$STAGE/bin/variants/"
  log "loader variants: $(ls "$STAGE/bin/variants" | tr '\n' ' ')"
fi
log "hpsim module for kernel $(cat "$G/kernel-release")"
bash "$HERE/build-hpsim.sh" "$SUITE" "$(cat "$G/kernel-release")" "$STAGE/modules/hpsim.ko" || die "hpsim module build failed"
cp "$HERE"/guest/init.sh "$HERE"/guest/agent.mjs "$HERE"/guest/loader-ab.mjs "$STAGE/guest/"
# A guest whose Debian has no usable nodejs (bullseye: 12; the exporter needs >= 20) runs the
# host's node binary from the project disk (Debian/NodeSource builds need glibc 2.28 and libstdc++6).
if ! grep -qx -e nodejs -e bpo:nodejs "$PKGS"; then
  NODE=$(command -v node); [ -n "$NODE" ] || die "no node on the host to put into the $SUITE guest"
  install -m755 "$(readlink -f "$NODE")" "$STAGE/bin/node"
  log "node $("$NODE" --version) from the host onto the project disk (the $SUITE guest has no nodejs >= 20)"
fi
PKEY=$(cd "$STAGE" && find . -type f -o -type l | LC_ALL=C sort | xargs -d '\n' sha256sum 2>/dev/null | sha256sum | cut -c1-16)
P=$CACHE/project/$PKEY.img
mkdir -p "$CACHE/project"
if [ ! -e "$P" ]; then
  sz=$(( $(du -sxm "$STAGE" | cut -f1) * 13 / 10 + 16 ))
  mkfs.ext4 -q -F -L hpproject -d "$STAGE" "$P.tmp" "${sz}M" >&2
  mv "$P.tmp" "$P"
  log "project disk $PKEY built (${sz} MB)"
  ls -t "$CACHE"/project/*.img | tail -n +4 | xargs -r rm -f # keep the 3 newest
else
  log "project disk $PKEY cached"
fi
touch "$P"
printf '{"suite":"%s","kernel":"%s","initrd":"%s","root":"%s","project":"%s","kernelRelease":"%s","loader":%s,"hpsim":%s,"rootKey":"%s","projectKey":"%s"}\n' \
  "$SUITE" "$G/vmlinuz" "$G/initrd.img" "$G/root.img" "$P" "$(cat "$G/kernel-release")" \
  "$([ -x "$LOADER" ] && echo true || echo false)" "$([ -f "$STAGE/modules/hpsim.ko" ] && echo true || echo false)" "$ROOTKEY" "$PKEY"
