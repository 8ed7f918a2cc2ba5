# Sourced by build-guest.sh and build-hpsim.sh: the Debian mirror this host's apt already uses
# (deb822 or one-line sources; not -security). MIRROR in the environment wins.
host_mirror() {
  awk '/^URIs:/{u=$2} /^Suites:/{if ($0 !~ /security/ && u ~ /debian/) {print u; exit}}' \
    /etc/apt/sources.list.d/*.sources 2>/dev/null || true
  awk '$1=="deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true
}
MIRROR=${MIRROR:-$(host_mirror | head -1)}
