#!/usr/bin/env bash
# A Debian bookworm root file system from Debian packages (debootstrap --variant=minbase), as a
# tarball cached by key: the mirror, the extra packages and this script. Prints the tarball's path.
# Used for the container's local base images (scripts/container-build.sh) and the fresh host of the
# release test (test/release). Needs root (debootstrap).
#   bash scripts/debian-root.sh CACHE_DIR [PACKAGE,...]
#   MIRROR=url   Debian mirror (default: the one this host's apt uses)
set -euo pipefail
cache=${1:?usage: debian-root.sh CACHE_DIR [PACKAGE,...]}
include=${2:-}
say() { printf 'debian-root: %s\n' "$*" >&2; }
die() { printf 'debian-root: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap)"
command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"

# The Debian mirror this host's apt already uses (deb822 or one-line sources; not -security).
host_mirror() {
  awk '/^URIs:/{u=$2} /^Suites:/{if ($0 !~ /security/ && u ~ /debian/) {print u; exit}}' \
    /etc/apt/sources.list.d/*.sources 2>/dev/null || true
  awk '$1=="deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true
}
mirror=${MIRROR:-$(host_mirror | head -1)}
[ -n "$mirror" ] || die "no Debian mirror in the host's apt sources; set MIRROR"

key=$( (echo "v1 bookworm $mirror $include"; cat "$0") | sha256sum | cut -c1-16)
out="$cache/bookworm-minbase-$key.tar"
mkdir -p "$cache"
exec 9>"$cache/.debian-root.lock"
flock 9 # one debootstrap at a time per cache
if [ -s "$out" ]; then
  say "cached: $out"
  echo "$out"
  exit 0
fi

work=$(mktemp -d "$cache/root.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache/debs"
say "debootstrap --variant=minbase bookworm ${include:+(+$include) }from $mirror (log: $work/debootstrap.log)"
debootstrap --variant=minbase --cache-dir="$cache/debs" ${include:+--include="$include"} \
  bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
# Like the Debian images: apt sources of the same mirror, no package lists or .debs kept.
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" >"$work/root/etc/apt/sources.list"
rm -rf "$work/root/var/lib/apt/lists/"* "$work/root/var/cache/apt/archives/"*.deb
tar -C "$work/root" --numeric-owner -cf "$out.part" .
mv "$out.part" "$out"
say "built: $out ($(du -m "$out" | cut -f1) MiB)"
echo "$out"
