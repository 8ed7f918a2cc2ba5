#!/bin/bash
# Builds the count-only floor (floor.bpf.c, loaded by floor.c) against build/bpf's vmlinux.h into
# OUT/floor; with --static linked statically, as the VM lab's guests need it (they carry no libbpf).
# run.mjs and guest.sh build it through here; scripts/build-bpf.sh must have run first.
#   bash bench/bpf-cost/build-floor.sh OUT [--static]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$here/../..
out=${1:?usage: build-floor.sh OUT [--static]}; static=${2:-}
mkdir -p "$out"
clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$root/build/bpf" -c "$here/floor.bpf.c" -o "$out/floor.bpf.o"
bpftool gen object "$out/floor.lo" "$out/floor.bpf.o"
bpftool gen skeleton "$out/floor.lo" name floor > "$out/floor.skel.h"
if [ "$static" = --static ]; then
  cc -static -s -O2 -I"$out" -o "$out/floor" "$here/floor.c" -lbpf -lelf -lz -lzstd
else
  cc -O2 -I"$out" -o "$out/floor" "$here/floor.c" -lbpf -lelf -lz
fi
